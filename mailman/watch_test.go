package mailman

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/tmux"
)

// These tests run Run on the real clock with real file watching and a fake
// terminal. The safety timer is set far away, so a ring within the deadline
// can only come from a file event or from a scheduled re-ring.

// running is a Mailman running in the background.
type running struct {
	term   *fakeTerm
	log    *logs
	cancel context.CancelFunc
	ended  chan struct{} // closed when Run has returned, with its error in err
	err    error
}

// bobReadyWithMail returns a fresh root, and its store, where bob is ready
// in pane %1 with one unread message.
func bobReadyWithMail(t *testing.T) (string, *mailbox.Store) {
	t.Helper()
	root := t.TempDir()
	st := mailbox.New(root)
	if err := st.SetStatus(context.Background(), "bob", "ready", "%1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), "alice", "bob", "hi"); err != nil {
		t.Fatal(err)
	}
	return root, st
}

// stop ends Run and returns its error. It may be called more than once.
func (r *running) stop() error {
	r.cancel()
	<-r.ended
	return r.err
}

func startRun(t *testing.T, root string) *running {
	t.Helper()
	st := mailbox.New(root)
	l := &logs{}
	st.Warnf = l.logf
	term := newFakeTerm()
	term.rung = make(chan string, 100)
	m := &Mailman{Store: st, Term: term, Logf: l.logf}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{term: term, log: l, cancel: cancel, ended: make(chan struct{})}
	started := make(chan struct{})
	go func() {
		defer close(r.ended)
		r.err = m.Run(ctx, func() { close(started) })
	}()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-started:
	case <-r.ended:
		t.Fatalf("Run: %v", r.err)
	}
	return r
}

// waitRing waits up to d for a ring and returns its pane and how long it
// took, or fails the test.
func (r *running) waitRing(t *testing.T, d time.Duration) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case p := <-r.rung():
		return p, time.Since(start)
	case <-r.ended:
		t.Fatalf("Run ended: %v; log:\n%s", r.err, r.log)
	case <-time.After(d):
		t.Fatalf("no ring within %v; log:\n%s", d, r.log)
	}
	return "", 0
}

// noRing checks that nobody is rung for d.
func (r *running) noRing(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case p := <-r.rung():
		t.Fatalf("pane %s was rung; log:\n%s", p, r.log)
	case <-time.After(d):
	}
}

func (r *running) rung() chan string { return r.term.rung }

func TestRunRingsWithinASecond(t *testing.T) {
	root := t.TempDir() // no .agentmail yet: it appears after the start
	r := startRun(t, root)
	r.term.window("bob", "%1")
	st := mailbox.New(root)
	if err := st.SetStatus(context.Background(), "bob", "ready", "%1"); err != nil {
		t.Fatal(err)
	}
	r.noRing(t, 200*time.Millisecond)
	if _, err := st.Append(context.Background(), "alice", "bob", "hi"); err != nil {
		t.Fatal(err)
	}
	if p, d := r.waitRing(t, time.Second); p != "%1" {
		t.Errorf("rang pane %s after %v, want %%1", p, d)
	}

	// A mailbox without a state entry is noticed as well.
	r.term.window("carol", "%2")
	if _, err := st.Append(context.Background(), "alice", "carol", "hi"); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.waitRing(t, time.Second); p != "%2" {
		t.Errorf("rang pane %s, want %%2", p)
	}

	// So is a status change: dave had mail while at work.
	r.term.window("dave", "%3")
	if err := st.SetStatus(context.Background(), "dave", "work", "%3"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), "alice", "dave", "hi"); err != nil {
		t.Fatal(err)
	}
	r.noRing(t, 300*time.Millisecond)
	if err := st.SetStatus(context.Background(), "dave", "ready", "%3"); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.waitRing(t, time.Second); p != "%3" {
		t.Errorf("rang pane %s, want %%3", p)
	}
}

// TestRunAfterAgentmailRemoved checks that the watches come back with
// .agentmail when it is removed and made again while the mailman runs.
func TestRunAfterAgentmailRemoved(t *testing.T) {
	root := t.TempDir()
	st := mailbox.New(root)
	if err := st.SetStatus(context.Background(), "bob", "ready", "%1"); err != nil {
		t.Fatal(err)
	}
	r := startRun(t, root)
	r.term.window("bob", "%1")
	if err := os.RemoveAll(st.Dir()); err != nil {
		t.Fatal(err)
	}
	r.noRing(t, 100*time.Millisecond)
	if err := st.SetStatus(context.Background(), "bob", "ready", "%1"); err != nil {
		t.Fatal(err)
	}
	// The pass that .agentmail's return brings finds nothing to ring: the
	// ring below needs the watches on the new directories.
	r.noRing(t, 200*time.Millisecond)
	if _, err := st.Append(context.Background(), "alice", "bob", "hi"); err != nil {
		t.Fatal(err)
	}
	r.waitRing(t, time.Second)
}

func TestRunDebounceIsBounded(t *testing.T) {
	root := t.TempDir()
	st := mailbox.New(root)
	if err := st.SetStatus(context.Background(), "busy", "work", ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SetStatus(context.Background(), "bob", "ready", "%1"); err != nil {
		t.Fatal(err)
	}
	r := startRun(t, root)
	r.term.window("bob", "%1")
	// A stream of events, closer together than the debounce, must not hold
	// back bob's ring beyond maxDelay (plus the pass itself).
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			st.Append(context.Background(), "alice", "busy", "noise")
			time.Sleep(20 * time.Millisecond)
		}
	})
	defer func() {
		cancel()
		wg.Wait()
	}()
	time.Sleep(150 * time.Millisecond)
	if _, err := st.Append(context.Background(), "alice", "bob", "hi"); err != nil {
		t.Fatal(err)
	}
	if _, d := r.waitRing(t, 2*time.Second); d > 800*time.Millisecond {
		t.Errorf("ring came %v after the mail under a stream of events, want at most about 300ms", d)
	}
}

func TestRunStopsWhenTmuxIsGone(t *testing.T) {
	root := t.TempDir()
	st := mailbox.New(root)
	if _, err := st.Append(context.Background(), "alice", "bob", "hi"); err != nil {
		t.Fatal(err)
	}
	term := newFakeTerm()
	term.gone = fmt.Errorf("%w: no server", tmux.ErrNotInTmux)
	m := &Mailman{Store: st, Term: term}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background(), nil) }()
	select {
	case err := <-done:
		if !errors.Is(err, tmux.ErrNotInTmux) {
			t.Errorf("Run: %v, want ErrNotInTmux", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run went on without tmux")
	}
}

func TestRunNeedsTheRoot(t *testing.T) {
	m := &Mailman{Store: mailbox.New(t.TempDir() + "/missing"), Term: newFakeTerm()}
	if err := m.Run(context.Background(), nil); err == nil {
		t.Error("Run on a missing root: no error")
	}
}
