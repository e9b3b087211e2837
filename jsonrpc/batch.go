package jsonrpc

import "context"

// runBatch handles a batch: it runs each element in order, and the answer
// to the last of its requests writes the array.
func (c *Conn) runBatch(ctx context.Context, entries []entry) {
	if c.opt.Batch == nil || !c.opt.Batch() {
		c.mu.Lock()
		for _, e := range entries {
			if e.call != nil {
				delete(c.inflight, e.call.key)
			}
		}
		c.mu.Unlock()
		c.logf("jsonrpc: %s", errNoBatch.Message)
		c.logDropped(c.send(false, func() (any, error) { return &Response{Error: errNoBatch}, nil }))
		return
	}
	b := &batch{answers: make([]*Response, len(entries)), calls: make([]*call, len(entries))}
	c.mu.Lock()
	for i, e := range entries {
		b.answers[i] = e.resp
		if cl := e.call; cl != nil {
			cl.batch, cl.idx = b, i
			b.calls[i] = cl
			b.left++
		}
	}
	c.mu.Unlock()
	for _, e := range entries {
		if ctx.Err() != nil {
			return // Serve has given up; nothing more may run.
		}
		switch {
		case e.note != nil:
			c.invoke(ctx, e.note)
		case e.call != nil:
			c.run(ctx, e.call)
		}
	}
	// A batch whose requests were all cancelled before they ran, or that
	// holds none, is answered here if at all.
	c.logDropped(c.writeBatch(b, false))
}

// answerInBatch records the answer to cl, an element of a batch, and
// writes the array when it is the last one. With respond the answer must
// be the last, since its handler waits for it to be written.
func (c *Conn) answerInBatch(cl *call, resp *Response, respond bool) error {
	c.mu.Lock()
	if cl.done {
		c.mu.Unlock()
		return errAnswered
	}
	if respond && cl.batch.left > 1 {
		c.mu.Unlock()
		return ErrBatchPending
	}
	c.settle(cl, resp)
	cancelled := cl.cancelled
	c.mu.Unlock()
	err := c.writeBatch(cl.batch, respond)
	if err == nil && cancelled {
		return ErrCancelled
	}
	return err
}

// writeBatch writes the batch's array once every request is answered:
// the answers of those not cancelled. Nothing is written when there are
// none, or when the array was claimed already.
func (c *Conn) writeBatch(b *batch, bounded bool) error {
	c.mu.Lock()
	ready := b.left == 0 && !b.written
	c.mu.Unlock()
	if !ready {
		return nil
	}
	// The array is claimed only once the write slot is taken, so that a
	// write given up before that leaves it for the next try.
	return c.send(bounded, func() (any, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if b.written {
			return nil, nil
		}
		b.written = true
		var out []*Response
		for i, r := range b.answers {
			cl := b.calls[i]
			if cl != nil && c.inflight[cl.key] == cl {
				delete(c.inflight, cl.key)
			}
			if r != nil && (cl == nil || !cl.cancelled) {
				out = append(out, r)
			}
		}
		if out == nil {
			return nil, nil
		}
		return out, nil
	})
}
