package jsonrpc

import (
	"context"
	"errors"
	"io"
)

// NewExchange returns a Conn for Exchange: one that reads nothing, passes
// the message it is given to h and writes what it has to say to w.
func NewExchange(w io.Writer, h Handler, opt Options) *Conn {
	return newConn(nil, w, h, opt)
}

// Exchange handles the one message in frame (a request, a notification, a
// response from the peer or a batch) exactly as Serve handles one line, and
// writes what there is to say to the Conn's output: the notifications its
// handler sends and then its answer, each one line written in a single
// Write call. It is for transports that carry one message per exchange,
// such as an HTTP POST, where no stream runs from one message to the next.
//
// Exchange runs on the caller's goroutine and returns only once the
// handler has returned, a detached one included, since the exchange is
// over only when its answer is out. Reply works as under Serve: the answer
// goes to the output at once, and the handler acts only when it is
// written. The handler's context is derived from ctx, so it ends when ctx
// does (the client went away, say); an answer the handler has not given by
// then is not written.
//
// When Exchange returns, the Conn is closed: Notify returns ErrClosed,
// Stopping is closed, and nothing more is written, so the output may be
// released. Exchange may be called once, on a Conn from NewExchange.
func (c *Conn) Exchange(ctx context.Context, frame []byte) error {
	if c.served.Swap(true) {
		return errors.New("jsonrpc: the connection is already in use")
	}
	defer func() {
		// Taking the write lock waits for a line being written, by a
		// goroutine the handler started, before the output is given up.
		c.wmu.Lock()
		c.closed.Store(true)
		c.wmu.Unlock()
		close(c.stopping)
	}()
	cl := c.accept(frame)
	if cl == nil {
		return nil // a response from the peer, or a notification consumed by Preempt
	}
	c.handle(ctx, cl)
	c.detached.Wait()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.werr
}
