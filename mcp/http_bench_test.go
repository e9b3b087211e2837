package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tools"
)

// BenchmarkHTTPToolCall measures a tool call over Streamable HTTP on
// loopback, one at a time from one client with a kept-alive connection:
// the cost of the transport on top of the MCP layer, without tmux. It
// reports the median and the 99th percentile besides the mean.
func BenchmarkHTTPToolCall(b *testing.B) {
	svc := &tools.Service{Store: mailbox.New(b.TempDir()), Term: newFakeTerm("alice", "alice", "bob")}
	h := mcp.NewHTTPHandler(mcp.HTTPOptions{Host: "127.0.0.1", Token: "bench",
		Resolve: func(context.Context, mcp.Identity) (*tools.Service, error) { return svc, nil }})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Stop()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list-recipients","arguments":{},` + modernMeta + `}}`
	client := srv.Client()
	// The standard headers are the message's, worked out once as a
	// client that builds its messages would know them.
	std := http.Header{}
	standardHeaders(std, body)
	call := func() {
		r, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer bench")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Agentmail-Pane", "%0")
		for k, v := range std {
			r.Header[k] = v
		}
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(out), `"isError":true`) {
			b.Fatalf("status %d: %s", resp.StatusCode, out)
		}
	}
	call() // opens the connection
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		call()
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}
