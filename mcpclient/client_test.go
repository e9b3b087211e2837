package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"agentmail/mcpclient"
	"agentmail/tools"
)

func client(t *testing.T, h *hub, agent string, edit ...func(*mcpclient.Config)) *mcpclient.Client {
	t.Helper()
	cfg := mcpclient.Config{URL: h.URL + "/mcp", Token: token, Agent: agent, Version: "test"}
	for _, f := range edit {
		f(&cfg)
	}
	c, err := mcpclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Two agents mail each other through a hub: the tools' texts and
// structured results, and the views as resources.
func TestCallsAndResources(t *testing.T) {
	h := newHub(t, false)
	alice, bob := client(t, h, "alice"), client(t, h, "bob")
	ctx := context.Background()
	sent, err := alice.CallTool(ctx, "send", map[string]any{"recipient": "bob", "message": "hello bob"}, 0)
	if err != nil || !strings.HasPrefix(sent.Text, "Message #") {
		t.Fatalf("send: %+v, %v", sent, err)
	}
	got, err := bob.CallTool(ctx, "receive", nil, 0)
	if err != nil || !strings.HasPrefix(got.Text, "From: alice\nID: ") || !strings.HasSuffix(got.Text, "\n\nhello bob") {
		t.Fatalf("receive: %+v, %v", got, err)
	}
	var m struct{ From, Message string }
	if err := json.Unmarshal(got.Structured, &m); err != nil || m.From != "alice" || m.Message != "hello bob" {
		t.Errorf("receive's structured result %s: %v", got.Structured, err)
	}
	list, err := bob.CallTool(ctx, "list-recipients", nil, 0)
	if err != nil || list.Text != "alice\nbob [you]" {
		t.Errorf("list-recipients: %+v, %v", list, err)
	}
	text, mime, err := alice.ReadResource(ctx, "agentmail://sent?format=json")
	var v tools.Sent
	if err != nil || mime != "application/json" || json.Unmarshal([]byte(text), &v) != nil || len(v.Messages) != 1 || v.Messages[0].State != "read" {
		t.Errorf("sent view: %s %q, %v", mime, text, err)
	}
	if _, _, err := alice.ReadResource(ctx, "agentmail://threads/nope"); !errors.Is(err, mcpclient.ErrNotFound) {
		t.Errorf("a thread that is not there: %v, want ErrNotFound", err)
	}
	if _, err := alice.CallTool(ctx, "send", map[string]any{"recipient": "carol", "message": "x"}, 0); !isToolError(err, "recipient not found") {
		t.Errorf("send to carol: %v, want the tool's own error", err)
	}
	if s := alice.Server(); s.Name != "agentmail" || s.Version != "test" {
		t.Errorf("server info %+v", s)
	}
	if n := h.count("initialize"); n != 2 {
		t.Errorf("%d initialize for two clients, want 2", n)
	}
}

func isToolError(err error, want string) bool {
	var te *mcpclient.ToolError
	return errors.As(err, &te) && strings.Contains(te.Text, want)
}

// An answer that comes as a stream of events, after a notification, is
// read as one that comes as JSON.
func TestEventStreamAnswer(t *testing.T) {
	h := newHub(t, false)
	h.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if rec.Code != http.StatusOK {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(": a comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"))
		w.Write([]byte("event: message\nid: 1\ndata: " + strings.TrimSpace(rec.Body.String()) + "\n\n"))
	})
	list, err := client(t, h, "alice").CallTool(context.Background(), "list-recipients", nil, 0)
	if err != nil || list.Text != "alice [you]\nbob" {
		t.Fatalf("list-recipients as events: %+v, %v", list, err)
	}
}

// A call that the hub does not answer in time fails within its time-out,
// saying so; a receive that waits has its wait on top of it.
func TestTimeout(t *testing.T) {
	h := newHub(t, false)
	short := func(c *mcpclient.Config) { c.Timeout = 300 * time.Millisecond }
	alice := client(t, h, "alice", short)
	ctx := context.Background()
	start := time.Now()
	got, err := alice.CallTool(ctx, "receive", map[string]any{"timeout_seconds": 0.6}, 600*time.Millisecond)
	if err != nil || got.Text != tools.NoMail || time.Since(start) < 600*time.Millisecond {
		t.Fatalf("a receive waiting 0.6 s with a 0.3 s time-out: %+v, %v after %v", got, err, time.Since(start))
	}
	h.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Header.Get("Mcp-Session-Id") != "" {
			<-r.Context().Done()
			return
		}
		next.ServeHTTP(w, r)
	})
	start = time.Now()
	_, err = client(t, h, "alice", short).CallTool(ctx, "status", map[string]any{"status": "ready"}, 0)
	wantKind(t, err, mcpclient.ErrUnreachable)
	if !strings.Contains(err.Error(), "did not answer within 300ms") || time.Since(start) > 2*time.Second {
		t.Errorf("after %v: %v", time.Since(start), err)
	}
}

// A connection that drops under a call that may be repeated is made again,
// on a new session, once; a send whose request left is not repeated.
func TestReconnectAfterDrop(t *testing.T) {
	h := newHub(t, false)
	drops := 0
	h.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if _, m := peekMethod(t, r); m == "tools/call status" || m == "tools/call send" {
			if drops++; drops%2 == 1 {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	alice := client(t, h, "alice")
	ctx := context.Background()
	if _, err := alice.CallTool(ctx, "status", map[string]any{"status": "ready"}, 0); err != nil {
		t.Fatalf("status over a dropped connection: %v", err)
	}
	if n := h.count("initialize"); n != 2 {
		t.Errorf("%d initialize, want 2: one again after the drop", n)
	}
	_, err := alice.CallTool(ctx, "send", map[string]any{"recipient": "bob", "message": "once"}, 0)
	wantKind(t, err, mcpclient.ErrUnreachable)
	if n := h.count("tools/call send"); n != 1 {
		t.Errorf("the send was tried %d times, want 1", n)
	}
}

// A session the hub no longer knows (404) is started again, and the call
// made in it.
func TestReconnectAfterLostSession(t *testing.T) {
	h := newHub(t, false)
	lost := true
	h.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if _, m := peekMethod(t, r); m == "tools/call send" && lost {
			lost = false
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Not Found: unknown or ended session"}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
	alice := client(t, h, "alice")
	if _, err := alice.CallTool(context.Background(), "send", map[string]any{"recipient": "bob", "message": "again"}, 0); err != nil {
		t.Fatalf("send after a lost session: %v", err)
	}
	if n, i := h.unread(t, "bob"), h.count("initialize"); n != 1 || i != 2 {
		t.Errorf("bob has %d unread after %d initialize, want 1 after 2", n, i)
	}
}

// The errors say what to do, one line each, and never hold the token.
func TestErrors(t *testing.T) {
	h := newHub(t, false)
	ctx := context.Background()
	status := map[string]any{"status": "work"}
	_, err := client(t, h, "alice", func(c *mcpclient.Config) { c.Token = "wrong-secret-token" }).CallTool(ctx, "status", status, 0)
	wantKind(t, err, mcpclient.ErrToken)
	if !strings.Contains(err.Error(), "refused the token: check $AGENTMAIL_TOKEN") || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong token: %v", err)
	}
	_, err = client(t, h, "alice", func(c *mcpclient.Config) { c.Token = "" }).CallTool(ctx, "status", status, 0)
	wantKind(t, err, mcpclient.ErrToken)
	_, err = client(t, h, "").CallTool(ctx, "status", status, 0)
	if err == nil || !strings.Contains(err.Error(), "set $AGENTMAIL_AGENT") {
		t.Errorf("no agent named: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	_, err = client(t, h, "alice", func(c *mcpclient.Config) { c.URL = closed }).CallTool(ctx, "status", status, 0)
	wantKind(t, err, mcpclient.ErrUnreachable)
	if !strings.HasPrefix(err.Error(), "cannot reach the hub at "+closed+": ") || !strings.HasSuffix(err.Error(), `is "agentmail mcp --transport http" running there?`) {
		t.Errorf("closed port: %v", err)
	}
	h.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if _, m := peekMethod(t, r); m == "tools/call status" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Forbidden: this token is bob's"}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
	_, err = client(t, h, "alice").CallTool(ctx, "status", status, 0)
	wantKind(t, err, mcpclient.ErrForbidden)
	if !strings.HasSuffix(err.Error(), "refused: Forbidden: this token is bob's") {
		t.Errorf("403: %v", err)
	}
}

// A hub that negotiates an older protocol, or lacks a tool, is too old.
func TestTooOld(t *testing.T) {
	h := newHub(t, false)
	h.setWrap(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if _, m := peekMethod(t, r); m == "initialize" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"agentmail","version":"old"}}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
	_, err := client(t, h, "alice").CallTool(context.Background(), "status", map[string]any{"status": "work"}, 0)
	wantKind(t, err, mcpclient.ErrTooOld)
	if !strings.Contains(err.Error(), `"2025-03-26"`) || !strings.HasSuffix(err.Error(), "update agentmail there") {
		t.Errorf("old protocol: %v", err)
	}
	h.setWrap(nil)
	_, err = client(t, h, "alice").CallTool(context.Background(), "forward", nil, 0)
	wantKind(t, err, mcpclient.ErrTooOld)
}
