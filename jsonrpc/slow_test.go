package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"agentmail/jsonrpc"
)

// aside is a handler whose method "hold" is slow (Options.Slow): it
// reports that it runs, then waits for release or for its context to end,
// whose cause it reports. The notification "cancel" cancels the request
// its params name. Other methods go to testHandler.
type aside struct {
	conn    *jsonrpc.Conn
	started chan struct{}
	release chan struct{}
	ended   chan error
	found   chan bool
}

func newAside() *aside {
	return &aside{started: make(chan struct{}, 4), release: make(chan struct{}), ended: make(chan error, 4), found: make(chan bool, 4)}
}

func (a *aside) slow(req *jsonrpc.Request) bool { return req.Method == "hold" }

func (a *aside) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case "hold":
		a.started <- struct{}{}
		select {
		case <-a.release:
			return map[string]string{"held": "done"}, nil
		case <-ctx.Done():
			a.ended <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	case "cancel":
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			panic(err)
		}
		a.found <- a.conn.Cancel(p.ID)
		return nil, nil
	}
	return testHandler(ctx, req)
}

func startAside(t *testing.T) (*aside, *pipeConn) {
	a := newAside()
	p := startPipe(t, context.Background(), a.handle, jsonrpc.Options{Slow: a.slow})
	a.conn = p.conn
	return a, p
}

// TestSlowCancelled checks that a cancellation that comes while a slow
// request runs reaches it: its context ends with ErrCancelled, it is not
// answered, and the requests after it are served.
func TestSlowCancelled(t *testing.T) {
	a, p := startAside(t)
	p.send(call("1", "hold"))
	recv(t, a.started, "the slow request")
	p.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":1}}`)
	if !recv(t, a.found, "the cancel") {
		t.Fatal("Cancel did not find the slow request")
	}
	if err := recv(t, a.ended, "the slow request to end"); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("the slow request's context ended with %v, want ErrCancelled", err)
	}
	p.send(ping)
	checkLines(t, p.finish(), []string{pong})
}

// TestSlowKeepsOrder checks that the request after a slow one, and an
// invalid message that is answered, wait for it: answers leave in the
// order of the requests. A request reusing the slow one's id is read only
// once the slow one is answered, so it is no duplicate.
func TestSlowKeepsOrder(t *testing.T) {
	a, p := startAside(t)
	p.send(call("1", "hold"))
	recv(t, a.started, "the slow request")
	// The pipe's Write returns once the line is read: the invalid line is
	// read while the slow request runs, and so is the ping, the moment it
	// is written; neither can be handled before the release.
	p.send(`{"jsonrpc":"2.0","id":2,"method":`)
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(p.in, call("1", "ping")+"\n")
		sent <- err
	}()
	close(a.release)
	if err := recv(t, sent, "the ping to be read"); err != nil {
		t.Fatal(err)
	}
	checkLines(t, p.finish(), []string{
		answer("1", `{"held":"done"}`),
		parseErr,
		answer("1", `{}`),
	})
}

// TestSlowEndOfInput checks that Serve, at the end of its input, waits
// for a slow request still running, and that its answer goes out.
func TestSlowEndOfInput(t *testing.T) {
	a, p := startAside(t)
	p.send(call("1", "hold"))
	recv(t, a.started, "the slow request")
	p.in.Close()
	close(a.release)
	if err := p.served(); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	checkLines(t, p.out.lines(t), []string{answer("1", `{"held":"done"}`)})
}
