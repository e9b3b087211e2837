package jsonrpc_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"agentmail/jsonrpc"
)

// After Respond fails with a write error, the call stays owed.
func TestRespondAfterWriteError(t *testing.T) {
	var l logs
	w := &failingWriter{}
	responded := make(chan error, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "ping" {
			return nil, nil
		}
		go func() { responded <- conn.Respond(req, nil, nil) }()
		return nil, jsonrpc.ErrAsync
	}
	before := runtime.NumGoroutine()
	conn = jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(ping+"\n"+call("2", "x")), w), h, jsonrpc.Options{Logf: l.Logf})
	t0 := time.Now()
	err := conn.Serve(context.Background())
	t.Logf("Serve = %v after %v; Respond = %v; logs %q", err, time.Since(t0), <-responded, l.all())
	time.Sleep(100 * time.Millisecond)
	t.Logf("goroutines before %d after %d", before, runtime.NumGoroutine())
}

// A Respond after the grace ran out.
func TestRespondAfterServe(t *testing.T) {
	var l logs
	var out recorder
	responded := make(chan error, 1)
	late := make(chan struct{})
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		go func() { <-late; responded <- conn.Respond(req, nil, nil) }()
		return nil, jsonrpc.ErrAsync
	}
	before := runtime.NumGoroutine()
	conn = jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(call("1", "x")), &out), h, jsonrpc.Options{Logf: l.Logf})
	t0 := time.Now()
	err := conn.Serve(context.Background())
	close(late)
	t.Logf("Serve = %v after %v; Respond = %v; logs %q", err, time.Since(t0), <-responded, l.all())
	time.Sleep(100 * time.Millisecond)
	t.Logf("goroutines before %d after %d", before, runtime.NumGoroutine())
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "finishWork") {
			t.Logf("%s", g)
		}
	}
}

// Respond by a batch element that returned ErrAsync, before the array is out.
func TestRespondAnsweredInBatch(t *testing.T) {
	s := newSlow()
	responded := make(chan error, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "wait" {
			go func() { <-s.started; responded <- conn.Respond(req, nil, nil) }()
			return nil, jsonrpc.ErrAsync
		}
		s.started <- "x"
		<-s.release
		return nil, nil
	}
	p := startPipe(t, context.Background(), h, jsonrpc.Options{Batch: func() bool { return true }})
	conn = p.conn
	p.send(`[` + call("1", "wait") + `,` + call("2", "slow") + `]`)
	err := <-responded
	t.Logf("Respond = %v; is ErrCancelled %v", err, errors.Is(err, jsonrpc.ErrCancelled))
	close(s.release)
	t.Logf("%q", p.finish())
}

// A call cancelled while it waits frees its id for a new request; the
// cancelled call's late Respond must not answer the new one.
func TestRespondAfterIDReused(t *testing.T) {
	pre := newPreempter()
	waiting := make(chan *jsonrpc.Request, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "wait" {
			waiting <- req
			return nil, jsonrpc.ErrAsync
		}
		return map[string]string{"from": "new"}, nil
	}
	p := startPipe(t, context.Background(), pre.wrap(h), jsonrpc.Options{})
	pre.conn, conn = p.conn, p.conn
	p.send(call("1", "wait"))
	old := recv(t, waiting, "the waiting call")
	p.send(cancelLine("1"))
	if !recv(t, pre.found, "the cancel") {
		t.Fatal("the cancel did not find the waiting call")
	}
	p.send(call("1", "again"), markLine)
	recv(t, pre.marks, "the new call read")
	if err := conn.Respond(old, map[string]string{"from": "old"}, nil); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("the cancelled call's Respond = %v, want ErrCancelled", err)
	}
	lines := p.finish()
	if len(lines) != 1 || !strings.Contains(lines[0], `"from":"new"`) {
		t.Errorf("answers %q, want the new call's only", lines)
	}
}
