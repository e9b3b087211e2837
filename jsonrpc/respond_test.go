package jsonrpc_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"agentmail/jsonrpc"
)

// TestRespondAfterWriteError checks that a Respond that fails with a write
// error settles its call: Serve returns without waiting out the grace
// period for it, and leaves no goroutine behind.
func TestRespondAfterWriteError(t *testing.T) {
	w := &failingWriter{}
	responded := make(chan error, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "ping" {
			return nil, nil
		}
		go func() { responded <- conn.Respond(req, nil, nil) }()
		return nil, jsonrpc.ErrAsync
	}
	before := runtime.NumGoroutine()
	conn = jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(ping+"\n"+call("2", "x")), w), h, jsonrpc.Options{})
	start := time.Now()
	conn.Serve(context.Background())
	if d := time.Since(start); d >= time.Second {
		t.Errorf("Serve took %v: it waited out the grace period for a call that can never be answered", d)
	}
	if err := recv(t, responded, "Respond"); err == nil || errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("Respond = %v, want the write error (or ErrClosed)", err)
	}
	settleGoroutines(t, before)
}

// TestRespondAfterServe checks that a Respond after Serve has returned
// (the grace period ran out) returns ErrClosed and writes nothing.
func TestRespondAfterServe(t *testing.T) {
	var out recorder
	responded := make(chan error, 1)
	late := make(chan struct{})
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		go func() { <-late; responded <- conn.Respond(req, nil, nil) }()
		return nil, jsonrpc.ErrAsync
	}
	conn = jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(call("1", "x")), &out), h, jsonrpc.Options{})
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	close(late)
	if err := recv(t, responded, "Respond"); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Respond after Serve returned = %v, want ErrClosed", err)
	}
	if got := out.lines(t); len(got) != 0 {
		t.Errorf("wrote %q", got)
	}
}

// TestRespondAnsweredInBatch checks that a batch element whose handler
// returns ErrAsync is not answered later (its array cannot wait): its
// Respond returns ErrCancelled, and the array holds the other answers.
func TestRespondAnsweredInBatch(t *testing.T) {
	s := newSlow()
	responded := make(chan error, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "wait" {
			go func() { <-s.started; responded <- conn.Respond(req, nil, nil) }()
			return nil, jsonrpc.ErrAsync
		}
		s.started <- "x"
		<-s.release
		return nil, nil
	}
	p := startPipe(t, context.Background(), h, jsonrpc.Options{Batch: func() bool { return true }})
	conn = p.conn
	p.send(`[` + call("1", "wait") + `,` + call("2", "slow") + `]`)
	if err := recv(t, responded, "Respond"); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("Respond of a batch element that returned ErrAsync = %v, want ErrCancelled", err)
	}
	close(s.release)
	checkLines(t, p.finish(), []string{`[` + answer("2", `{}`) + `]`})
}

// A call cancelled while it waits frees its id for a new request; the
// cancelled call's late Respond must not answer the new one.
func TestRespondAfterIDReused(t *testing.T) {
	pre := newPreempter()
	waiting := make(chan *jsonrpc.Request, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "wait" {
			waiting <- req
			return nil, jsonrpc.ErrAsync
		}
		return map[string]string{"from": "new"}, nil
	}
	p := startPipe(t, context.Background(), pre.wrap(h), jsonrpc.Options{})
	pre.conn, conn = p.conn, p.conn
	p.send(call("1", "wait"))
	old := recv(t, waiting, "the waiting call")
	p.send(cancelLine("1"))
	if !recv(t, pre.found, "the cancel") {
		t.Fatal("the cancel did not find the waiting call")
	}
	p.send(call("1", "again"), markLine)
	recv(t, pre.marks, "the new call read")
	if err := conn.Respond(old, map[string]string{"from": "old"}, nil); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("the cancelled call's Respond = %v, want ErrCancelled", err)
	}
	lines := p.finish()
	if len(lines) != 1 || !strings.Contains(lines[0], `"from":"new"`) {
		t.Errorf("answers %q, want the new call's only", lines)
	}
}
