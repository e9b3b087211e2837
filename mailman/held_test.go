package mailman

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"agentmail/mailbox"
)

// These tests hold the lock of a file of the store, as another process
// working on it would, for longer than a pass waits for it.

// holdLock takes the exclusive lock the store takes on path and returns the
// function that lets it go (also called when the test ends). The file is
// opened read-only, as flock(1) in a shell holds one: letting it go then
// sends the mailman's watcher no event, so only the mailman's recheck can
// notice that it is free.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tryLock(f, true); !got || err != nil {
		f.Close()
		t.Fatalf("locking %s: %v, %v", path, got, err)
	}
	var closed bool
	release = func() {
		if !closed {
			closed = true
			f.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// within fails the test when f does not return within d: a wait that
// ignores its bound would otherwise hang until the lock is let go, which
// the test never does while it waits.
func within(t *testing.T, d time.Duration, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v while a lock was held", what, d)
	}
	return time.Since(start)
}

// TestHeldMailboxHoldsUpNobody checks that a mailbox locked by another
// process for good keeps only its own agent from being rung, costs the
// full wait once rather than on every pass, is logged once, has the pass
// ask to be followed soon, and is looked at again once it is free.
func TestHeldMailboxHoldsUpNobody(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.term.window("carol", "%2")
	fx.status("bob", "ready", "%1")
	fx.status("carol", "ready", "%2")
	fx.mail("bob")
	fx.mail("carol")
	release := holdLock(t, fx.store.MailboxPath("bob"))

	var next time.Time
	within(t, 5*time.Second, "the first pass", func() { next = fx.pass() })
	fx.wantRings(map[string]int{"%2": 1})
	if want := fx.clock.now().Add(recheckInterval); !next.Equal(want) {
		t.Errorf("the pass that skipped bob's mailbox asks for the next at %v, want %v", next, want)
	}

	fx.clock.advance(2 * time.Minute)
	if d := within(t, 5*time.Second, "the second pass", func() { fx.pass() }); d >= storeWait {
		t.Errorf("the second pass took %v: it waited for the held mailbox again", d)
	}
	fx.wantRings(map[string]int{"%2": 2})
	if n := fx.log.count(`the mailbox of "bob" for now: it is locked by another process`); n != 1 {
		t.Errorf("the held mailbox was logged %d times, want 1; log:\n%s", n, fx.log)
	}

	release()
	// The store's abandoned wait takes the lock and lets it go on its
	// own time; a pass may come before that ends, as the next one does in
	// Run.
	fx.clock.advance(2 * time.Minute)
	deadline := time.Now().Add(5 * time.Second)
	for fx.pass(); fx.term.tries("%1") == 0; fx.pass() {
		if time.Now().After(deadline) {
			t.Fatalf("bob was not rung after his mailbox was let go; log:\n%s", fx.log)
		}
	}
	fx.wantRings(map[string]int{"%1": 1, "%2": 3})
}

// TestHeldStatesRingNobody checks that a pass gives up on a
// recipients.jsonl locked for good, rings nobody, and logs it once.
func TestHeldStatesRingNobody(t *testing.T) {
	fx := newFixture(t)
	fx.readyWithMail("bob", "%1")
	holdLock(t, fx.store.StatesPath())

	within(t, 5*time.Second, "a pass", func() { fx.pass() })
	within(t, 5*time.Second, "a pass", func() { fx.pass() })
	fx.wantRings(nil)
	if n := fx.log.count("cannot read the agents' states: it is locked by another process"); n != 1 {
		t.Errorf("the held states were logged %d times, want 1; log:\n%s", n, fx.log)
	}
}

// TestRunStopsWhileALockIsHeld checks that Run returns as soon as its
// context ends, while a pass waits for a mailbox that another process
// holds, and logs nothing about the stop.
func TestRunStopsWhileALockIsHeld(t *testing.T) {
	root, st := bobReadyWithMail(t)
	holdLock(t, st.MailboxPath("bob"))
	r := startRun(t, root)
	r.term.window("bob", "%1")
	// The first pass now waits for bob's mailbox.
	time.Sleep(storeWait / 4)
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(storeWait / 2):
		t.Fatalf("Run did not stop while a mailbox was held; log:\n%s", r.log)
	}
	if s := r.log.String(); s != "" {
		t.Errorf("a stop logged:\n%s", s)
	}
	if got := r.term.allRings(t); len(got) != 0 {
		t.Errorf("rings: %v, want none", got)
	}
}

// TestRunLooksAgainWhenFreed checks that while one mailbox is held the
// others are rung on their events, and that the held one is looked at as
// soon as it is free, not at the next safety pass.
func TestRunLooksAgainWhenFreed(t *testing.T) {
	root := t.TempDir()
	st := mailbox.New(root)
	for _, name := range []string{"bob", "carol"} {
		if err := st.SetStatus(context.Background(), name, "ready", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Append(context.Background(), "alice", "bob", "hi"); err != nil {
		t.Fatal(err)
	}
	release := holdLock(t, st.MailboxPath("bob"))
	r := startRun(t, root)
	// Cleanups run last first: the lock goes before startRun's cleanup
	// waits for Run, which a Run stuck on the lock would never end.
	t.Cleanup(release)
	r.term.window("bob", "%1")
	r.term.window("carol", "%2")
	if _, err := st.Append(context.Background(), "alice", "carol", "hi"); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.waitRing(t, 3*time.Second); p != "%2" {
		t.Errorf("rang pane %s, want carol's %%2", p)
	}
	r.noRing(t, 300*time.Millisecond)
	release()
	if p, _ := r.waitRing(t, time.Second); p != "%1" {
		t.Errorf("rang pane %s, want bob's %%1", p)
	}
}

// TestHeldRecordDoesNotHideStates checks that a ring whose record waits
// for recipients.lock, held by another writer for good, is logged as not
// recorded and keeps the passes after it from neither reading the states,
// which need only recipients.jsonl, nor ringing.
func TestHeldRecordDoesNotHideStates(t *testing.T) {
	fx := newFixture(t)
	fx.readyWithMail("bob", "%1")
	release := holdLock(t, filepath.Join(fx.store.Dir(), "recipients.lock"))

	within(t, 5*time.Second, "the first pass", func() { fx.pass() })
	fx.wantRings(map[string]int{"%1": 1})
	if n := fx.log.count(`cannot record the ring of "bob"`); n != 1 {
		t.Errorf("the unrecorded ring was logged %d times, want 1; log:\n%s", n, fx.log)
	}

	fx.clock.advance(2 * time.Minute)
	within(t, 5*time.Second, "the second pass", func() { fx.pass() })
	if n := fx.log.count("cannot read the agents' states"); n != 0 {
		t.Errorf("the states were not read; log:\n%s", fx.log)
	}
	fx.wantRings(map[string]int{"%1": 2})

	release()
}
