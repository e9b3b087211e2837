package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"agentmail/internal/mcptest"
	"agentmail/mailbox"
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
	standardHeaders(r.Header, body)
	h.ServeHTTP(w, r)
}

// standardHeaders sets the headers a client of 2026-07-28 derives from
// the message body.
func standardHeaders(hdr http.Header, body string) {
	for k, v := range mcptest.StandardHeaders([]byte(body)) {
		hdr[k] = v
	}
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

// postSession serves one POST through h with the given session id and
// returns the recorder.
func postSession(h http.Handler, session, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(body))
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Agentmail-Pane", "%0")
	if session != "" {
		r.Header.Set(mcp.HeaderSession, session)
	}
	standardHeaders(r.Header, body)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// Requests of the legacy era without a session are refused, however many
// come, and leave nothing behind.
func TestHTTPNoSessionFlood(t *testing.T) {
	svc, store := mailForAlice(t)
	h := aliceHandler(svc)
	for i := range 1000 {
		w := postSession(h, "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"receive","arguments":{}}}`)
		if w.Code != http.StatusBadRequest {
			t.Fatalf("request %d: status %d, want 400: %s", i, w.Code, w.Body)
		}
	}
	if n := unread(t, store); n != 1 {
		t.Errorf("%d unread, want 1: a refused request read mail", n)
	}
}

// A notifications/cancelled posted in the same session ends a waiting
// receive, which is then not answered and reads nothing.
func TestHTTPCancelAcrossPosts(t *testing.T) {
	svc, store := mailForAlice(t)
	if _, err := store.Receive(context.Background(), "alice", func(*mailbox.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	h := aliceHandler(svc)
	w := postSession(h, "", initLine)
	session := w.Header().Get(mcp.HeaderSession)
	if w.Code != 200 || session == "" {
		t.Fatalf("initialize: status %d, session %q: %s", w.Code, session, w.Body)
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		done <- postSession(h, session, `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"receive","arguments":{"timeout_seconds":30}}}`)
	}()
	// The cancellation may come before the receive is in progress, in
	// which case it is ignored: it is sent until the receive ends.
	for {
		c := postSession(h, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`)
		if c.Code != http.StatusAccepted {
			t.Fatalf("cancel: status %d: %s", c.Code, c.Body)
		}
		select {
		case w := <-done:
			if w.Code != http.StatusAccepted || w.Body.Len() != 0 {
				t.Errorf("cancelled receive: status %d, body %q; want 202 and nothing", w.Code, w.Body)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Subscription streams are bounded: one beyond the bound gets 503.
func TestHTTPStreamBound(t *testing.T) {
	svc, _ := mailForAlice(t)
	h := mcp.NewHTTPHandler(mcp.HTTPOptions{Host: "127.0.0.1", MaxStreams: 1,
		Resolve: func(context.Context, mcp.Identity) (*tools.Service, error) { return svc, nil }})
	listen := `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{},` + modernMeta + `}}`
	acked := make(chan struct{}, 1)
	first := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), flush: func(string) error {
		select {
		case acked <- struct{}{}:
		default:
		}
		return nil
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(h, first, listen)
	}()
	<-acked
	w := postSession(h, "", listen)
	h.Stop()
	<-done
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("second stream: status %d, want 503 with Retry-After: %s", w.Code, w.Body)
	}
}

// A legacy session's subscription sends its updates on the session's GET
// stream, and DELETE ends both.
func TestHTTPSessionStream(t *testing.T) {
	svc, store := mailForAlice(t)
	srv := httptest.NewServer(aliceHandler(svc))
	defer srv.Close()
	do := func(method, session, body string) *http.Response {
		t.Helper()
		r, err := http.NewRequest(method, srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Agentmail-Pane", "%0")
		if session != "" {
			r.Header.Set(mcp.HeaderSession, session)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do("POST", "", initLine)
	resp.Body.Close()
	session := resp.Header.Get(mcp.HeaderSession)
	if session == "" {
		t.Fatalf("initialize: status %d, no session", resp.StatusCode)
	}
	stream := do("GET", session, "")
	defer stream.Body.Close()
	if stream.StatusCode != 200 || stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: status %d, Content-Type %q", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	if again := do("GET", session, ""); again.StatusCode != http.StatusConflict {
		t.Errorf("second GET: status %d, want 409", again.StatusCode)
	}
	resp = do("POST", session, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"agentmail://inbox"}}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("subscribe: status %d", resp.StatusCode)
	}
	if _, err := store.Append(context.Background(), "bob", "alice", "news"); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		buf := make([]byte, 4096)
		var got string
		for {
			n, err := stream.Body.Read(buf)
			got += string(buf[:n])
			if strings.Contains(got, "notifications/resources/updated") {
				lines <- got
				got = ""
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case got := <-lines:
		if !strings.Contains(got, `data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"agentmail://inbox"}}`) {
			t.Errorf("stream: %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no update on the stream within 5s")
	}
	resp = do("DELETE", session, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: status %d", resp.StatusCode)
	}
	select {
	case _, ok := <-lines:
		if ok {
			t.Error("an update after the session ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was still open 5s after DELETE")
	}
}

// When its context ends, Serve stops taking requests and returns within
// its drain time even while a receive waits for mail, and ends the
// subscription streams with their result.
func TestHTTPServeDrains(t *testing.T) {
	svc, store := mailForAlice(t)
	if _, err := store.Receive(context.Background(), "alice", func(*mailbox.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	h := aliceHandler(svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- h.Serve(ctx, ln, "/mcp") }()
	url := "http://" + ln.Addr().String() + "/mcp"
	call := func(body string) (string, error) {
		r, _ := http.NewRequest("POST", url, strings.NewReader(body))
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Agentmail-Pane", "%0")
		standardHeaders(r.Header, body)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := call(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"receive","arguments":{"timeout_seconds":60},` + modernMeta + `}}`)
		waiting <- err
	}()
	listened := make(chan string, 1)
	go func() {
		body, _ := call(`{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{},` + modernMeta + `}}`)
		listened <- body
	}()
	time.Sleep(200 * time.Millisecond) // both are in progress by then
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still ran 5s after its context ended")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Serve took %v to stop, want about a second at most", d)
	}
	if body := <-listened; !strings.Contains(body, `"id":"l","result":{"resultType":"complete"`) {
		t.Errorf("listen stream ended without its result: %q", body)
	}
	<-waiting
}

// postEdited serves one POST of body through h with the headers a client
// sends, as post does, changed by edit first; it returns the recorder.
func postEdited(h http.Handler, body string, edit func(http.Header)) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(body))
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Agentmail-Pane", "%0")
	standardHeaders(r.Header, body)
	edit(r.Header)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A 2026-07-28 request carries the standard headers of its revision:
// without MCP-Protocol-Version, Mcp-Method, or the Mcp-Name of a call that
// names a tool or resource, or with one that does not say what the
// message says, it is refused with 400 and -32020 for its id, and reads
// no mail. A notification, a legacy request in its session and a request
// of a revision the server lacks are not held to them.
func TestHTTPModernStandardHeaders(t *testing.T) {
	svc, store := mailForAlice(t)
	h := aliceHandler(svc)
	receive := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"receive","arguments":{},` + modernMeta + `}}`
	read := `{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"agentmail://inbox",` + modernMeta + `}}`
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + modernMeta + `}}`
	del := func(name string) func(http.Header) { return func(hdr http.Header) { hdr.Del(name) } }
	set := func(name string, values ...string) func(http.Header) {
		return func(hdr http.Header) { hdr[http.CanonicalHeaderKey(name)] = values }
	}
	for _, c := range []struct {
		what, body string
		edit       func(http.Header)
		id, why    string
	}{
		{"no Mcp-Method", list, del(mcp.HeaderMethod), `3`, `missing Mcp-Method`},
		{"no Mcp-Method on a call", receive, del(mcp.HeaderMethod), `7`, `missing Mcp-Method`},
		{"no Mcp-Name", receive, del(mcp.HeaderName), `7`, `missing Mcp-Name`},
		{"no Mcp-Name for a resource", read, del(mcp.HeaderName), `"r"`, `missing Mcp-Name`},
		{"no MCP-Protocol-Version", receive, del(mcp.HeaderProtocol), `7`, `missing MCP-Protocol-Version`},
		{"an empty Mcp-Method", list, set(mcp.HeaderMethod, ""), `3`, `Mcp-Method`},
		{"two Mcp-Method", list, set(mcp.HeaderMethod, "tools/list", "tools/call"), `3`, `Mcp-Method`},
		{"Mcp-Method in capitals", list, set(mcp.HeaderMethod, "TOOLS/LIST"), `3`, `Mcp-Method`},
		{"another Mcp-Name", receive, set(mcp.HeaderName, "send"), `7`, `Mcp-Name`},
		{"Mcp-Name in bad Base64", receive, set(mcp.HeaderName, "=?base64?cmVjZWl2ZQ?="), `7`, `Mcp-Name`},
		{"Mcp-Name in Base64 of another name", receive, set(mcp.HeaderName, "=?base64?c2VuZA==?="), `7`, `Mcp-Name`},
		{"Mcp-Name not in ASCII nor Base64", receive, set(mcp.HeaderName, "récéive"), `7`, `only in Base64`},
	} {
		w := postEdited(h, c.body, c.edit)
		want := `{"jsonrpc":"2.0","id":` + c.id + `,"error":{"code":-32020,"message":"Header mismatch: `
		if w.Code != http.StatusBadRequest || !strings.HasPrefix(w.Body.String(), want) || !strings.Contains(w.Body.String(), c.why) {
			t.Errorf("%s: status %d, body %s; want 400, %s… naming %s", c.what, w.Code, w.Body, want, c.why)
		}
	}
	if n := unread(t, store); n != 1 {
		t.Fatalf("%d unread, want 1: a refused request read mail", n)
	}

	// The Base64 form of Mcp-Name is decoded before it is compared.
	encoded := postEdited(h, receive, set(mcp.HeaderName, "=?base64?cmVjZWl2ZQ==?="))
	if encoded.Code != http.StatusOK || !strings.Contains(encoded.Body.String(), `"id":7,"result":{`) {
		t.Errorf("Mcp-Name in Base64: status %d, body %s; want the receive's result", encoded.Code, encoded.Body)
	}
	// A notification of 2026-07-28 has no headers it must carry.
	note := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,` + modernMeta + `}}`
	if w := postEdited(h, note, func(hdr http.Header) {
		hdr.Del(mcp.HeaderProtocol)
		hdr.Del(mcp.HeaderMethod)
	}); w.Code != http.StatusAccepted || w.Body.Len() != 0 {
		t.Errorf("notification without headers: status %d, body %q; want 202 and nothing", w.Code, w.Body)
	}
	// A revision the server lacks is told so first, whatever the headers.
	unknown := `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`
	if w := postEdited(h, unknown, del(mcp.HeaderMethod)); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"id":8,"error":{"code":-32022,`) {
		t.Errorf("unknown revision without Mcp-Method: status %d, body %s; want 400 and -32022", w.Code, w.Body)
	}
	// A legacy session's requests carry none of these headers.
	init := postSession(h, "", initLine)
	session := init.Header().Get(mcp.HeaderSession)
	if init.Code != http.StatusOK || session == "" {
		t.Fatalf("initialize: status %d, session %q: %s", init.Code, session, init.Body)
	}
	legacy := postSession(h, session, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list-recipients","arguments":{}}}`)
	if legacy.Code != http.StatusOK || !strings.Contains(legacy.Body.String(), `"id":4,"result":{`) {
		t.Errorf("legacy tools/call without Mcp-Method: status %d, body %s; want its result", legacy.Code, legacy.Body)
	}
}
