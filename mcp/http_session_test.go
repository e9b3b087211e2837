package mcp

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// memEnded is an EndedSessions that outlives the handlers given it, as the
// file does a restart.
type memEnded struct {
	mu    sync.Mutex
	ended map[string]time.Time
}

func (m *memEnded) Load() (map[string]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]time.Time{}
	for id, t := range m.ended {
		out[id] = t
	}
	return out, nil
}

func (m *memEnded) Add(id string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended[id] = until
	return nil
}

func deleteSession(h *HTTPHandler, session string) int {
	r := httptest.NewRequest("DELETE", "http://127.0.0.1/mcp", nil)
	r.Header.Set(HeaderSession, session)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// A DELETEd session stays refused for the rest of its lifetime, however
// many sessions end after it, and after a restart; an id past its
// lifetime, or made in the future, is refused whatever its signature.
func TestSessionEnds(t *testing.T) {
	store := &memEnded{ended: map[string]time.Time{}}
	opt := HTTPOptions{Host: "127.0.0.1", SessionKey: []byte("key"), Ended: store}
	h := NewHTTPHandler(opt)
	first := h.newSession("2025-11-25")
	if _, ok := h.sessionVersion(first); !ok {
		t.Fatal("a new session is refused")
	}
	if code := deleteSession(h, first); code != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", code)
	}
	for range 5000 {
		deleteSession(h, h.newSession("2025-11-25"))
	}
	if _, ok := h.sessionVersion(first); ok {
		t.Error("a deleted session is accepted after 5,000 other deletes")
	}
	if code := deleteSession(h, first); code != http.StatusNotFound {
		t.Errorf("DELETE again: status %d, want 404", code)
	}
	restarted := NewHTTPHandler(opt)
	if _, ok := restarted.sessionVersion(first); ok {
		t.Error("a deleted session is accepted after a restart")
	}
	for _, made := range []time.Time{time.Now().Add(-sessionLifetime - time.Minute), time.Now().Add(time.Hour)} {
		payload := "2025-11-25." + strconv.FormatInt(made.Unix(), 10) + ".x"
		if _, ok := h.sessionVersion(payload + "." + h.sign(payload)); ok {
			t.Errorf("a session made at %v is accepted", made)
		}
	}
}

// A session idle for longer than sessionIdle, with no stream open, loses
// its subscriptions; one in use keeps them.
func TestSessionIdleSweep(t *testing.T) {
	h := NewHTTPHandler(HTTPOptions{Host: "127.0.0.1"})
	idle, busy := h.newSession("2025-11-25"), h.newSession("2025-11-25")
	subs := h.subscriptions(idle)
	h.subscriptions(busy)
	h.sweep(time.Now().Add(sessionIdle / 2))
	if len(h.sessions) != 2 {
		t.Fatalf("%d sessions kept after half the idle time, want 2", len(h.sessions))
	}
	h.touch(busy)
	h.sessions[busy].used = time.Now().Add(sessionIdle)
	h.sweep(time.Now().Add(sessionIdle + time.Minute))
	if _, ok := h.sessions[idle]; ok {
		t.Error("an idle session is kept")
	}
	if _, ok := h.sessions[busy]; !ok {
		t.Error("a session in use is ended")
	}
	if err := subs.Subscribe(nil, InboxURI); err == nil {
		t.Error("an ended session's subscriptions take a new one")
	}
}
