package jsonrpc_test

import (
	"context"
	"strings"
	"testing"

	"agentmail/jsonrpc"
)

// detaching is a handler whose "wait" requests detach and then wait until
// released or cancelled; other requests are answered at once.
func detaching(release <-chan struct{}) jsonrpc.Handler {
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "wait" {
			return map[string]string{"method": req.Method}, nil
		}
		if !jsonrpc.Detach(ctx) {
			return map[string]bool{"detached": false}, nil
		}
		select {
		case <-release:
			return map[string]string{"waited": "yes"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waits marks the "wait" requests as ones that may detach.
func waits(req *jsonrpc.Request) bool { return req.Method == "wait" }

// TestDetachDoesNotHoldUp checks that a handler that detaches lets the
// requests after it be answered first, and is answered when it returns.
func TestDetachDoesNotHoldUp(t *testing.T) {
	release := make(chan struct{})
	p := startPipe(t, context.Background(), detaching(release), jsonrpc.Options{MayDetach: waits})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"wait"}`, `{"jsonrpc":"2.0","id":2,"method":"after"}`)
	p.waitLines(1)
	close(release)
	p.waitLines(2)
	checkLines(t, p.finish(), []string{
		`{"jsonrpc":"2.0","id":2,"result":{"method":"after"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"waited":"yes"}}`,
	})
}

// TestDetachCancelled checks that a detached request that is cancelled is
// never answered, and that a batch element cannot detach.
func TestDetachCancelled(t *testing.T) {
	var conn *jsonrpc.Conn
	p := startPipe(t, context.Background(), detaching(make(chan struct{})), jsonrpc.Options{
		Preempt:   cancelOn(&conn),
		Batch:     func() bool { return true },
		MayDetach: waits,
	})
	conn = p.conn
	p.send(`{"jsonrpc":"2.0","id":"w","method":"wait"}`, `{"jsonrpc":"2.0","id":2,"method":"after"}`)
	p.waitLines(1)
	p.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":"w"}}`, `[{"jsonrpc":"2.0","id":3,"method":"wait"}]`)
	lines := p.finish()
	checkLines(t, lines, []string{
		`{"jsonrpc":"2.0","id":2,"result":{"method":"after"}}`,
		`[{"jsonrpc":"2.0","id":3,"result":{"detached":false}}]`,
	})
	for _, l := range lines {
		if strings.Contains(l, `"w"`) {
			t.Errorf("the cancelled request was answered: %s", l)
		}
	}
}

// TestDetachEndsWithInput checks that Stopping lets a detached handler end
// when the input ends, its answer still going out.
func TestDetachEndsWithInput(t *testing.T) {
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		jsonrpc.Detach(ctx)
		<-conn.Stopping()
		return map[string]string{"ended": "yes"}, nil
	}
	p := startPipe(t, context.Background(), h, jsonrpc.Options{MayDetach: func(*jsonrpc.Request) bool { return true }})
	conn = p.conn
	p.send(`{"jsonrpc":"2.0","id":1,"method":"stream"}`)
	checkLines(t, p.finish(), []string{`{"jsonrpc":"2.0","id":1,"result":{"ended":"yes"}}`})
}

// TestDetachOnlyWhenMarked checks that a request Options.MayDetach does not
// mark cannot detach, and holds up the requests after it as before.
func TestDetachOnlyWhenMarked(t *testing.T) {
	p := startPipe(t, context.Background(), detaching(make(chan struct{})), jsonrpc.Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"wait"}`, `{"jsonrpc":"2.0","id":2,"method":"after"}`)
	checkLines(t, p.finish(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"detached":false}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"method":"after"}}`,
	})
}
