package jsonrpc_test

import (
	"context"
	"io"
	"testing"

	"agentmail/jsonrpc"
)

// TestSlowKeepsOrder checks that the request after a slow one
// (Options.Slow), and an invalid message that is answered, wait for it:
// answers leave in the order of the requests. A request reusing the slow
// one's id is read only once the slow one is answered, so it is no
// duplicate.
func TestSlowKeepsOrder(t *testing.T) {
	s := newSlow()
	p := startPipe(t, context.Background(), s.handle, jsonrpc.Options{Slow: isSlow})
	p.send(call("1", "slow"))
	recv(t, s.started, "the slow request")
	// The pipe's Write returns once the line is read: the invalid line is
	// read while the slow request runs, and so is the ping, the moment it
	// is written; neither can be handled before the release.
	p.send(`{"jsonrpc":"2.0","id":2,"method":`)
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(p.in, call("1", "ping")+"\n")
		sent <- err
	}()
	close(s.release)
	if err := recv(t, sent, "the ping to be read"); err != nil {
		t.Fatal(err)
	}
	checkLines(t, p.finish(), []string{slowDone, parseErr, pong})
}

// TestSlowEndOfInput checks that Serve, at the end of its input, waits
// for a slow request still running, and that its answer goes out.
func TestSlowEndOfInput(t *testing.T) {
	s := newSlow()
	p := startPipe(t, context.Background(), s.handle, jsonrpc.Options{Slow: isSlow})
	p.send(call("1", "slow"))
	recv(t, s.started, "the slow request")
	p.in.Close()
	close(s.release)
	if err := p.served(); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	checkLines(t, p.out.lines(t), []string{slowDone})
}
