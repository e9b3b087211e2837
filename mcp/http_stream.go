package mcp

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"agentmail/internal/text"
	"agentmail/jsonrpc"
)

// The stream a legacy session opens with GET, for what the server has to
// say outside any request: the updates of its resource subscriptions.
// Streams and subscriptions live in the process that serves them, unlike
// the session itself: a client behind a load balancer keeps them where it
// opened them, as it keeps the TCP connection they run on.

// sessionState is what one process holds for a legacy session: its open
// stream, if any, and its resource subscriptions.
type sessionState struct {
	stream *sseStream
	subs   map[string]func() // uri → stop
}

// sseStream is an open GET stream.
type sseStream struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	closed bool
	broken chan struct{} // closed when a write fails
}

// keepAlive is how often an idle stream gets a comment, so that proxies
// and clients do not take it for dead.
const keepAlive = 30 * time.Second

// send writes one message, or a comment when line is nil, and flushes it.
func (st *sseStream) send(line []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return errNoStream
	}
	st.rc.SetWriteDeadline(time.Now().Add(writeWait))
	var err error
	if line == nil {
		_, err = st.w.Write([]byte(": keep-alive\n\n"))
	} else {
		_, err = fmt.Fprintf(st.w, "event: message\ndata: %s\n\n", line)
	}
	if err == nil {
		err = st.rc.Flush()
	}
	if err != nil {
		st.closed = true
		close(st.broken)
	}
	return err
}

// end marks the stream closed, so that nothing is written to it once its
// handler has returned.
func (st *sseStream) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.closed {
		st.closed = true
		close(st.broken)
	}
}

// session returns the state of a session, made on first use. h.mu must
// be held.
func (h *HTTPHandler) sessionLocked(session string) *sessionState {
	ss := h.sessions[session]
	if ss == nil {
		ss = &sessionState{subs: map[string]func(){}}
		h.sessions[session] = ss
	}
	return ss
}

// get opens the stream of a legacy session. The 2026-07-28 era has none:
// every message of its server belongs to a request.
func (h *HTTPHandler) get(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get(HeaderSession)
	if session == "" {
		w.Header().Set("Allow", "POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: only a session started by initialize has a stream to GET")
		return
	}
	if _, events := accepts(r.Header.Values("Accept")); !events {
		httpError(w, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "Not Acceptable: send \"Accept: text/event-stream\"")
		return
	}
	if _, ok := h.sessionVersion(session); !ok {
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: unknown or ended session; send initialize to start a new one")
		return
	}
	if !acquire(h.streams) {
		busy(w)
		return
	}
	defer release(h.streams)
	st := &sseStream{w: w, rc: http.NewResponseController(w), broken: make(chan struct{})}
	h.mu.Lock()
	ss := h.sessionLocked(session)
	if ss.stream != nil {
		h.mu.Unlock()
		httpError(w, http.StatusConflict, jsonrpc.CodeInvalidRequest, "Conflict: this session already has a stream open")
		return
	}
	ss.stream = st
	h.mu.Unlock()
	defer func() {
		st.end()
		h.mu.Lock()
		if ss := h.sessions[session]; ss != nil && ss.stream == st {
			ss.stream = nil
		}
		h.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if st.send(nil) != nil {
		return
	}
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.stopping:
			return
		case <-st.broken:
			return
		case <-t.C:
			if st.send(nil) != nil {
				return
			}
		}
	}
}

// notifySession sends a notification on the stream of session, if one is
// open; without one it is dropped, as the transport allows.
func (h *HTTPHandler) notifySession(session, method string, params any) error {
	h.mu.Lock()
	var st *sseStream
	if ss := h.sessions[session]; ss != nil {
		st = ss.stream
	}
	h.mu.Unlock()
	if st == nil {
		return nil
	}
	line, err := notification(method, params)
	if err != nil {
		return err
	}
	if err := st.send(line); err != nil {
		h.opt.Logf("http: dropped %s: %v", method, err)
	}
	return nil
}

// subscribe serves resources/subscribe and resources/unsubscribe in a
// legacy session: the subscription outlives the request, and its updates
// go to the session's stream.
func (h *HTTPHandler) subscribe(ctx context.Context, s *Server, req *jsonrpc.Request, session string) (any, error) {
	p, err := parseParams(req.Params)
	if err != nil {
		return nil, err
	}
	uri, err := subscribeURI(p)
	if err != nil {
		return nil, err
	}
	if req.Method == "resources/unsubscribe" {
		h.mu.Lock()
		var stop func()
		if ss := h.sessions[session]; ss != nil {
			stop = ss.subs[uri]
			delete(ss.subs, uri)
		}
		h.mu.Unlock()
		if stop != nil {
			stop()
		}
		return emptyResult, nil
	}
	if !subscribable(uri) {
		return nil, notFound(uri, false)
	}
	w, err := s.watchInbox(ctx)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: %s", text.OneLine(err.Error()))
	}
	stop := w.notify(func() error {
		return h.notifySession(session, updatedMethod, map[string]string{"uri": uri})
	})
	h.mu.Lock()
	if h.ended[session] || h.isStopping() {
		h.mu.Unlock()
		stop()
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: the session has ended")
	}
	ss := h.sessionLocked(session)
	old := ss.subs[uri]
	ss.subs[uri] = stop
	h.mu.Unlock()
	if old != nil {
		old() // subscribing again replaces the watch, for the agent named now
	}
	return emptyResult, nil
}

func (h *HTTPHandler) isStopping() bool {
	select {
	case <-h.stopping:
		return true
	default:
		return false
	}
}

// endSession stops the subscriptions of a session and ends its stream.
func (h *HTTPHandler) endSession(session string) {
	h.mu.Lock()
	ss := h.sessions[session]
	delete(h.sessions, session)
	h.mu.Unlock()
	if ss == nil {
		return
	}
	for _, stop := range ss.subs {
		stop()
	}
	if ss.stream != nil {
		ss.stream.end()
	}
}

// endAll ends every session's subscriptions and streams, when the server
// stops.
func (h *HTTPHandler) endAll() {
	h.mu.Lock()
	var sessions []string
	for s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	for _, s := range sessions {
		h.endSession(s)
	}
}
