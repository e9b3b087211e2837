package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"agentmail/mcp"
	"agentmail/tools"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// flushRecorder is a ResponseWriter whose flushes are checked: flush is
// called with what has been written so far, and its error is the flush's.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flush func(body string) error
}

func (f *flushRecorder) FlushError() error { return f.flush(f.Body.String()) }

// post serves one POST of body through h on w, naming alice by pane.
func post(h http.Handler, w http.ResponseWriter, body string) {
	r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(body))
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Agentmail-Pane", "%0")
	h.ServeHTTP(w, r)
}

func aliceHandler(svc *tools.Service) *mcp.HTTPHandler {
	return mcp.NewHTTPHandler(mcp.HTTPOptions{
		Version: "test",
		Host:    "127.0.0.1",
		Resolve: func(ctx context.Context, id mcp.Identity) (*tools.Service, error) {
			if id.Pane != "%0" {
				return nil, errors.New("unknown pane")
			}
			return svc, nil
		},
	})
}

// A receive over HTTP is flushed to the client while its message is still
// unread, and marks it read only then.
func TestHTTPReceiveMarksReadAfterFlush(t *testing.T) {
	svc, store := mailForAlice(t)
	flushed := false
	w := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), flush: func(body string) error {
		flushed = true
		if !strings.Contains(body, "for alice") {
			t.Errorf("flushed %q, want the message", body)
		}
		data, err := os.ReadFile(store.MailboxPath("alice"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(`"read_flag":false`)) {
			t.Errorf("the message was marked read before its answer was flushed:\n%s", data)
		}
		return nil
	}}
	post(aliceHandler(svc), w, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"receive","arguments":{},`+modernMeta+`}}`)
	if !flushed || w.Code != 200 {
		t.Fatalf("status %d, flushed %v: %s", w.Code, flushed, w.Body)
	}
	if n := unread(t, store); n != 0 {
		t.Errorf("%d unread after the answer was flushed, want 0", n)
	}
}

// A receive whose answer cannot be flushed (the client has gone) leaves
// its message unread.
func TestHTTPReceiveUnflushedStaysUnread(t *testing.T) {
	svc, store := mailForAlice(t)
	w := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), flush: func(string) error {
		return errors.New("connection reset")
	}}
	post(aliceHandler(svc), w, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"receive","arguments":{},`+modernMeta+`}}`)
	if n := unread(t, store); n != 1 {
		t.Errorf("%d unread after a failed flush, want 1", n)
	}
}

// subscriptions/listen is answered as an event stream: the
// acknowledgement first, and the result when the server stops.
func TestHTTPListenStream(t *testing.T) {
	svc, _ := mailForAlice(t)
	h := aliceHandler(svc)
	w := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), flush: func(string) error { return nil }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(h, w, `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["agentmail://inbox"]},`+modernMeta+`}}`)
	}()
	select {
	case <-done:
		t.Fatal("the stream ended before the server stopped")
	case <-time.After(100 * time.Millisecond):
	}
	h.Stop()
	<-done
	body := w.Body.String()
	if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	ack := strings.Index(body, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\"")
	result := strings.Index(body, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"l\",\"result\":{\"resultType\":\"complete\"")
	if ack != 0 || result < ack {
		t.Errorf("stream %q: want the acknowledgement, then the result", body)
	}
}
