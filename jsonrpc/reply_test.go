package jsonrpc_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentmail/jsonrpc"
)

// replyingStarted returns a handler whose method "early" says on started
// that it has begun, waits for goAhead, answers through Reply, reports
// Reply's error on replied and waits for release before it returns a
// different result, which must never be sent for a request on its own
// line; other methods go to testHandler.
func replyingStarted() (h jsonrpc.Handler, started, goAhead, release chan struct{}, replied chan error) {
	started, goAhead, release = make(chan struct{}, 10), make(chan struct{}), make(chan struct{})
	replied = make(chan error, 10)
	h = func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "early" {
			return testHandler(ctx, req)
		}
		started <- struct{}{}
		<-goAhead
		replied <- jsonrpc.Reply(ctx, map[string]string{"from": "reply"})
		<-release
		return map[string]string{"from": "return"}, nil
	}
	return h, started, goAhead, release, replied
}

func TestReplyAnswersBeforeTheHandlerReturns(t *testing.T) {
	h, _, goAhead, release, replied := replyingStarted()
	p := startPipe(t, context.Background(), h, jsonrpc.Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"early"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	close(goAhead)
	if err := wait(t, replied, "Reply"); err != nil {
		t.Fatalf("Reply = %v, want nil", err)
	}
	// The answer is out while the handler still runs, and the request
	// behind it waits for the handler.
	p.waitLines(1)
	close(release)
	p.waitLines(2)
	checkLines(t, p.finish(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"from":"reply"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
	})
}

func TestReplyCancelled(t *testing.T) {
	var conn *jsonrpc.Conn
	h, started, goAhead, release, replied := replyingStarted()
	preempt, seen := marker(cancelOn(&conn))
	p := startPipe(t, context.Background(), h, jsonrpc.Options{Preempt: preempt})
	conn = p.conn
	close(release)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"early"}`)
	wait(t, started, "the handler")
	p.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":1}}`, markerLine)
	wait(t, seen, "the marker")
	close(goAhead)
	if err := wait(t, replied, "Reply"); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Fatalf("Reply = %v, want ErrCancelled", err)
	}
	p.send(ping)
	checkLines(t, p.finish(), []string{pong})
}

func TestReplyWriteError(t *testing.T) {
	h, _, goAhead, release, replied := replyingStarted()
	close(goAhead)
	close(release)
	var l logs
	conn := jsonrpc.NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"early"}`), &failingWriter{}, h, jsonrpc.Options{Logf: l.Logf})
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if err := wait(t, replied, "Reply"); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("Reply = %v, want the write error", err)
	}
}

// Reply by a batch element that other requests follow cannot answer: the
// array goes out once they have run, with what the handler returned.
func TestReplyInBatchNotLast(t *testing.T) {
	h, _, goAhead, release, replied := replyingStarted()
	close(goAhead)
	close(release)
	got := serve(t, `[{"jsonrpc":"2.0","id":1,"method":"early"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, h,
		jsonrpc.Options{Batch: func() bool { return true }})
	if err := wait(t, replied, "Reply"); !errors.Is(err, jsonrpc.ErrNotLastInBatch) {
		t.Errorf("Reply = %v, want ErrNotLastInBatch", err)
	}
	checkLines(t, got, []string{`[{"jsonrpc":"2.0","id":1,"result":{"from":"return"}},{"jsonrpc":"2.0","id":2,"result":{}}]`})
}

// Reply by the last request of a batch writes the whole array before its
// handler returns: the answers before it, its own, and those of invalid
// elements after it. The notifications after it run once it returns.
func TestReplyInBatchLast(t *testing.T) {
	h, _, goAhead, release, replied := replyingStarted()
	var mu sync.Mutex
	var ran []string
	recording := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		mu.Lock()
		ran = append(ran, req.Method)
		mu.Unlock()
		return h(ctx, req)
	}
	ranSoFar := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran)
	}
	p := startPipe(t, context.Background(), recording, jsonrpc.Options{Batch: func() bool { return true }})
	close(goAhead)
	p.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"early"},` +
		`{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"1.0","id":3,"method":"ping"}]`)
	if err := wait(t, replied, "Reply"); err != nil {
		t.Fatalf("Reply = %v, want nil", err)
	}
	p.waitLines(1)
	if got, want := ranSoFar(), []string{"ping", "early"}; !slices.Equal(got, want) {
		t.Errorf("before the handler returned, ran %q, want %q", got, want)
	}
	close(release)
	checkLines(t, p.finish(), []string{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"from":"reply"}},` +
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}]`})
	if got, want := ranSoFar(), []string{"ping", "early", "note"}; !slices.Equal(got, want) {
		t.Errorf("ran %q, want %q", got, want)
	}
}

// A cancellation that reaches the last request of a batch before its Reply
// makes Reply fail, and the array goes out without it; one that reaches an
// element already finished drops that element's answer from the array
// Reply writes.
func TestReplyInBatchCancelled(t *testing.T) {
	for _, tt := range []struct {
		name     string
		cancel   string
		wantErr  error
		wantLine string
	}{
		{"the replying request", "2", jsonrpc.ErrCancelled, `[{"jsonrpc":"2.0","id":1,"result":{}}]`},
		{"a finished request", "1", nil, `[{"jsonrpc":"2.0","id":2,"result":{"from":"reply"}}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var conn *jsonrpc.Conn
			h, started, goAhead, release, replied := replyingStarted()
			preempt, seen := marker(cancelOn(&conn))
			p := startPipe(t, context.Background(), h, jsonrpc.Options{Preempt: preempt, Batch: func() bool { return true }})
			conn = p.conn
			close(release)
			p.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"early"}]`)
			wait(t, started, "the handler")
			p.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":`+tt.cancel+`}}`, markerLine)
			wait(t, seen, "the marker")
			close(goAhead)
			if err := wait(t, replied, "Reply"); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Reply = %v, want %v", err, tt.wantErr)
			}
			checkLines(t, p.finish(), []string{tt.wantLine})
		})
	}
}

// stalledWriter blocks every Write until open is closed, and says on
// entered when a Write has begun.
type stalledWriter struct {
	recorder
	open    chan struct{}
	entered chan struct{}
}

func newStalledWriter() *stalledWriter {
	return &stalledWriter{open: make(chan struct{}), entered: make(chan struct{}, 10)}
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	w.entered <- struct{}{}
	<-w.open
	return w.recorder.Write(p)
}

// stalled is a pipeConn whose writer is a stalledWriter.
type stalled struct {
	*pipeConn
	w *stalledWriter
}

// startStalled serves h with opt over a stalledWriter, whose write wait is
// 50ms unless set.
func startStalled(t *testing.T, ctx context.Context, h jsonrpc.Handler, opt jsonrpc.Options) *stalled {
	t.Helper()
	if opt.WriteWait == 0 {
		opt.WriteWait = 50 * time.Millisecond
	}
	w := newStalledWriter()
	return &stalled{pipeConn: startPipeWriter(t, ctx, w, &w.recorder, h, opt), w: w}
}

// finish lets the writer go, then closes the input, waits for Serve and
// returns the lines written.
func (s *stalled) finish() []string {
	s.t.Helper()
	close(s.w.open)
	return s.pipeConn.finish()
}

// An answer that the peer does not read within the write wait does not
// count as given: Reply says so, though the line, already under way, goes
// out whole once the peer reads, and the handler's result is not sent.
func TestReplySlowReader(t *testing.T) {
	h, _, goAhead, release, replied := replyingStarted()
	close(goAhead)
	close(release)
	s := startStalled(t, context.Background(), h, jsonrpc.Options{})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"early"}`)
	if err := wait(t, replied, "Reply"); !errors.Is(err, jsonrpc.ErrNotReading) {
		t.Fatalf("Reply = %v, want ErrNotReading", err)
	}
	checkLines(t, s.finish(), []string{`{"jsonrpc":"2.0","id":1,"result":{"from":"reply"}}`})
}

func TestReplyAfterServeReturned(t *testing.T) {
	h, started, goAhead, release, replied := replyingStarted()
	close(release)
	ctx, cancel := context.WithCancel(context.Background())
	p := startPipe(t, ctx, h, jsonrpc.Options{Grace: -1})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"early"}`)
	wait(t, started, "the handler")
	cancel()
	if err := wait(t, p.done, "Serve"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v, want context.Canceled", err)
	}
	close(goAhead)
	if err := wait(t, replied, "Reply"); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Reply = %v, want ErrClosed", err)
	}
	if lines := p.out.lines(t); len(lines) != 0 {
		t.Errorf("wrote %q after Serve returned", lines)
	}
}

func TestReplyOutsideAHandler(t *testing.T) {
	if err := jsonrpc.Reply(context.Background(), nil); err == nil {
		t.Error("Reply outside a handler = nil, want an error")
	}
}

// An answer that cannot even start out, because the one before it is still
// blocked in a peer that does not read, is withdrawn: the handler's own
// result goes out instead, after the first answer.
func TestReplyBehindABlockedAnswer(t *testing.T) {
	h, _, goAhead, release, replied := replyingStarted()
	close(goAhead)
	close(release)
	s := startStalled(t, context.Background(), h, jsonrpc.Options{})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"early"}`, `{"jsonrpc":"2.0","id":2,"method":"early"}`)
	for _, which := range []string{"first", "second"} {
		if err := wait(t, replied, "the "+which+" Reply"); !errors.Is(err, jsonrpc.ErrNotReading) {
			t.Fatalf("%s Reply = %v, want ErrNotReading", which, err)
		}
	}
	checkLines(t, s.finish(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"from":"reply"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"from":"return"}}`,
	})
}

// Serve returns within its bound even when a peer that does not read keeps
// an answer blocked, and no line starts after it has returned.
func TestServeReturnsPastABlockedWrite(t *testing.T) {
	var l logs
	ctx, cancel := context.WithCancel(context.Background())
	s := startStalled(t, ctx, testHandler, jsonrpc.Options{Grace: -1, Logf: l.Logf})
	defer close(s.w.open)
	s.send(ping)
	wait(t, s.w.entered, "the answer's Write")
	cancel()
	if err := wait(t, s.done, "Serve"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v, want context.Canceled", err)
	}
	if !l.contains("not reading") {
		t.Errorf("logs = %q, want a line about the blocked answer", l.lines)
	}
	if err := s.conn.Notify("late", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Notify after Serve returned = %v, want ErrClosed", err)
	}
}

// An answer withdrawn because the peer is not reading leaves its request in
// progress until the handler returns: a request reusing its id is refused,
// and a cancel still drops the handler's own answer.
func TestReplyWithdrawnStaysInProgress(t *testing.T) {
	var conn *jsonrpc.Conn
	preempt, seen := marker(cancelOn(&conn))
	second := make(chan struct{})
	replied := make(chan error, 2)
	calls := 0 // the handler runs on the worker only, one call at a time
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "early" {
			return testHandler(ctx, req)
		}
		calls++
		replied <- jsonrpc.Reply(ctx, map[string]string{"from": "reply"})
		if calls == 2 {
			<-second
		}
		return map[string]string{"from": "return"}, nil
	}
	s := startStalled(t, context.Background(), h, jsonrpc.Options{Preempt: preempt})
	conn = s.conn
	s.send(`{"jsonrpc":"2.0","id":1,"method":"early"}`, `{"jsonrpc":"2.0","id":2,"method":"early"}`)
	for _, which := range []string{"first", "second"} {
		if err := wait(t, replied, "the "+which+" Reply"); !errors.Is(err, jsonrpc.ErrNotReading) {
			t.Fatalf("%s Reply = %v, want ErrNotReading", which, err)
		}
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","method":"cancel","params":{"id":2}}`, markerLine)
	wait(t, seen, "the marker")
	close(second)
	checkLines(t, s.finish(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"from":"reply"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: duplicate id of a request in progress"}}`,
	})
}

// A cancel that arrives while an answer waits for its turn withdraws it at
// once: Reply says so without waiting out the write wait, and the answer
// is never written.
func TestReplyCancelledWhileWaiting(t *testing.T) {
	var conn *jsonrpc.Conn
	calling := make(chan struct{}, 1)
	replied := make(chan error, 1)
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		calling <- struct{}{}
		replied <- jsonrpc.Reply(ctx, map[string]string{"from": "reply"})
		return map[string]string{"from": "return"}, nil
	}
	s := startStalled(t, context.Background(), h, jsonrpc.Options{Preempt: cancelOn(&conn), WriteWait: time.Hour})
	conn = s.conn
	// A notification blocked in the writer holds the turn.
	go conn.Notify("first", nil)
	wait(t, s.w.entered, "the notification's Write")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"early"}`)
	wait(t, calling, "the handler")
	// The cancel must find Reply waiting, not refuse it at its start.
	waitInSelect(t, "agentmail/jsonrpc.(*Conn).reply")
	s.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":1}}`)
	if err := wait(t, replied, "Reply"); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Fatalf("Reply = %v, want ErrCancelled", err)
	}
	checkLines(t, s.finish(), []string{`{"jsonrpc":"2.0","method":"first"}`})
}

// waitInSelect waits until a goroutine is blocked in a select of the
// function fn (its full name, as in a stack trace): a test cannot see
// otherwise that a call has reached its wait.
func waitInSelect(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		stacks := string(buf[:runtime.Stack(buf, true)])
		for g := range strings.SplitSeq(stacks, "\n\n") {
			header, frames, _ := strings.Cut(g, "\n")
			// The blocked select is the first frame that is not the
			// runtime's.
			for frame := range strings.Lines(frames) {
				if strings.HasPrefix(frame, "runtime.") || strings.HasPrefix(frame, "\t") {
					continue
				}
				if strings.Contains(header, "[select") && strings.HasPrefix(frame, fn+"(") {
					return
				}
				break
			}
		}
	}
	t.Fatalf("timed out waiting for %s to block in a select", fn)
}
