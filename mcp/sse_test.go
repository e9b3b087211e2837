package mcp_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"agentmail/mcp"
	"agentmail/tools"
)

// The HTTP+SSE transport: the stream names the POST endpoint, every POST
// is accepted with 202, and the answers come on the stream, in order; a
// receive marks its message read once its answer is on the stream.
func TestSSETransport(t *testing.T) {
	svc, store := mailForAlice(t)
	h := mcp.NewHTTPHandler(mcp.HTTPOptions{Host: "127.0.0.1", SSE: true,
		Resolve: func(context.Context, mcp.Identity) (*tools.Service, error) { return svc, nil }})
	mux := http.NewServeMux()
	mux.Handle("/", h.SSEHandler("/sse"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer h.Stop()

	req, _ := http.NewRequest("GET", srv.URL+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Agentmail-Pane", "%0")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stream.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5s")
			return ""
		}
	}
	endpoint := next()
	if !strings.HasPrefix(endpoint, "/sse/messages?sessionId=") {
		t.Fatalf("endpoint event %q", endpoint)
	}
	post := func(body string) {
		t.Helper()
		resp, err := http.Post(srv.URL+endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s: status %d, want 202", body, resp.StatusCode)
		}
	}
	post(initLine)
	if e := next(); !strings.HasPrefix(e, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"`) {
		t.Errorf("initialize answer %q", e)
	}
	post("{\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/initialized\"}")
	post(receiveLine)
	if e := next(); !strings.Contains(e, `"id":1,"result":{"content":[{"type":"text","text":"From: bob`) {
		t.Errorf("receive answer %q", e)
	}
	if n := unread(t, store); n != 0 {
		t.Errorf("%d unread after the receive, want 0", n)
	}
	resp, err := http.Post(srv.URL+"/sse/messages?sessionId=nope", "application/json", strings.NewReader(receiveLine))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST to an unknown session: status %d, want 404", resp.StatusCode)
	}
}
