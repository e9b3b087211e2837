package jsonrpc_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"agentmail/jsonrpc"
)

func pingHandler(ctx context.Context, req *jsonrpc.Request) (any, error) { return nil, nil }

// BenchmarkServePing measures a ping through a Conn on a LineStream:
// "stream" is the cost per request when requests arrive back to back (CPU
// per request), and "roundtrip" the latency of one request answered
// before the next is sent.
func BenchmarkServePing(b *testing.B) {
	b.Run("stream", func(b *testing.B) {
		var in bytes.Buffer
		for i := range b.N {
			in.WriteString(`{"jsonrpc":"2.0","id":`)
			in.WriteString(strconv.Itoa(i))
			in.WriteString(`,"method":"ping"}` + "\n")
		}
		var out countWriter
		conn := jsonrpc.NewConn(jsonrpc.NewLineStream(&in, &out), pingHandler, jsonrpc.Options{})
		b.ReportAllocs()
		b.ResetTimer()
		if err := conn.Serve(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if out.n != b.N {
			b.Fatalf("%d answers for %d requests", out.n, b.N)
		}
	})

	b.Run("roundtrip", func(b *testing.B) {
		pr, pw := io.Pipe()
		out := &signalWriter{c: make(chan struct{}, 1)}
		conn := jsonrpc.NewConn(jsonrpc.NewLineStream(pr, out), pingHandler, jsonrpc.Options{})
		done := make(chan error, 1)
		go func() { done <- conn.Serve(context.Background()) }()
		req := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := pw.Write(req); err != nil {
				b.Fatal(err)
			}
			<-out.c
		}
		b.StopTimer()
		pw.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})
}

// countWriter counts Write calls; the Conn never calls it from two
// goroutines at once.
type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) { w.n++; return len(p), nil }

// signalWriter signals on c after every Write.
type signalWriter struct{ c chan struct{} }

func (w *signalWriter) Write(p []byte) (int, error) { w.c <- struct{}{}; return len(p), nil }
