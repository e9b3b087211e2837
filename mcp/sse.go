package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"agentmail/jsonrpc"
)

// The HTTP+SSE transport of 2024-11-05, for clients that predate
// Streamable HTTP: the client GETs an event stream, whose first event
// names the endpoint to POST messages to; every POST is accepted at once
// and everything the server says, answers included, goes on the stream.
//
// A stream is a connection in all but name, so it is served exactly as
// stdio is: one jsonrpc.Conn and one Server per stream, fed the POSTed
// messages through a pipe. Its agent is named by the headers of the GET.
// The session lives as long as its stream, in the process that serves
// it.

// ssePostSuffix is the path of the POST endpoint, below the stream's.
const ssePostSuffix = "/messages"

// sseSession is the POST side of one stream.
type sseSession struct {
	mu sync.Mutex // serialises messages into in
	in *io.PipeWriter
}

// SSEHandler serves the HTTP+SSE transport: the stream at path, and the
// POST endpoint below it. Other paths are not found.
func (h *HTTPHandler) SSEHandler(path string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(path, h.sseStream)
	mux.HandleFunc(path+ssePostSuffix, h.ssePost)
	return mux
}

// sseOut writes the lines of a stream's connection as message events.
type sseOut struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (o *sseOut) Write(line []byte) (int, error) {
	o.rc.SetWriteDeadline(time.Now().Add(writeWait))
	_, err := fmt.Fprintf(o.w, "event: message\ndata: %s\n\n", bytes.TrimSuffix(line, []byte("\n")))
	if err == nil {
		err = o.rc.Flush()
	}
	if err != nil {
		return 0, err
	}
	return len(line), nil
}

// sseStream serves the GET of a stream, for as long as the client keeps
// it open or until the server stops.
func (h *HTTPHandler) sseStream(w http.ResponseWriter, r *http.Request) {
	if !h.guard(w, r) {
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: GET the stream, then POST messages to the endpoint it names")
		return
	}
	if _, events := accepts(r.Header.Values("Accept")); !events {
		httpError(w, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "Not Acceptable: send \"Accept: text/event-stream\"")
		return
	}
	if !acquire(h.streams) {
		busy(w)
		return
	}
	defer release(h.streams)

	s := NewServer(nil, h.opt.Version, h.opt.Logf)
	agent := h.agentOnce(s, r.Header)
	handle := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if err := agent(ctx, req.Method); err != nil {
			return nil, err
		}
		return s.handle(ctx, req)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &sseOut{w: w, rc: http.NewResponseController(w)}
	conn := jsonrpc.NewConn(pr, out, handle, jsonrpc.Options{
		Preempt:   s.preempt,
		MayDetach: mayDetach,
		Batch:     func() bool { return s.negotiated() == "2025-03-26" },
		Logf:      h.opt.Logf,
	})
	s.conn = conn
	defer s.stopSubscriptions()

	id := rand.Text()
	h.mu.Lock()
	h.sseSessions[id] = &sseSession{in: pw}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.sseSessions, id)
		h.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: endpoint\ndata: %s%s?sessionId=%s\n\n", r.URL.Path, ssePostSuffix, id)
	if out.rc.Flush() != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := conn.Serve(ctx); err != nil && ctx.Err() == nil {
		h.opt.Logf("sse: %v", err)
	}
}

// ssePost takes one message for a stream and answers 202: the answer goes
// on the stream.
func (h *HTTPHandler) ssePost(w http.ResponseWriter, r *http.Request) {
	if !h.guard(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: POST messages here")
		return
	}
	h.mu.Lock()
	ss := h.sseSessions[r.URL.Query().Get("sessionId")]
	h.mu.Unlock()
	if ss == nil {
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: unknown or ended session; GET the stream again")
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	// The connection reads one message a line. A line break can stand
	// only between the tokens of valid JSON, where a space does as well,
	// so replacing them keeps valid JSON valid and invalid JSON invalid.
	for i, c := range body {
		if c == '\n' || c == '\r' {
			body[i] = ' '
		}
	}
	line := bytes.TrimSpace(body)
	if len(line) == 0 {
		httpError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: empty body")
		return
	}
	ss.mu.Lock()
	_, err := ss.in.Write(append(line, '\n'))
	ss.mu.Unlock()
	if err != nil {
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: the session's stream has ended; GET the stream again")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
