package jsonrpc

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a Conn. The zero value is ready to use.
type Options struct {
	// Preempt, when non-nil, is called on the reading goroutine for every
	// notification that arrives on its own line, before it is queued; if it
	// returns true the notification is consumed there and never reaches the
	// Handler. It exists for notifications that must act on work already
	// queued or running, such as a cancellation. It runs concurrently with
	// the Handler and must not block, since nothing is read meanwhile.
	// Notifications inside a batch are offered to Preempt on the worker
	// instead, when the batch runs, because a refused batch must run nothing.
	Preempt func(req *Request) bool

	// Batch, when non-nil, is called on the worker, in message order, when a
	// JSON array arrives; true means batches are acceptable right now. Being
	// called in order, it sees state set by earlier requests, such as the
	// protocol version chosen by an initialize. When Batch is nil or returns
	// false, the array gets one error, with id null and CodeInvalidRequest,
	// and none of its elements run.
	Batch func() bool

	// Logf, when non-nil, receives diagnostic lines: invalid messages,
	// dropped answers and recovered panics.
	Logf func(format string, args ...any)

	// MayDetach, when non-nil, marks the requests whose handlers may call
	// Detach: such a request runs on a goroutine of its own while the
	// worker waits for it to return or detach. Others run on the worker,
	// which saves a handoff per request, and cannot detach.
	MayDetach func(req *Request) bool

	// Grace bounds how long queued and running requests may still be
	// answered after the input ends or the context passed to Serve is
	// cancelled. Zero means one second; a negative value means no wait.
	Grace time.Duration
	// Abandon, when non-nil, is asked about the cause of the cancellation
	// of the context passed to Serve (context.Cause); true means nobody is
	// left to answer, and Serve returns without the grace period.
	Abandon func(cause error) bool
	// WriteWait bounds how long a line may take to be written to a peer
	// that is slow to read it: how long Reply waits before it gives up,
	// and how long Serve, when it returns, waits for a line still being
	// written. Zero means one second.
	WriteWait time.Duration
}

// queueLen is how many messages may wait for the worker before the reader
// stops reading. It is large enough that a client never has to wait in
// practice, and bounded so a flood cannot claim unbounded memory.
const queueLen = 1024

// Errors the connection itself answers with.
var (
	errTooLarge      = invalidRequest("message exceeds the " + maxFrameText + "-byte line limit; split it into several smaller messages")
	errEmptyBatch    = invalidRequest("empty batch")
	errNoBatch       = invalidRequest("JSON-RPC batching is not supported")
	errDuplicateID   = invalidRequest("duplicate id of a request in progress")
	errPanic         = &Error{Code: CodeInternalError, Message: "Internal error: the handler panicked"}
	errBadResult     = &Error{Code: CodeInternalError, Message: "Internal error: the result is not a JSON object"}
	errEncodedResult = &Error{Code: CodeInternalError, Message: "Internal error: the result cannot be encoded"}
)

// Conn serves JSON-RPC on one input and one output stream.
type Conn struct {
	r   *Reader
	w   io.Writer
	h   Handler
	opt Options

	// mu guards inflight and the cancel and cancelled fields of the calls
	// in it. Requests enter the map when they are read and leave it when
	// their answer is committed or they are cancelled, so the map holds
	// exactly the requests a duplicate id or a Cancel can still refer to.
	mu       sync.Mutex
	inflight map[string]*call

	wmu    sync.Mutex  // serialises writes so that each line goes out whole
	closed atomic.Bool // set when Serve is returning: no line starts after it
	werr   error       // the first write error, under wmu; the stream is unusable after it

	// ans belongs to the worker goroutine, which handles every call but
	// those that run concurrently; it is reused for every answer.
	ans *answer
	// detached counts the requests whose handlers called Detach and have
	// not returned; Serve waits for them as for the worker.
	detached sync.WaitGroup

	served   atomic.Bool   // Serve has been called
	stopping chan struct{} // closed when Serve stops reading
}

// answer is where one goroutine builds answer lines: the worker's, or a
// concurrent request's own. The encoder does not escape HTML, so "<"
// stays "<" on the wire.
type answer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newAnswer() *answer {
	a := &answer{}
	// Sized for a typical answer, such as the tool list of an MCP server,
	// so that it does not grow through every size on the way.
	a.buf.Grow(4 << 10)
	a.enc = json.NewEncoder(&a.buf)
	a.enc.SetEscapeHTML(false)
	return a
}

// call is one message on its way from the reader to the worker.
type call struct {
	req   Request
	key   string          // string(req.ID) when the request is in Conn.inflight
	err   *Error          // when set, the message was invalid and err is its whole answer
	errID json.RawMessage // the id to echo with err; nil means null

	isBatch bool
	batch   []*call // the elements of a batch that need handling, in order

	cancel    context.CancelFunc // set when the handler starts
	cancelled bool               // Cancel was called: run nothing more and answer nothing
	replied   bool               // the handler answered through Reply; its return values are not sent
	hctx      handlerContext     // the handler's context before its cancel, for Reply

	run *batchRun // for an element of a batch: the batch, whose element idx it is
	idx int

	ans *answer // where the goroutine running the request builds its answers

	// detach is closed by Detach; nil for a request that cannot detach
	// (an element of a batch). Only the handler's goroutine touches it.
	detach     chan struct{}
	isDetached bool
}

// batchRun is a batch being handled: its elements and the answers they have
// so far, each one JSON object without a newline.
type batchRun struct {
	calls   []*call
	answers [][]byte
	written bool // Reply committed the array; under Conn.mu
}

// array renders the answers of the elements not cancelled as one line, or
// returns nil when there are none. c.mu must be held.
func (b *batchRun) array() []byte {
	var line []byte
	for i, a := range b.answers {
		if a == nil || b.calls[i].cancelled {
			continue
		}
		if line == nil {
			line = append(line, '[')
		} else {
			line = append(line, ',')
		}
		line = append(line, a...)
	}
	if line == nil {
		return nil
	}
	return append(line, ']', '\n')
}

// forgetAll removes every element of the batch from inflight. c.mu must be
// held.
func (c *Conn) forgetAll(b *batchRun) {
	for _, e := range b.calls {
		c.forget(e)
	}
}

// handlerContext is the context a request's handler runs under, before
// Serve adds its cancel: it carries the call for Reply without an
// allocation of its own.
type handlerContext struct {
	context.Context
	c  *Conn
	cl *call
}

func (h *handlerContext) Value(key any) any {
	if key == (replyKey{}) {
		return h
	}
	return h.Context.Value(key)
}

// NewConn returns a Conn that reads messages from r, passes them to h and
// writes answers to w.
func NewConn(r io.Reader, w io.Writer, h Handler, opt Options) *Conn {
	return newConn(NewReader(r), w, h, opt)
}

func newConn(r *Reader, w io.Writer, h Handler, opt Options) *Conn {
	c := &Conn{
		r:        r,
		w:        w,
		h:        h,
		opt:      opt,
		inflight: make(map[string]*call),
		stopping: make(chan struct{}),
	}
	c.ans = newAnswer()
	return c
}

// Serve reads until EOF or ctx is done. It may be called only once; a second
// call returns an error at once.
// Requests are handled one at a time, in arrival order, by a single worker
// goroutine, so answers come out in order, while one reader goroutine keeps
// reading, so cancellation and duplicate-id checks see work that is queued
// or running.
//
// On EOF, or when ctx is done, Serve stops reading and lets the requests
// already read finish and be answered for up to Options.Grace. Then it
// cancels the contexts of handlers still running, discards their answers and
// returns nil after EOF, ctx.Err() after cancellation, or the read error. It
// never starts a line after it returns; a line it finds still being written
// to a peer that has not read it within Options.WriteWait is left
// unfinished. When Options.Abandon says of the cause of ctx's cancellation
// that the peer is gone, no request is waited for.
//
// A request is in progress from the moment it is read until its answer is
// committed or it is cancelled; a request arriving meanwhile with the same
// id is answered with CodeInvalidRequest and id null, and the original is
// unaffected. The elements of a batch are in progress from when the array is
// read, even while Options.Batch has yet to decide on it. When queueLen
// (1024) messages are waiting for the worker, the reader pauses until one is
// taken.
//
// The handlers' contexts carry ctx's values but are not cancelled with it,
// so that a shutdown lets them finish within the grace period.
//
// A Read cannot be interrupted, so after ctx is cancelled the reader
// goroutine may stay blocked in Read on an input that never ends; it exits,
// without acting on what it reads, once Read returns. The process is expected
// to exit or close the input. A handler that ignores its context likewise
// keeps the worker goroutine until it returns.
func (c *Conn) Serve(ctx context.Context) error {
	if c.served.Swap(true) {
		return errors.New("jsonrpc: Serve called twice")
	}
	hctx, halt := context.WithCancel(context.WithoutCancel(ctx))
	defer halt()

	queue := make(chan *call, queueLen)
	stop := make(chan struct{}) // closed when reading must stop early
	readDone := make(chan error, 1)
	workDone := make(chan struct{})
	go c.read(queue, stop, readDone)
	go c.work(hctx, queue, stop, workDone)

	var err error
	select {
	case err = <-readDone:
		if err == io.EOF {
			err = nil
		} else if err != nil {
			err = fmt.Errorf("jsonrpc: read: %w", err)
		}
	case <-ctx.Done():
		close(stop)
		err = ctx.Err()
	}
	close(c.stopping)

	grace := c.opt.Grace
	if grace == 0 {
		grace = time.Second
	}
	abandon := ctx.Err() != nil && c.opt.Abandon != nil && c.opt.Abandon(context.Cause(ctx))
	if grace > 0 && !abandon {
		t := time.NewTimer(grace)
		select {
		case <-workDone:
		case <-t.C:
			c.logf("jsonrpc: gave up on unanswered requests after %v", grace)
		}
		t.Stop()
	}

	// Close the output before cancelling the handlers, so that no answer
	// produced by the cancellation can slip out. A line already being
	// written to a peer that does not read is given the write wait to
	// finish; after that Serve returns anyway.
	c.closed.Store(true)
	idle := make(chan struct{})
	go func() {
		c.wmu.Lock()
		c.wmu.Unlock()
		close(idle)
	}()
	t := time.NewTimer(c.writeWait())
	select {
	case <-idle:
	case <-t.C:
		c.logf("jsonrpc: the peer is not reading: gave up on the answer being written after %v", c.writeWait())
	}
	t.Stop()
	halt()
	return err
}

// Stopping is closed when Serve stops reading, at the end of the input or
// when its context is done: a handler that would otherwise wait for
// something that cannot come any more (the next message of a stream, say)
// then returns, and its answer goes out within the grace period.
func (c *Conn) Stopping() <-chan struct{} { return c.stopping }

func (c *Conn) writeWait() time.Duration { return cmp.Or(c.opt.WriteWait, time.Second) }

// Cancel drops the answer of the queued or running request with this id
// (the same id: see idKey) and cancels the context passed to its handler; a request
// still queued never runs. The id is free for a new request at once, since
// the cancelled one can no longer be answered. Unknown ids, and requests
// already answered, are ignored. Cancel may be called from any goroutine,
// including Preempt and handlers.
func (c *Conn) Cancel(id json.RawMessage) {
	c.mu.Lock()
	cl := c.inflight[idKey(id)]
	if cl == nil {
		c.mu.Unlock()
		return
	}
	cl.cancelled = true
	c.forget(cl)
	cancel := cl.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Notify writes a notification line. params is omitted when nil. It returns
// ErrClosed once Serve has returned.
func (c *Conn) Notify(method string, params any) error {
	var buf bytes.Buffer
	buf.Write(AppendString([]byte(`{"jsonrpc":"2.0","method":`), method))
	if params != nil {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		buf.WriteString(`,"params":`)
		if err := enc.Encode(params); err != nil {
			return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteString("}\n")
	return c.write(buf.Bytes(), nil)
}

// read runs on the reader goroutine. It decodes each frame, registers
// requests in inflight and queues what the worker must do. It sends its
// final error on done and closes queue when it stops.
func (c *Conn) read(queue chan<- *call, stop <-chan struct{}, done chan<- error) {
	defer close(queue)
	for {
		frame, err := c.r.Next()
		select {
		case <-stop:
			done <- nil
			return
		default:
		}
		var cl *call
		var tooLarge *TooLargeError
		switch {
		case err == nil:
			cl = c.accept(frame)
		case errors.As(err, &tooLarge):
			c.logf("%v", err)
			cl = &call{err: errTooLarge, errID: c.freeID(tooLarge.ID)}
		default:
			done <- err
			return
		}
		if cl == nil {
			continue
		}
		select {
		case queue <- cl:
		case <-stop:
			done <- nil
			return
		}
		// The next read may block in the kernel, keeping this thread and
		// its processor: the worker, just woken, would wait for the
		// scheduler to notice before it could run. Yielding first lets it
		// start the call on this thread at once.
		runtime.Gosched()
	}
}

// accept turns one frame into the call the worker must handle, or nil when
// there is nothing to do.
func (c *Conn) accept(frame []byte) *call {
	if err := checkJSON(frame); err != nil {
		c.logf("jsonrpc: %s", err.Message)
		return &call{err: err}
	}
	if i := skipSpace(frame, 0); frame[i] != '[' {
		return c.acceptOne(frame, false)
	}
	elems := splitArray(frame)
	if len(elems) == 0 {
		c.logf("jsonrpc: %s", errEmptyBatch.Message)
		return &call{err: errEmptyBatch}
	}
	b := &call{isBatch: true, batch: make([]*call, 0, len(elems))}
	for _, e := range elems {
		if cl := c.acceptOne(e, true); cl != nil {
			b.batch = append(b.batch, cl)
		}
	}
	return b
}

// acceptOne decodes one message, on its own line or inside a batch.
func (c *Conn) acceptOne(b []byte, inBatch bool) *call {
	cl := new(call)
	id, isResponse, err := decodeObject(&cl.req, b, inBatch)
	switch {
	case err == errNotificationParams:
		// A notification with invalid params: never answered (JSON-RPC
		// 2.0 §4.1, and MCP), and not acted on either.
		c.logf("jsonrpc: dropped notification %q: %s", cl.req.Method, err.Message)
		return nil
	case err != nil:
		c.logf("jsonrpc: %s", err.Message)
		cl.err, cl.errID = err, id
		return cl
	case isResponse:
		return nil
	case cl.req.ID == nil:
		if !inBatch && c.opt.Preempt != nil && c.opt.Preempt(&cl.req) {
			return nil
		}
		return cl
	}
	key := idKey(cl.req.ID)
	c.mu.Lock()
	_, dup := c.inflight[key]
	if !dup {
		cl.key = key
		c.inflight[key] = cl
	}
	c.mu.Unlock()
	if dup {
		// The answer carries id null: with the original's id it would look
		// like an answer to the original.
		c.logf("jsonrpc: duplicate id %s", cl.req.ID)
		return &call{err: errDuplicateID}
	}
	return cl
}

// freeID returns id, or nil when a request with the same id is in
// progress: an error with that id would look like the answer to it.
func (c *Conn) freeID(id json.RawMessage) json.RawMessage {
	if id == nil {
		return nil
	}
	c.mu.Lock()
	_, dup := c.inflight[idKey(id)]
	c.mu.Unlock()
	if dup {
		return nil
	}
	return id
}

// work runs on the worker goroutine and handles queued calls in order until
// the queue is closed, or is empty after stop, or ctx is cancelled.
func (c *Conn) work(ctx context.Context, queue <-chan *call, stop <-chan struct{}, done chan<- struct{}) {
	defer func() {
		c.detached.Wait()
		close(done)
	}()
	for {
		var cl *call
		var ok bool
		select {
		case cl, ok = <-queue:
		case <-stop:
			select {
			case cl, ok = <-queue:
			default:
			}
		}
		if !ok || ctx.Err() != nil {
			return
		}
		c.handle(ctx, cl)
	}
}

// handle answers cl: its error, its batch, its notification or its request.
func (c *Conn) handle(ctx context.Context, cl *call) {
	a := c.ans
	switch {
	case cl.err != nil:
		a.buf.Reset()
		c.appendError(a, cl.errID, cl.err)
		c.writeOut(a)
	case cl.isBatch:
		c.runBatch(ctx, cl)
	case cl.req.ID == nil:
		c.invoke(ctx, &cl.req)
	case c.opt.MayDetach == nil || !c.opt.MayDetach(&cl.req):
		cl.ans = a
		c.runRequest(ctx, cl)
	default:
		// The handler runs on a goroutine of its own, and the worker
		// waits for it to return or to call Detach.
		cl.ans = a
		cl.detach = make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.runRequest(ctx, cl)
		}()
		select {
		case <-done:
		case <-cl.detach:
		}
	}
}

// runRequest handles one request that arrived on its own line.
func (c *Conn) runRequest(ctx context.Context, cl *call) {
	defer func() {
		if cl.isDetached {
			c.detached.Done()
		}
	}()
	rctx, ok := c.start(ctx, cl)
	if !ok {
		return
	}
	result, err := c.invoke(rctx, &cl.req)
	cl.cancel()
	if cl.replied {
		if err != nil {
			c.logf("jsonrpc: %q failed after it was answered: %v", cl.req.Method, err)
		}
		return
	}
	if !c.commit(cl) {
		return
	}
	a := cl.ans
	a.buf.Reset()
	c.appendAnswer(a, cl.req.ID, result, err)
	c.writeOut(a)
}

// runBatch handles a batch: it runs each element in order and writes the
// answers to its requests as one array, unless the last request's handler
// has written it through Reply.
func (c *Conn) runBatch(ctx context.Context, b *call) {
	a := c.ans
	if c.opt.Batch == nil || !c.opt.Batch() {
		c.mu.Lock()
		for _, e := range b.batch {
			c.forget(e)
		}
		c.mu.Unlock()
		c.logf("jsonrpc: %s", errNoBatch.Message)
		a.buf.Reset()
		c.appendError(a, nil, errNoBatch)
		c.writeOut(a)
		return
	}

	run := &batchRun{calls: b.batch, answers: make([][]byte, len(b.batch))}
	// Invalid elements are answered first, so that an array written by
	// Reply holds their answers too.
	for i, e := range b.batch {
		if e.err != nil {
			a.buf.Reset()
			c.appendError(a, e.errID, e.err)
			run.answers[i] = bytes.Clone(a.buf.Bytes())
		}
	}
	for i, e := range b.batch {
		if ctx.Err() != nil {
			break // Serve has given up; nothing more may run.
		}
		switch {
		case e.err != nil:
		case e.req.ID == nil:
			if c.opt.Preempt == nil || !c.opt.Preempt(&e.req) {
				c.invoke(ctx, &e.req)
			}
		default:
			e.run, e.idx, e.ans = run, i, a
			rctx, ok := c.start(ctx, e)
			if !ok {
				continue
			}
			result, err := c.invoke(rctx, &e.req)
			e.cancel()
			if e.replied {
				if err != nil {
					c.logf("jsonrpc: %q failed after it was answered: %v", e.req.Method, err)
				}
				continue
			}
			a.buf.Reset()
			c.appendAnswer(a, e.req.ID, result, err)
			run.answers[i] = bytes.Clone(a.buf.Bytes())
		}
	}
	// The requests stay in flight until the whole array is committed, so a
	// Cancel that arrives after an element finished still drops its answer.
	c.mu.Lock()
	if run.written {
		c.mu.Unlock()
		return // Reply committed the array and forgot the elements.
	}
	line := run.array()
	c.forgetAll(run)
	c.mu.Unlock()
	if line == nil {
		return // only notifications, or everything was cancelled
	}
	if err := c.write(line, nil); err != nil && !errors.Is(err, ErrClosed) {
		c.logf("jsonrpc: dropped an answer: %v", err)
	}
}

// start gives a request its own cancellable context just before its handler
// runs, carrying what Reply needs. It reports false, and forgets the
// request, if it was cancelled while queued.
func (c *Conn) start(ctx context.Context, cl *call) (context.Context, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl.cancelled {
		c.forget(cl)
		return nil, false
	}
	cl.hctx = handlerContext{Context: ctx, c: c, cl: cl}
	ctx, cl.cancel = context.WithCancel(&cl.hctx)
	return ctx, true
}

// replyKey is the context key under which a request's handler finds its
// call, for Reply.
type replyKey struct{}

// ErrCancelled is returned by Reply for a request that was cancelled: it
// must not be answered.
var ErrCancelled = errors.New("jsonrpc: request cancelled")

// ErrNotLastInBatch is returned by Reply for a request inside a batch that
// other requests follow: it cannot be answered before they have run.
var ErrNotLastInBatch = errors.New("jsonrpc: only the last request of a batch can be answered before its handler returns")

// ErrNotReading is returned by Reply when its line is not written within
// the write wait (Options.WriteWait): the peer is not reading. The answer
// counts as not given. A line that had not started yet is withdrawn, and
// the handler's own return values are sent instead; one that had started
// may still reach the peer, which is then answered although the handler
// was told otherwise: a handler that marks a message read leaves it unread,
// so it may come twice but is never lost.
var ErrNotReading = errors.New("jsonrpc: the client is not reading its answers")

// Reply answers the request whose handler was given ctx at once, with
// result, instead of when the handler returns; what the handler then
// returns is not sent (an error is logged), unless Reply returned
// ErrNotReading. It is for handlers that must
// not act until their answer is out, such as one that marks a message
// read: if Reply fails, the peer has not been answered.
//
// Reply returns ErrCancelled when the request was cancelled, before the
// answer started out, ErrClosed after Serve has returned, the write error when the line could not be
// written, ErrNotReading when it was not written within the write wait,
// and nil once it is written.
//
// A batch is answered with one array. Reply by the handler of its last
// request writes that array, with the answers of the elements before it;
// the notifications after it run once the handler returns. Reply by an
// earlier element returns ErrNotLastInBatch, since the array cannot go out
// before the requests after it have run; that element is then answered
// with its handler's return values, in the array, as usual.
//
// Reply must be called on the handler's goroutine, at most once.
func Reply(ctx context.Context, result any) error {
	h, ok := ctx.Value(replyKey{}).(*handlerContext)
	if !ok {
		return errors.New("jsonrpc: Reply called outside a request handler")
	}
	return h.c.reply(ctx, h.cl, result)
}

// Detach lets the worker go on to the next request while the handler that
// was given ctx keeps running: for a handler that is about to wait for
// something to happen (mail to arrive, the end of a stream), which would
// otherwise hold up every request after it. What the handler wrote before
// it detached (a notification, say) stays ahead of the answers to later
// requests; its own answer goes out when it returns, possibly after them,
// as JSON-RPC allows. Only a request that Options.MayDetach marks can
// detach; inside a batch none can. Detach otherwise returns false and the
// handler goes on holding up the worker.
//
// Detach must be called on the handler's goroutine; calling it again does
// nothing.
func Detach(ctx context.Context) bool {
	h, ok := ctx.Value(replyKey{}).(*handlerContext)
	if !ok {
		return false
	}
	cl := h.cl
	if cl.detach == nil {
		return false
	}
	if !cl.isDetached {
		cl.isDetached = true
		// The worker reuses its answer buffer for the next request.
		cl.ans = newAnswer()
		h.c.detached.Add(1)
		close(cl.detach)
	}
	return true
}

// The states of an answer given through Reply.
const (
	replyWaiting   int32 = iota // for its turn to be written
	replyDecided                // its turn came: it was committed and started out, or it was found cancelled
	replyWithdrawn              // given up before its turn came
)

func (c *Conn) reply(ctx context.Context, cl *call, result any) error {
	if cl.replied {
		return errors.New("jsonrpc: request already answered")
	}
	if run := cl.run; run != nil {
		for _, e := range run.calls[cl.idx+1:] {
			if e.err == nil && e.req.ID != nil {
				return ErrNotLastInBatch
			}
		}
	}
	if c.isCancelled(cl) {
		return ErrCancelled
	}
	cl.replied = true
	// The handler's goroutine owns its answer buffer; the answer is copied
	// because the write may outlive this call.
	a := cl.ans
	a.buf.Reset()
	c.appendAnswer(a, cl.req.ID, result, nil)
	answer := bytes.Clone(a.buf.Bytes())
	// The request stays in progress until its line's turn comes: until
	// then a Cancel still withdraws the answer and its id stays taken,
	// and if the answer is withdrawn it stays so until the handler's own
	// answer is committed. A batch's array is put together only then, so
	// that it leaves out the elements cancelled until that moment.
	var state atomic.Int32
	claim := func() ([]byte, error) {
		if !state.CompareAndSwap(replyWaiting, replyDecided) {
			return nil, ErrNotReading
		}
		if cl.run == nil {
			if !c.commit(cl) {
				return nil, ErrCancelled
			}
			return append(answer, '\n'), nil
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if cl.cancelled {
			return nil, ErrCancelled
		}
		cl.run.answers[cl.idx] = answer
		cl.run.written = true
		c.forgetAll(cl.run)
		return cl.run.array(), nil
	}
	done := make(chan error, 1)
	go func() { done <- c.write(nil, claim) }()
	t := time.NewTimer(c.writeWait())
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-t.C:
	}
	if !state.CompareAndSwap(replyWaiting, replyWithdrawn) {
		// The line's turn came as the wait ended. It may be written
		// already, or the request was found cancelled: say so if the
		// write has returned. Otherwise it has started and may yet
		// reach the peer; either way the handler's own answer must not
		// follow it.
		select {
		case err := <-done:
			return err
		default:
			return ErrNotReading
		}
	}
	cl.replied = false
	if ctx.Err() == nil {
		return ErrNotReading
	}
	if c.isCancelled(cl) {
		return ErrCancelled
	}
	return ErrClosed
}

// isCancelled reports whether Cancel has reached cl.
func (c *Conn) isCancelled(cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cl.cancelled
}

// commit removes a finished request from inflight and reports whether it
// must still be answered. Once it is removed a Cancel no longer finds it,
// so this is the point at which the answer is decided.
func (c *Conn) commit(cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(cl)
	return !cl.cancelled
}

// idKey is the key of a request id in inflight. Ids are echoed as they
// were written, but compared as JSON values: "a" and "\u0061" are the same
// string, and so the same id. Numbers are compared as written; JSON-RPC
// ids should hold no fraction or exponent. A string with a lone surrogate
// escape, which decodes to U+FFFD, is kept as written too, so that two
// different ones do not become one.
func idKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' && !LoneSurrogate(id) {
		if s, ok := StringValue(id); ok {
			return "s" + s
		}
	}
	return "v" + string(id)
}

// forget removes cl from inflight if it is there. c.mu must be held.
func (c *Conn) forget(cl *call) {
	if cl.key != "" && c.inflight[cl.key] == cl {
		delete(c.inflight, cl.key)
	}
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

// appendAnswer appends the response object for a handler's return values to
// a.buf, without a newline. The envelope is written by hand so that the id
// bytes go out exactly as received and the keys keep a fixed order.
func (c *Conn) appendAnswer(a *answer, id json.RawMessage, result any, err error) {
	if err != nil {
		c.appendError(a, id, toError(err))
		return
	}
	start := a.buf.Len()
	c.appendHead(a, id)
	a.buf.WriteString(`,"result":`)
	if result == nil {
		a.buf.WriteString("{}}")
		return
	}
	// A pre-encoded object goes out as it is, saving a validating copy on
	// every answer; one with a line break still goes through the encoder,
	// which compacts it, so it cannot split the frame.
	if raw, ok := result.(json.RawMessage); ok && len(raw) > 1 && raw[0] == '{' && bytes.IndexByte(raw, '\n') < 0 {
		a.buf.Write(raw)
		a.buf.WriteByte('}')
		return
	}
	mark := a.buf.Len()
	if err := a.enc.Encode(result); err != nil {
		a.buf.Truncate(start)
		c.logf("jsonrpc: cannot encode the result for id %s: %v", idText(id), err)
		c.appendError(a, id, errEncodedResult)
		return
	}
	a.buf.Truncate(a.buf.Len() - 1) // the newline Encode adds
	switch a.buf.Bytes()[mark] {
	case '{':
	case 'n':
		// A nil map or pointer; it means "nothing to say", like a nil result.
		a.buf.Truncate(mark)
		a.buf.WriteString("{}")
	default:
		a.buf.Truncate(start)
		c.logf("jsonrpc: the result for id %s is not a JSON object", idText(id))
		c.appendError(a, id, errBadResult)
		return
	}
	a.buf.WriteByte('}')
}

// wireError is the JSON form of an Error.
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// appendError appends an error response object to a.buf, without a newline.
func (c *Conn) appendError(a *answer, id json.RawMessage, e *Error) {
	c.appendHead(a, id)
	a.buf.WriteString(`,"error":`)
	mark := a.buf.Len()
	w := &wireError{Code: e.Code, Message: e.Message, Data: e.Data}
	if err := a.enc.Encode(w); err != nil {
		// Only Data can fail to encode; the code and message still matter.
		a.buf.Truncate(mark)
		c.logf("jsonrpc: cannot encode the error data for id %s: %v", idText(id), err)
		w.Data = nil
		a.enc.Encode(w)
	}
	a.buf.Truncate(a.buf.Len() - 1) // the newline Encode adds
	a.buf.WriteByte('}')
}

// appendHead appends the start of a response object, up to the id.
func (c *Conn) appendHead(a *answer, id json.RawMessage) {
	a.buf.WriteString(`{"jsonrpc":"2.0","id":`)
	if id == nil {
		a.buf.WriteString("null")
	} else {
		a.buf.Write(id)
	}
}

// writeOut ends the message in a.buf with a newline and writes it.
func (c *Conn) writeOut(a *answer) {
	a.buf.WriteByte('\n')
	// An answer finished after Serve returned is dropped by design, without
	// a word: Serve has said what it gave up on.
	if err := c.write(a.buf.Bytes(), nil); err != nil && !errors.Is(err, ErrClosed) {
		c.logf("jsonrpc: dropped an answer: %v", err)
	}
}

// write sends one line in a single Write call, so that lines from the worker
// and from Notify never interleave. claim, when non-nil, is asked once the
// line's turn has come and gives the line instead; an error withdraws the
// line and is returned.
func (c *Conn) write(line []byte, claim func() ([]byte, error)) error {
	// Checked before waiting too, so that nothing queues behind a line
	// that Serve gave up on.
	if c.closed.Load() {
		return ErrClosed
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	if claim != nil {
		var err error
		if line, err = claim(); err != nil {
			return err
		}
	}
	if c.werr != nil {
		return c.werr
	}
	if _, err := c.w.Write(line); err != nil {
		// After a failed or partial write the peer cannot find where the
		// next line starts, so stop writing altogether.
		c.werr = fmt.Errorf("jsonrpc: write: %w", err)
		return c.werr
	}
	return nil
}

// logf passes a diagnostic line to Options.Logf, if set.
func (c *Conn) logf(format string, args ...any) {
	if c.opt.Logf != nil {
		c.opt.Logf(format, args...)
	}
}

// idText renders an id for a log line.
func idText(id json.RawMessage) string {
	if id == nil {
		return "null"
	}
	return string(id)
}
