package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"agentmail/jsonrpc"
)

// errNoStream is the answer to a notification that has no stream to go on.
var errNoStream = errors.New("mcp: no stream to send notifications on")

// sseWriter writes server-sent events to one HTTP answer: the answer to a
// POST that streams, a legacy session's GET stream, and the stream of the
// HTTP+SSE transport. Each event is flushed at once, within writeWait.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu     sync.Mutex
	closed bool
	broken chan struct{} // closed when a write fails or the stream ends
}

// startSSE writes the headers of an event stream.
func startSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w), broken: make(chan struct{})}
}

// acceptsEvents reports whether the request takes an event stream, and
// answers it when it does not.
func acceptsEvents(w http.ResponseWriter, r *http.Request) bool {
	if _, events := accepts(r.Header.Values("Accept")); !events {
		httpError(w, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "Not Acceptable: send \"Accept: text/event-stream\"")
		return false
	}
	return true
}

// message writes a JSON-RPC message as a "message" event.
func (s *sseWriter) message(v any) error {
	b, err := jsonrpc.Marshal(v)
	if err != nil {
		return err
	}
	return s.write("event: message\ndata: %s\n\n", b)
}

// comment writes a comment, which keeps an idle stream alive.
func (s *sseWriter) comment() error { return s.write(": keep-alive\n\n") }

func (s *sseWriter) write(format string, args ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errNoStream
	}
	s.rc.SetWriteDeadline(time.Now().Add(writeWait))
	_, err := fmt.Fprintf(s.w, format, args...)
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		s.endLocked()
	}
	return err
}

// end marks the stream closed, so that nothing is written to it once its
// handler has returned.
func (s *sseWriter) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked()
}

func (s *sseWriter) endLocked() {
	if !s.closed {
		s.closed = true
		close(s.broken)
	}
}

// The HTTP+SSE transport of 2024-11-05, for clients that predate
// Streamable HTTP: the client GETs an event stream, whose first event
// names the endpoint to POST messages to; every POST is accepted at once
// and everything the server says, answers included, goes on the stream.
// A stream is a connection in all but name, served by Serve as stdio is,
// its agent named by the headers of the GET.

// ssePostSuffix is the path of the POST endpoint, below the stream's.
const ssePostSuffix = "/messages"

// sseConn is the connection of one stream: the POSTs' messages in, the
// stream out.
type sseConn struct {
	out *sseWriter
	in  chan jsonrpc.Message
	end chan struct{} // closed when the connection ends
	// named is the named agent whose token opened the stream, or "".
	named string
}

func (c *sseConn) Read() (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.end:
		return jsonrpc.Message{}, errNoStream
	}
}

func (c *sseConn) Write(v any) error { return c.out.message(v) }

// SSEHandler serves the HTTP+SSE transport: the stream at path, and the
// POST endpoint below it. Other paths are not found.
func (h *HTTPHandler) SSEHandler(path string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(path, h.sseStream)
	mux.HandleFunc(path+ssePostSuffix, h.ssePost)
	return mux
}

// sseStream serves the GET of a stream, for as long as the client keeps
// it open or until the server stops.
func (h *HTTPHandler) sseStream(w http.ResponseWriter, r *http.Request) {
	named, ok := h.guard(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: GET the stream, then POST messages to the endpoint it names")
		return
	}
	if !acceptsEvents(w, r) {
		return
	}
	if id := identity(r.Header, named); id.none() {
		// Its messages would all fail: the client learns it at connect.
		e := namesNoAgent()
		httpError(w, http.StatusBadRequest, e.Code, e.Message)
		return
	}
	if !acquire(h.streams) {
		busy(w)
		return
	}
	defer release(h.streams)
	c := &sseConn{out: startSSE(w), in: make(chan jsonrpc.Message), end: make(chan struct{}), named: named}
	defer close(c.end)
	// Nothing is written to the stream once its handler has returned.
	defer c.out.end()
	id := rand.Text()
	h.mu.Lock()
	h.sseConns[id] = c
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.sseConns, id)
		h.mu.Unlock()
	}()
	if c.out.write("event: endpoint\ndata: %s%s?sessionId=%s\n\n", r.URL.Path, ssePostSuffix, id) != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stopping:
		case <-c.out.broken:
		case <-ctx.Done():
		}
		cancel()
	}()
	if err := h.srv.Serve(WithAgent(ctx, h.agent(r.Header, named)), Conn{Stream: c}); err != nil && ctx.Err() == nil {
		h.opt.Logf("sse: %v", err)
	}
}

// ssePost takes one message for a stream and answers 202: the answer goes
// on the stream.
func (h *HTTPHandler) ssePost(w http.ResponseWriter, r *http.Request) {
	named, ok := h.guard(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: POST messages here")
		return
	}
	h.mu.Lock()
	c := h.sseConns[r.URL.Query().Get("sessionId")]
	h.mu.Unlock()
	if c == nil {
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: unknown or ended session; GET the stream again")
		return
	}
	if named != c.named {
		// The stream's messages act as the agent that opened it.
		httpError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, "Forbidden: this session's stream was opened with another token")
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		httpError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: empty body")
		return
	}
	msg := jsonrpc.Decode(body)
	select {
	case c.in <- msg:
		w.WriteHeader(http.StatusAccepted)
	case <-c.end:
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: the session's stream has ended; GET the stream again")
	case <-r.Context().Done():
	}
}
