package mcpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tmux"
	"agentmail/tools"
)

// term is a tmux session of fixed windows, in which the agent is self.
type term struct {
	self    string
	windows []string
}

func (t term) Session(ctx context.Context) (*tmux.Session, error) {
	s := &tmux.Session{}
	for i, name := range t.windows {
		w := tmux.Window{ID: fmt.Sprintf("@%d", i), Name: name, Pane: fmt.Sprintf("%%%d", i)}
		if name == t.self {
			s.Self = w
		}
		s.Windows = append(s.Windows, w)
	}
	if s.Self.ID == "" {
		return nil, fmt.Errorf("%w: no window %q", tmux.ErrNotInTmux, t.self)
	}
	return s, nil
}

// hub is a hub in the test's process: the real HTTP handler for the
// windows alice and bob of one project, each named by Agentmail-Agent,
// behind a middleware the test may set.
type hub struct {
	*httptest.Server
	store   *mailbox.Store
	handler *mcp.HTTPHandler

	mu     sync.Mutex
	wrap   func(w http.ResponseWriter, r *http.Request, next http.Handler) // nil: none
	counts map[string]int                                                  // requests by JSON-RPC method
}

const token = "test-token-0123456789"

// newHub starts a hub over HTTP, or over HTTPS with tlsServer.
func newHub(t *testing.T, tlsServer bool) *hub {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/.agentmail", 0o700); err != nil {
		t.Fatal(err)
	}
	h := &hub{store: mailbox.New(dir), counts: map[string]int{}}
	h.handler = mcp.NewHTTPHandler(mcp.HTTPOptions{
		Version: "test",
		Host:    "127.0.0.1",
		Token:   token,
		Resolve: func(ctx context.Context, id mcp.Identity) (*tools.Service, error) {
			if id.Agent != "alice" && id.Agent != "bob" {
				return nil, fmt.Errorf("no window %q", id.Agent)
			}
			return &tools.Service{Store: h.store, Term: term{id.Agent, []string{"alice", "bob"}}}, nil
		},
	})
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, method := peekMethod(t, r)
		h.mu.Lock()
		h.counts[method]++
		wrap := h.wrap
		h.mu.Unlock()
		if wrap != nil {
			wrap(w, r, h.handler)
			return
		}
		h.handler.ServeHTTP(w, r)
	})
	if tlsServer {
		h.Server = httptest.NewUnstartedServer(serve)
	} else {
		h.Server = httptest.NewServer(serve)
	}
	t.Cleanup(func() {
		h.handler.Stop()
		h.Close()
	})
	return h
}

func (h *hub) setWrap(f func(w http.ResponseWriter, r *http.Request, next http.Handler)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wrap = f
}

func (h *hub) count(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[method]
}

func (h *hub) unread(t *testing.T, name string) int {
	t.Helper()
	n, err := h.store.Unread(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantKind checks that err is of kind, and logs it for a reader of the
// test output.
func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	t.Log(err)
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want one of kind %q", err, kind)
	}
}
