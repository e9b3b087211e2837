package web

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"agentmail/mailbox"
)

// hub passes the mailbox's change notifications (Store.WatchProject) on to
// every open event stream: one watch for the server, however many pages
// are open.
type hub struct {
	store *mailbox.Store
	logf  func(string, ...any)
	mu    sync.Mutex
	subs  map[chan struct{}]bool
	stop  func()
	done  chan struct{} // closed by close: streams end
}

func newHub(st *mailbox.Store, logf func(string, ...any)) *hub {
	return &hub{store: st, logf: logf, subs: map[chan struct{}]bool{}, done: make(chan struct{})}
}

func (h *hub) start() error {
	if h.store == nil {
		return nil
	}
	changes, stop, err := h.store.WatchProject()
	if err != nil {
		return fmt.Errorf("watching the mailboxes: %w", err)
	}
	h.stop = stop
	go func() {
		for range changes {
			h.broadcast()
		}
	}()
	return nil
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
		return
	default:
	}
	close(h.done)
	if h.stop != nil {
		h.stop()
	}
}

// broadcast tells every stream, without waiting: a stream that has a
// change to send already needs no second one.
func (h *hub) broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (h *hub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = true
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// keepAlive is how often an idle event stream sends a comment, so that
// the connection's end is noticed and no proxy closes it as idle.
const keepAlive = 25 * time.Second

// events streams server-sent events: "change" each time the mailbox may
// have changed, after which the page reads its lists again. The first
// event says the stream is open, so that a page that reconnects catches
// up on what it missed meanwhile.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	changes, leave := s.hub.subscribe()
	defer leave()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	write := func(msg string) bool {
		if _, err := fmt.Fprint(w, msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write("retry: 1000\nevent: ready\ndata: {}\n\n") {
		return
	}
	for {
		var msg string
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			return
		case <-changes:
			msg = "event: change\ndata: {}\n\n"
		case <-tick.C:
			msg = ": keep-alive\n\n"
		}
		if !write(msg) {
			return
		}
	}
}
