package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Handler answers one request. For a notification its return values are
// ignored. An error that is or wraps *Error keeps its code and message;
// any other becomes CodeInternalError. The result must encode as a JSON
// object; nil means {}.
//
// A handler that answers through Conn.Respond instead returns ErrAsync:
// one that waits (for mail, or for the end of a stream) starts the wait
// on a goroutine of its own and returns at once, so that the requests
// after it are not held up; one that must act only once its answer is out
// calls Respond before it returns.
//
// Handlers run one at a time, on the goroutine that reads: the message
// after a request is read only once its handler has returned, so a handler
// that waits must answer through Respond. The exception is a request that
// Options.Slow names, beside which notifications are handled. The context
// of a call
// ends when it is cancelled (Conn.Cancel), once it is answered and its
// handler has returned, and when Serve returns. When Serve stops reading,
// the calls still to be answered through Respond have their context
// cancelled with the cause ErrStopping: they should answer at once.
type Handler func(ctx context.Context, req *Request) (result any, err error)

// Errors of a Conn.
var (
	// ErrAsync is returned by a Handler that answers through Respond.
	ErrAsync = errors.New("jsonrpc: answered through Respond")
	// ErrClosed: Serve has returned, and nothing more is written.
	ErrClosed = errors.New("jsonrpc: connection closed")
	// ErrCancelled: the request was cancelled, or already answered.
	ErrCancelled = errors.New("jsonrpc: request cancelled")
	// ErrNotReading: the answer could not be written within a second;
	// the peer is not reading.
	ErrNotReading = errors.New("jsonrpc: the client is not reading its answers")
	// ErrBatchPending: a request of a batch is answered with the whole
	// array, which cannot go out before the requests after it have run.
	ErrBatchPending = errors.New("only the last request of a batch can be answered before the batch has run: send it last, or on its own")
	// ErrStopping is the cause given to the context of a call still to be
	// answered when the connection stops reading.
	ErrStopping = errors.New("jsonrpc: the connection stops reading")
)

// Errors the connection answers itself.
var (
	errNoBatch     = invalidRequest("JSON-RPC batching is not supported")
	errDuplicateID = invalidRequest("duplicate id of a request in progress")
	errPanic       = &Error{Code: CodeInternalError, Message: "Internal error: the handler panicked"}
)

// Options tune a Conn. The zero value is ready to use.
type Options struct {
	// Batch, when set, is asked, in message order, whether
	// a batch may run now; without it, or when it says no, a batch is
	// answered with one error and none of it runs.
	Batch func() bool
	// Slow, when set, names the requests whose handlers may take long:
	// those that touch files or other processes, and may wait for a lock
	// another process holds. Each runs on a goroutine of its own while
	// the connection reads on, so that a cancellation reaches it; the
	// request after it is handled once it has ended, so answers stay in
	// order, but the notifications that come meanwhile are handled at
	// once. Requests inside a batch are never slow.
	Slow func(req *Request) bool
	// Logf, when set, receives diagnostic lines.
	Logf func(format string, args ...any)
}

const (
	// grace bounds how long the requests read are still answered after
	// reading stops.
	grace = time.Second
	// writeWait bounds how long Respond waits for its answer to be written,
	// and how long Serve, when it returns, waits for a line being written.
	writeWait = time.Second
)

// Conn serves JSON-RPC on one Stream.
type Conn struct {
	st  Stream
	h   Handler
	opt Options

	// busy is held while a message is handled, so that Serve can wait
	// for the one being handled when reading stops.
	busy sync.Mutex
	// slow is closed when the slow request running aside ends; nil when
	// none runs. Only the reading goroutine uses it.
	slow chan struct{}
	// aside counts the slow requests running, for Serve to wait for.
	aside sync.WaitGroup

	// mu guards inflight, stopped and the state of each call. A request is
	// in flight from when it is read until its answer is committed or it
	// is cancelled: exactly the requests a duplicate id or a Cancel can
	// still refer to.
	mu       sync.Mutex
	inflight map[string]*call
	stopped  bool           // reading has stopped
	stopping chan struct{}  // closed when reading stops
	owed     sync.WaitGroup // calls whose handlers returned ErrAsync, not yet answered

	slot   chan struct{} // held while a message is written
	closed atomic.Bool   // set when Serve returns: nothing is written after it
	werr   error         // the first write error, under slot

	served atomic.Bool
}

// call is one request on its way from the reader to its answer.
type call struct {
	req    *Request
	key    string
	cancel context.CancelCauseFunc

	// Under Conn.mu:
	cancelled bool // Cancel reached it: answer nothing
	done      bool // its answer is committed, or it will never have one
	async     bool // its handler returned ErrAsync before it was answered

	batch *batch // the batch it is part of, or nil
	idx   int    // its place in the batch
}

// batch is a batch being handled. Its answer is one array, written when
// the last of its requests is answered. Its requests stay in flight until
// then, so that a Cancel that comes after one was answered still drops
// its answer.
type batch struct {
	answers []*Response // by element; nil for a notification
	calls   []*call     // by element; nil but for requests
	left    int         // requests not answered yet, under Conn.mu
	written bool        // the array has been claimed, under Conn.mu
}

// entry is one element of a message: an answer ready to go (to an invalid
// message), a notification, or a call.
type entry struct {
	resp *Response
	note *Request
	call *call
}

// unit is one message, ready to handle.
type unit struct {
	entries []entry
	batch   bool
}

// NewConn returns a Conn that reads messages from st, passes them to h and
// writes answers to st.
func NewConn(st Stream, h Handler, opt Options) *Conn {
	return &Conn{st: st, h: h, opt: opt, inflight: make(map[string]*call), slot: make(chan struct{}, 1), stopping: make(chan struct{})}
}

// Serve reads until the stream ends or ctx is done, and may be called once.
// Requests are handled one at a time, in arrival order, by the goroutine
// that reads them: the handoff to another goroutine would cost more than
// most requests take.
//
// When reading stops, the calls to be answered through Respond get
// ErrStopping, and the message being handled and the calls owed an
// answer are waited for up to a second,
// unless ctx was cancelled with a cause of its own (context.Cause), which
// means the peer is gone: then nothing is waited for. Serve then cancels
// the handlers still running and returns nil at the end of the stream,
// ctx.Err() after cancellation, or the read error.
//
// A Read cannot be interrupted: after ctx is cancelled the reader may stay
// blocked on an input that never ends, and exits, without acting on what
// it reads, once Read returns.
func (c *Conn) Serve(ctx context.Context) error {
	if c.served.Swap(true) {
		return errors.New("jsonrpc: Serve called twice")
	}
	hctx, halt := context.WithCancelCause(context.WithoutCancel(ctx))
	defer halt(ErrClosed)
	hctx = context.WithValue(hctx, stoppingKey{}, c.stopping)

	readDone := make(chan error, 1)
	go c.read(hctx, readDone)

	var err error
	select {
	case err = <-readDone:
		if err == io.EOF {
			err = nil
		} else if err != nil {
			err = fmt.Errorf("jsonrpc: read: %w", err)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.stopReading()
	if ctx.Err() == nil || errors.Is(context.Cause(ctx), context.Canceled) {
		c.finishWork()
	}
	c.close()
	return err
}

// stoppingKey is the context key of the channel Stopping returns.
type stoppingKey struct{}

// Stopping returns a channel closed when the connection that passed ctx
// to a handler stops reading: a handler that waits on its own goroutine
// (one answering through Respond) has its context cancelled with
// ErrStopping then, while one that waits on the reading goroutine, as
// inside a batch, watches this. nil (never closed) for a context of no connection.
func Stopping(ctx context.Context) <-chan struct{} {
	c, _ := ctx.Value(stoppingKey{}).(chan struct{})
	return c
}

// stopReading tells the calls still owed an answer through Respond to
// answer now.
func (c *Conn) stopReading() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	close(c.stopping)
	for _, cl := range c.inflight {
		if cl.async {
			cl.cancel(ErrStopping)
		}
	}
}

// finishWork waits up to the grace period for the message being handled
// and the calls owed an answer.
func (c *Conn) finishWork() {
	done := make(chan struct{})
	go func() {
		c.busy.Lock()
		c.busy.Unlock()
		c.aside.Wait()
		c.owed.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		c.logf("jsonrpc: gave up on unanswered requests after %v", grace)
	}
}

// close ends writing. A line still being written to a peer that does not
// read it gets the write wait to finish; after that it is left behind.
func (c *Conn) close() {
	c.closed.Store(true)
	// The calls still owed an answer will never get one out.
	c.mu.Lock()
	for _, cl := range c.inflight {
		if cl.async {
			c.settle(cl, nil)
		}
	}
	c.mu.Unlock()
	t := time.NewTimer(writeWait)
	defer t.Stop()
	select {
	case c.slot <- struct{}{}:
		<-c.slot
	case <-t.C:
		c.logf("jsonrpc: the peer is not reading: gave up on the answer being written after %v", writeWait)
	}
}

// read reads and handles messages until the stream ends or reading stops.
func (c *Conn) read(ctx context.Context, done chan<- error) {
	for {
		msg, err := c.st.Read()
		if !c.handle(ctx, msg, err) {
			done <- err
			return
		}
	}
}

// handle handles one message read, and reports false when reading is to
// stop: at a read error, or once Serve has stopped reading.
func (c *Conn) handle(ctx context.Context, msg Message, err error) bool {
	if err == nil && c.slow != nil && hasCall(msg) {
		<-c.slow // answers stay in order
		c.slow = nil
	}
	c.busy.Lock()
	defer c.busy.Unlock()
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped || err != nil || ctx.Err() != nil {
		return false
	}
	u, ok := c.accept(msg)
	switch {
	case !ok:
	case u.batch:
		c.runBatch(ctx, u.entries)
	case u.entries[0].call != nil && c.opt.Slow != nil && c.opt.Slow(u.entries[0].call.req):
		c.runAside(ctx, u.entries[0].call)
	default:
		c.runEntry(ctx, u.entries[0])
	}
	return true
}

// hasCall reports whether msg holds a request, valid or not: one that is
// answered, and so must wait for the answers before it.
func hasCall(msg Message) bool {
	for _, it := range msg.Items {
		if it.Request == nil || it.IsCall() {
			return true
		}
	}
	return false
}

// runAside runs a slow request on a goroutine of its own.
func (c *Conn) runAside(ctx context.Context, cl *call) {
	done := make(chan struct{})
	c.slow = done
	c.aside.Add(1)
	go func() {
		defer c.aside.Done()
		defer close(done)
		c.run(ctx, cl)
	}()
}

// accept registers the requests of a message, and reports false when
// there is nothing to do.
func (c *Conn) accept(msg Message) (unit, bool) {
	u := unit{batch: msg.Batch, entries: make([]entry, 0, len(msg.Items))}
	for _, it := range msg.Items {
		switch {
		case it.Err != nil && it.Request != nil:
			c.logf("jsonrpc: dropped notification %q: %s", it.Method, it.Err.Message)
		case it.Err != nil:
			c.logf("jsonrpc: %s", it.Err.Message)
			u.entries = append(u.entries, entry{resp: &Response{ID: c.freeID(it.ID), Error: it.Err}})
		case !it.IsCall():
			u.entries = append(u.entries, entry{note: it.Request})
		default:
			u.entries = append(u.entries, c.register(it.Request))
		}
	}
	return u, len(u.entries) > 0
}

// register puts a request in flight, or answers it when its id is taken:
// with id null, since with the original's id it would look like an answer
// to the original.
func (c *Conn) register(req *Request) entry {
	key := idKey(req.ID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.inflight[key]; dup {
		c.logf("jsonrpc: duplicate id %s", req.ID)
		return entry{resp: &Response{Error: errDuplicateID}}
	}
	cl := &call{req: req, key: key}
	c.inflight[key] = cl
	return entry{call: cl}
}

// freeID returns id, or nil when a request with the same id is in flight:
// an error with that id would look like the answer to it.
func (c *Conn) freeID(id json.RawMessage) json.RawMessage {
	if id == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.inflight[idKey(id)]; dup {
		return nil
	}
	return id
}

// runEntry handles one entry: sends its ready answer, runs its
// notification, or runs its call.
func (c *Conn) runEntry(ctx context.Context, e entry) {
	switch {
	case e.resp != nil:
		c.logDropped(c.send(false, func() (any, error) { return e.resp, nil }))
	case e.note != nil:
		c.invoke(ctx, e.note)
	default:
		c.run(ctx, e.call)
	}
}

// run runs the handler of one call and answers it with what the handler
// returns, unless the handler answers through Respond.
func (c *Conn) run(ctx context.Context, cl *call) {
	rctx, ok := c.start(ctx, cl)
	if !ok {
		return
	}
	result, err := c.invoke(rctx, cl.req)
	if errors.Is(err, ErrAsync) {
		c.answerLater(cl)
		return
	}
	defer cl.cancel(nil)
	err = c.answer(cl, result, err, false)
	if !errors.Is(err, errAnswered) {
		c.logDropped(err)
	}
}

// start gives a call its context just before its handler runs, and
// reports false when it was cancelled before that (inside a batch).
func (c *Conn) start(ctx context.Context, cl *call) (context.Context, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl.cancelled {
		c.settle(cl, nil)
		return nil, false
	}
	ctx, cl.cancel = context.WithCancelCause(ctx)
	return ctx, true
}

// answerLater records that a call's handler returned ErrAsync.
func (c *Conn) answerLater(cl *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case cl.done || cl.cancelled:
		cl.cancel(nil)
	case cl.batch != nil:
		// A batch's array cannot wait for an answer that comes later.
		c.logf("jsonrpc: %q inside a batch was not answered", cl.req.Method)
		cl.cancel(nil)
		c.settle(cl, nil)
	default:
		cl.async = true
		c.owed.Add(1)
		if c.stopped {
			cl.cancel(ErrStopping)
		}
	}
}

// Respond answers req, a call whose handler returned or will
// return ErrAsync, and returns once the answer is written: a handler may
// act on what it answered (mark a message read) only when Respond returns
// nil.
//
// It returns ErrCancelled when the call was cancelled or already
// answered, ErrClosed once Serve has returned, ErrBatchPending inside a
// batch whose other requests are not all answered, ErrNotReading when the
// line was not written within a second (it may still reach the peer, but
// the call counts as answered), or the write error. Only after
// ErrNotReading from a line that had not started, or ErrBatchPending, may
// the call be answered again.
func (c *Conn) Respond(req *Request, result any, err error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.mu.Lock()
	cl := c.inflight[idKey(req.ID)]
	c.mu.Unlock()
	// The id alone is not enough: once a call is cancelled its id is free,
	// and a new request may have taken it.
	if cl == nil || cl.req != req {
		return ErrCancelled
	}
	err = c.answer(cl, result, err, true)
	if errors.Is(err, errAnswered) {
		return ErrCancelled
	}
	return err
}

// errAnswered is answer's error for a call answered already.
var errAnswered = errors.New("jsonrpc: request already answered")

// answer commits and writes the answer to cl. With respond, as for
// Respond, the wait for the write is bounded and a batch's element may
// only answer once the others have.
func (c *Conn) answer(cl *call, result any, err error, respond bool) error {
	resp := c.response(cl.req.ID, result, err)
	if cl.batch != nil {
		return c.answerInBatch(cl, resp, respond)
	}
	// Checked before the wait for the write slot too, so that nothing
	// waits behind a line that is stuck for an answer that cannot go out.
	if err := c.answerable(cl); err != nil {
		return err
	}
	err = c.send(respond, func() (any, error) {
		if err := c.answerable(cl); err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.settle(cl, nil)
		return resp, nil
	})
	if err != nil && !errors.Is(err, ErrNotReading) {
		// Closed, or the stream broke: no answer can ever go out, so the
		// call is owed none.
		c.mu.Lock()
		c.settle(cl, nil)
		c.mu.Unlock()
	}
	return err
}

// answerable reports why cl may not be answered any more, if it may not.
func (c *Conn) answerable(cl *call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case cl.cancelled:
		return ErrCancelled
	case cl.done:
		return errAnswered
	}
	return nil
}

// settle marks cl as answered, or as never to be answered, and takes it
// out of flight. c.mu must be held.
func (c *Conn) settle(cl *call, resp *Response) {
	if cl.done {
		return
	}
	cl.done = true
	if cl.batch == nil && c.inflight[cl.key] == cl {
		delete(c.inflight, cl.key)
	}
	if cl.async {
		cl.async = false
		cl.cancel(nil)
		c.owed.Done()
	}
	if b := cl.batch; b != nil {
		if !cl.cancelled {
			b.answers[cl.idx] = resp
		}
		b.left--
	}
}

// Cancel drops the answer of the running or waiting request with this id,
// and cancels its handler's context; a request of a batch not yet run
// never runs.
// The id is free at once for a new request. Unknown ids, and requests
// already answered, are ignored: Cancel reports whether it found the
// request. It may be called from any goroutine.
func (c *Conn) Cancel(id json.RawMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.inflight[idKey(id)]
	if cl == nil {
		return false
	}
	cl.cancelled = true
	delete(c.inflight, cl.key)
	if cl.cancel != nil {
		cl.cancel(ErrCancelled)
	}
	if cl.async {
		c.settle(cl, nil)
	}
	return true
}

// Notify writes a notification. params is omitted when nil. It returns
// ErrClosed once Serve has returned.
func (c *Conn) Notify(method string, params any) error {
	return c.send(false, func() (any, error) {
		return &Notification{Method: method, Params: params}, nil
	})
}

// invoke calls the handler, turning a panic into an internal error so that
// one bad request does not end the connection.
func (c *Conn) invoke(ctx context.Context, req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.logf("jsonrpc: panic in handler for %q: %v\n%s", req.Method, p, debug.Stack())
			result, err = nil, errPanic
		}
	}()
	return c.h(ctx, req)
}

// response builds the answer to id from a handler's return values.
func (c *Conn) response(id json.RawMessage, result any, err error) *Response {
	if err == nil {
		raw, rerr := Result(result)
		if rerr == nil {
			return &Response{ID: id, Result: raw}
		}
		c.logf("jsonrpc: the result for id %s: %v", id, rerr)
		err = &Error{Code: CodeInternalError, Message: "Internal error: " + rerr.Error()}
	}
	e := wireError(err)
	if e.Data != nil {
		if _, derr := Marshal(e.Data); derr != nil {
			// Only the data can fail to encode; the code and message still matter.
			c.logf("jsonrpc: cannot encode the error data for id %s: %v", id, derr)
			e = &Error{Code: e.Code, Message: e.Message}
		}
	}
	return &Response{ID: id, Error: e}
}

// send writes what claim gives once the write slot is taken; an error from
// claim withdraws the write and is returned. With bounded, giving up
// after writeWait returns ErrNotReading.
func (c *Conn) send(bounded bool, claim func() (any, error)) error {
	if c.closed.Load() {
		return ErrClosed
	}
	var timeout <-chan time.Time
	if bounded {
		t := time.NewTimer(writeWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case c.slot <- struct{}{}:
	case <-timeout:
		return ErrNotReading
	}
	v, err := c.claim(claim)
	if err != nil || v == nil {
		<-c.slot
		return err
	}
	if !bounded {
		defer func() { <-c.slot }()
		return c.write(v)
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-c.slot }()
		done <- c.write(v)
	}()
	select {
	case err := <-done:
		return err
	case <-timeout:
		return ErrNotReading
	}
}

// claim asks for the value to write, once the slot is held.
func (c *Conn) claim(claim func() (any, error)) (any, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.werr != nil {
		return nil, c.werr
	}
	return claim()
}

// write writes v; the slot is held. After a failed write the peer cannot
// find where the next message starts, so nothing more is written.
func (c *Conn) write(v any) error {
	if err := c.st.Write(v); err != nil {
		c.werr = fmt.Errorf("jsonrpc: write: %w", err)
		return c.werr
	}
	return nil
}

// logDropped logs an answer that could not be written, except after Serve
// returned, which Serve has reported, or when it was cancelled.
func (c *Conn) logDropped(err error) {
	if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrCancelled) {
		c.logf("jsonrpc: dropped an answer: %v", err)
	}
}

// logf passes a diagnostic line to Options.Logf, if set.
func (c *Conn) logf(format string, args ...any) {
	if c.opt.Logf != nil {
		c.opt.Logf(format, args...)
	}
}

// idKey is the key of a request id in flight. Ids are echoed as they were
// written, but compared as JSON values: "a" and "\u0061" are the same
// string, and so the same id. Numbers are compared as written. A string
// with a lone surrogate escape, which decodes to U+FFFD, is kept as
// written, so that two different ones do not become one.
func idKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' && !LoneSurrogate(id) {
		if s, ok := StringValue(id); ok {
			return "s" + s
		}
	}
	return "v" + string(id)
}
