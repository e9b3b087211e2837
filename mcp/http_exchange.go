package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"agentmail/jsonrpc"
)

// exchange is one POST served as a connection of one message: Read gives
// the message and then waits until nothing more is owed for it, and Write
// puts what the server says into the HTTP answer.
type exchange struct {
	h       *HTTPHandler
	ps      *post
	w       http.ResponseWriter
	rc      *http.ResponseController
	conn    *jsonrpc.Conn // for a cancellation from another POST
	untrack func()        // ends the registration for it

	read     bool
	gone     <-chan struct{} // closed when the client or the server is gone
	done     chan struct{}   // closed when nothing more is owed
	doneOnce sync.Once

	// mu guards started and closed, and is held while a message is
	// written: nothing may touch the ResponseWriter once the handler has
	// returned.
	mu      sync.Mutex
	sse     *sseWriter // the answer is an event stream (a subscription's)
	started bool       // the answer's status is written
	closed  bool       // the handler is returning: nothing more is written
}

// exchange serves one POSTed message and writes what the server says.
func (h *HTTPHandler) exchange(w http.ResponseWriter, r *http.Request, ps *post) {
	x := &exchange{h: h, ps: ps, w: w, rc: http.NewResponseController(w), done: make(chan struct{})}
	if !owesAnswer(ps.msg) {
		x.finish()
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	x.gone = ctx.Done()
	go func() {
		select {
		case <-h.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	c := Conn{Stream: x, Version: ps.version}
	var started func(*jsonrpc.Conn)
	if ps.session != "" {
		c.Cancel = func(id json.RawMessage) { h.cancel(ps.session, id) }
		if ps.req != nil && (ps.req.Method == "resources/subscribe" || ps.req.Method == "resources/unsubscribe") {
			c.Subscriptions = h.subscriptions(ps.session)
		}
		started = func(conn *jsonrpc.Conn) { x.untrack = h.track(ps, x, conn) }
		defer func() {
			if x.untrack != nil {
				x.untrack()
			}
		}()
	}
	if err := h.srv.serve(WithAgent(ctx, h.agent(r.Header, ps.named)), c, started); err != nil && ctx.Err() == nil {
		h.opt.Logf("http: %v", err)
	}
	// A write still going on (to a client that does not read) ends within
	// writeWait; after it nothing more is written.
	x.mu.Lock()
	x.closed = true
	accepted := !x.started
	x.mu.Unlock()
	if accepted {
		// A notification, a response, or a request cancelled before it
		// was answered: accepted, with nothing to say.
		w.WriteHeader(http.StatusAccepted)
	}
}

// owesAnswer reports whether a message gets an answer: it holds a
// request, or an invalid message.
func owesAnswer(m jsonrpc.Message) bool {
	for _, it := range m.Items {
		if it.Request == nil || it.Err == nil && it.IsCall() {
			return true
		}
	}
	return false
}

// track registers the exchange of a legacy request, so that a
// cancellation in another POST of its session reaches it, and returns
// what ends the registration.
func (h *HTTPHandler) track(ps *post, x *exchange, conn *jsonrpc.Conn) func() {
	if ps.req == nil || !ps.req.IsCall() {
		return nil
	}
	key := ps.session + " " + string(ps.req.ID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight[key] != nil {
		return nil
	}
	x.conn = conn
	h.inflight[key] = x
	return func() {
		h.mu.Lock()
		delete(h.inflight, key)
		h.mu.Unlock()
	}
}

// cancel cancels the legacy request id of session, if it is in progress:
// it is not answered, and its POST ends with 202.
func (h *HTTPHandler) cancel(session string, id json.RawMessage) {
	h.mu.Lock()
	x := h.inflight[session+" "+string(id)]
	h.mu.Unlock()
	if x != nil {
		x.cancel(id)
	}
}

// Read returns the message, then io.EOF once nothing more is owed, or
// once the client or the server has gone.
func (x *exchange) Read() (jsonrpc.Message, error) {
	if !x.read {
		x.read = true
		return x.ps.msg, nil
	}
	select {
	case <-x.done:
	case <-x.gone:
	}
	return jsonrpc.Message{}, io.EOF
}

// finish says that nothing more is owed.
func (x *exchange) finish() { x.doneOnce.Do(func() { close(x.done) }) }

// Write puts a message into the answer: the answer itself as JSON, or,
// for a request that sends notifications before its answer (a
// subscription), everything as events.
func (x *exchange) Write(v any) error {
	if _, ok := v.(*jsonrpc.Notification); !ok {
		defer x.finish()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errNoStream
	}
	if !x.started {
		x.start(v)
	}
	if x.sse != nil {
		return x.sse.message(v)
	}
	if _, ok := v.(*jsonrpc.Notification); ok {
		return errNoStream
	}
	b, err := jsonrpc.Marshal(v)
	if err != nil {
		return err
	}
	x.rc.SetWriteDeadline(time.Now().Add(writeWait))
	if _, err := x.w.Write(append(b, '\n')); err != nil {
		return err
	}
	// A line counts as written once it has left for the client, which is
	// what Respond waits for.
	return x.rc.Flush()
}

// start writes the answer's headers, before its first message.
func (x *exchange) start(v any) {
	x.started = true
	if resp, ok := v.(*jsonrpc.Response); ok && x.ps.req != nil && x.ps.req.Method == "initialize" {
		x.setSession(resp)
	}
	if x.ps.req != nil && x.ps.req.Method == "subscriptions/listen" {
		x.sse = startSSE(x.w)
		return
	}
	x.w.Header().Set("Content-Type", "application/json")
	status := http.StatusOK
	if resp, ok := v.(*jsonrpc.Response); ok && x.ps.modern && resp.Error != nil {
		status = errorStatus(resp.Error.Code)
	}
	x.w.WriteHeader(status)
}

// setSession gives the answer to initialize the id of the session it
// starts, which carries the revision it chose.
func (x *exchange) setSession(resp *jsonrpc.Response) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil && r.ProtocolVersion != "" {
		x.w.Header().Set(HeaderSession, x.h.newSession(r.ProtocolVersion))
	}
}

// cancel cancels the exchange's request: it is not answered.
func (x *exchange) cancel(id json.RawMessage) {
	if x.conn.Cancel(id) {
		x.finish()
	}
}

// errorStatus is the HTTP status of a 2026-07-28 error answered as JSON.
// That revision gives an error its status too, so that a client and
// anything between sees the failure without reading the body: 404 for a
// method the server does not have, 400 for a request it refuses as
// malformed (params, revision, headers). Other errors are 200.
func errorStatus(code int) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, CodeUnsupportedProtocolVersion, CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
