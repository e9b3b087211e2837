package jsonrpc_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"agentmail/jsonrpc"
)

// TestExchangeReplyBeforeReturn checks that an answer given through Reply
// is written before the handler goes on, and that nothing the handler
// returns afterwards is written.
func TestExchangeReplyBeforeReturn(t *testing.T) {
	var out bytes.Buffer
	var seen string
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if err := jsonrpc.Reply(ctx, map[string]int{"n": 1}); err != nil {
			return nil, err
		}
		seen = out.String()
		return map[string]int{"n": 2}, nil
	}
	c := jsonrpc.NewExchange(&out, h, jsonrpc.Options{})
	if err := c.Exchange(context.Background(), []byte(`{"jsonrpc":"2.0","id":7,"method":"m"}`)); err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":7,"result":{"n":1}}` + "\n"
	if seen != want || out.String() != want {
		t.Errorf("seen by the handler %q, written %q; want %q for both", seen, out.String(), want)
	}
	if err := c.Notify("late", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Notify after Exchange = %v, want ErrClosed", err)
	}
}

// TestExchangeWaitsForDetached checks that Exchange returns only once a
// detached handler has returned, with its notification and answer written
// in order.
func TestExchangeWaitsForDetached(t *testing.T) {
	var out bytes.Buffer
	release := make(chan struct{})
	var c *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		c.Notify("ack", nil)
		jsonrpc.Detach(ctx)
		<-release
		return nil, nil
	}
	c = jsonrpc.NewExchange(&out, h, jsonrpc.Options{})
	done := make(chan error)
	go func() { done <- c.Exchange(context.Background(), []byte(`{"jsonrpc":"2.0","id":"a","method":"wait"}`)) }()
	select {
	case <-done:
		t.Fatal("Exchange returned before its detached handler")
	case <-c.Stopping():
		t.Fatal("Stopping closed before the exchange ended")
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","method":"ack"}` + "\n" + `{"jsonrpc":"2.0","id":"a","result":{}}` + "\n"
	if out.String() != want {
		t.Errorf("written %q, want %q", out.String(), want)
	}
}

// TestExchangeInvalid checks that a frame that is not JSON is answered as
// on a stream, and that a notification is not answered at all.
func TestExchangeInvalid(t *testing.T) {
	for _, tc := range []struct{ frame, want string }{
		{`{"jsonrpc":"2.0",`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`},
		{`{"jsonrpc":"2.0","method":"note"}`, ``},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, ``},
	} {
		var out bytes.Buffer
		c := jsonrpc.NewExchange(&out, func(ctx context.Context, req *jsonrpc.Request) (any, error) { return nil, nil }, jsonrpc.Options{})
		if err := c.Exchange(context.Background(), []byte(tc.frame)); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(out.Bytes(), []byte(tc.want)) || tc.want == "" && out.Len() > 0 {
			t.Errorf("%s: written %q, want %q…", tc.frame, out.String(), tc.want)
		}
	}
}
