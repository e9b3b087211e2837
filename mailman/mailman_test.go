package mailman

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/tmux"
)

func TestReadyAgentRungOnceAMinute(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("alice", "%0")
	fx.term.window("bob", "%1")
	fx.status("bob", "ready", "%1")

	if next := fx.pass(); !next.IsZero() {
		t.Errorf("without mail, next pass due at %v, want none", next)
	}
	fx.wantRings(nil)

	fx.mail("bob")
	t0 := fx.clock.now()
	next := fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
	if got := fx.state("bob").NotifiedAt; !got.Equal(t0) {
		t.Errorf("notified_at after the ring = %v, want %v", got, t0)
	}
	if want := t0.Add(time.Minute); !next.Equal(want) {
		t.Errorf("next pass due at %v, want %v", next, want)
	}

	// More mail and more passes within the minute ring nobody.
	fx.clock.advance(30 * time.Second)
	fx.mail("bob")
	fx.pass()
	fx.clock.advance(29 * time.Second)
	if next := fx.pass(); !next.Equal(t0.Add(time.Minute)) {
		t.Errorf("next pass due at %v, want %v", next, t0.Add(time.Minute))
	}
	fx.wantRings(map[string]int{"%1": 1})

	// A minute after the first ring, the mail is still unread: ring again.
	fx.clock.advance(time.Second)
	fx.pass()
	fx.wantRings(map[string]int{"%1": 2})

	// Once the mail is read, nobody is rung and no pass is scheduled.
	fx.read("bob")
	fx.clock.advance(5 * time.Minute)
	if next := fx.pass(); !next.IsZero() {
		t.Errorf("with all mail read, next pass due at %v, want none", next)
	}
	fx.wantRings(map[string]int{"%1": 2})
}

func TestWorkAndOfflineNeverRung(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.term.window("carol", "%2")
	fx.status("bob", "work", "%1")
	fx.status("carol", "offline", "%2")
	fx.mail("bob")
	fx.mail("carol")
	for range 5 {
		if next := fx.pass(); !next.IsZero() {
			t.Errorf("next pass due at %v, want none", next)
		}
		fx.clock.advance(10 * time.Minute)
	}
	fx.wantRings(nil)
}

// TestFutureNotifiedAtIsNotTrusted checks that a notified_at in the future
// (a clock that jumped back, or another tool's value) does not silence the
// agent until then.
func TestFutureNotifiedAtIsNotTrusted(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.status("bob", "ready", "%1")
	if err := fx.store.UpdateState(context.Background(), "bob", func(st *mailbox.State, _ bool) bool {
		st.NotifiedAt = fx.clock.now().Add(time.Hour)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	fx.mail("bob")
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
}

// TestRingTimersStartWithTheRing checks that the minute before a ring may
// repeat is counted from when the ring started, not from when it ended.
func TestRingTimersStartWithTheRing(t *testing.T) {
	fx := newFixture(t)
	fx.readyWithMail("bob", "%1")
	start := fx.clock.now()
	fx.term.onType = func(string) { fx.clock.advance(5 * time.Second) }
	next := fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
	if got := fx.state("bob").NotifiedAt; !got.Equal(start) {
		t.Errorf("notified_at = %v, want the start of the ring, %v", got, start)
	}
	if want := start.Add(ringInterval); !next.Equal(want) {
		t.Errorf("next pass at %v, want %v", next, want)
	}
}

func TestStatusLifecycle(t *testing.T) {
	fx := newFixture(t)
	fx.readyWithMail("bob", "%1")
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})

	// ready again keeps notified_at: no second ring within the minute.
	fx.clock.advance(10 * time.Second)
	fx.status("bob", "ready", "%1")
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})

	// work resets it; back to ready, the unread mail rings at once.
	fx.clock.advance(10 * time.Second)
	fx.status("bob", "work", "%1")
	if got := fx.state("bob").NotifiedAt; !got.IsZero() {
		t.Errorf("notified_at after status work = %v, want zero", got)
	}
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
	fx.clock.advance(10 * time.Second)
	fx.status("bob", "ready", "%1")
	fx.pass()
	fx.wantRings(map[string]int{"%1": 2})
}

func TestRingDoesNotOverwriteNewStatus(t *testing.T) {
	fx := newFixture(t)
	fx.readyWithMail("bob", "%1")
	// bob starts working while the ring is being typed.
	fx.term.onType = func(string) {
		fx.clock.advance(100 * time.Millisecond)
		fx.status("bob", "work", "%1")
	}
	fx.pass()
	st := fx.state("bob")
	if st.Status != "work" || !st.NotifiedAt.IsZero() {
		t.Errorf("after a ring during which bob went to work: status %q, notified_at %v; want work and zero", st.Status, st.NotifiedAt)
	}

	// bob works and is ready again while the ring is being typed, all
	// before the next pass: his notified_at stays as his work left it,
	// but the ring counts against his minute all the same.
	fx.status("bob", "ready", "%1")
	fx.term.onType = func(string) {
		fx.clock.advance(100 * time.Millisecond)
		fx.status("bob", "work", "%1")
		fx.clock.advance(100 * time.Millisecond)
		fx.status("bob", "ready", "%1")
	}
	fx.pass()
	fx.term.onType = nil
	if st := fx.state("bob"); !st.NotifiedAt.IsZero() {
		t.Errorf("after a ring during which bob worked and came back: notified_at %v, want zero", st.NotifiedAt)
	}
	fx.pass()
	fx.wantRings(map[string]int{"%1": 2})
	fx.clock.advance(time.Minute)
	fx.pass()
	fx.wantRings(map[string]int{"%1": 3})
}

// TestReadyTwiceDuringRing is an agent whose hooks say ready twice in a
// row, the second time while it is being rung: the ring is not recorded in
// its entry (its updated_at changed), but the pass that the second ready
// starts does not ring it again; a minute later it does. A work status
// seen by a pass ends that wait.
func TestReadyTwiceDuringRing(t *testing.T) {
	fx := newFixture(t)
	fx.readyWithMail("bob", "%1")
	fx.term.onType = func(string) {
		fx.clock.advance(100 * time.Millisecond)
		fx.status("bob", "ready", "%1")
	}
	fx.pass()
	fx.term.onType = nil
	for range 5 {
		fx.clock.advance(10 * time.Second)
		fx.pass()
	}
	fx.wantRings(map[string]int{"%1": 1})
	fx.clock.advance(10 * time.Second)
	fx.pass()
	fx.wantRings(map[string]int{"%1": 2})

	// Rung again, and the same race; then bob goes to work and is ready
	// again, each seen by a pass: he is rung at once.
	fx.term.onType = func(string) {
		fx.clock.advance(100 * time.Millisecond)
		fx.status("bob", "ready", "%1")
	}
	fx.clock.advance(time.Minute)
	fx.pass()
	fx.term.onType = nil
	fx.wantRings(map[string]int{"%1": 3})
	fx.status("bob", "work", "%1")
	fx.pass()
	fx.clock.advance(time.Second)
	fx.status("bob", "ready", "%1")
	fx.pass()
	fx.wantRings(map[string]int{"%1": 4})
}

func TestStatelessAgent(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("carol", "%2")
	fx.mail("carol")

	t0 := fx.clock.now()
	if next := fx.pass(); !next.Equal(t0.Add(time.Minute)) {
		t.Errorf("next pass due at %v, want %v", next, t0.Add(time.Minute))
	}
	fx.wantRings(map[string]int{"%2": 1})
	fx.clock.advance(59 * time.Second)
	fx.mail("carol")
	fx.pass()
	fx.wantRings(map[string]int{"%2": 1})
	fx.clock.advance(time.Second)
	fx.pass()
	fx.wantRings(map[string]int{"%2": 2})
	if _, err := os.Stat(fx.store.StatesPath()); err == nil {
		t.Error("ringing an agent without a state entry wrote recipients.jsonl")
	}

	// Without its window, it is never rung, and that is logged once.
	fx.term.close("%2")
	for range 5 {
		fx.clock.advance(2 * time.Minute)
		fx.pass()
	}
	fx.wantRings(map[string]int{"%2": 2})
	if n := fx.log.count(`not ringing "carol"`); n != 1 {
		t.Errorf("logged %d times that carol has no window, want 1; log:\n%s", n, fx.log)
	}

	// When the window comes back, the next pass rings it.
	fx.term.window("carol", "%7")
	fx.pass()
	fx.wantRings(map[string]int{"%2": 2, "%7": 1})
}

func TestFailingRingRetriedOnceAMinute(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.term.window("carol", "%2")
	fx.term.fail["%1"] = errors.New("send-keys failed")
	fx.term.fail["%2"] = errors.New("send-keys failed")
	fx.status("bob", "ready", "%1")
	fx.status("dave", "ready", "%4") // no window at all
	fx.mail("bob")
	fx.mail("carol") // without a state entry
	fx.mail("dave")

	for i := range 12 {
		fx.pass()
		fx.mail("bob") // events keep coming, but rings do not
		if i < 11 {
			fx.clock.advance(5 * time.Second)
		}
	}
	if got := fx.term.tries("%1"); got != 1 {
		t.Errorf("bob's failing pane was tried %d times within a minute, want 1", got)
	}
	if got := fx.term.tries("%2"); got != 1 {
		t.Errorf("carol's failing pane was tried %d times within a minute, want 1", got)
	}
	if n := fx.log.count(`cannot ring "dave"`); n != 1 {
		t.Errorf("dave's missing window was reported %d times within a minute, want 1; log:\n%s", n, fx.log)
	}
	if !fx.state("bob").NotifiedAt.IsZero() {
		t.Error("a failed ring set notified_at")
	}

	fx.clock.advance(5 * time.Second)
	fx.pass()
	if got := fx.term.tries("%1"); got != 2 {
		t.Errorf("a minute later bob's pane was tried %d times, want 2", got)
	}
	if got := fx.term.tries("%2"); got != 2 {
		t.Errorf("a minute later carol's pane was tried %d times, want 2", got)
	}
	if n := fx.log.count(`cannot ring "dave"`); n != 1 {
		t.Errorf("a minute later dave's missing window was reported %d times, want still 1", n)
	}
	if n := fx.log.count(`ringing "bob" in pane %1 failed`); n != 1 {
		t.Errorf("bob's failing ring was logged %d times in two tries, want 1; log:\n%s", n, fx.log)
	}

	// dave comes back in a new window and says so: he is rung at once.
	fx.term.window("dave", "%9")
	fx.clock.advance(time.Second)
	fx.status("dave", "ready", "%9")
	fx.pass()
	fx.wantRings(map[string]int{"%9": 1})
}

func TestPaneChoice(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("alice", "%0")
	fx.term.window("bob", "%1", "%5")   // %1 active, %5 the agent's
	fx.term.window("carol", "%2", "%6") // the agent recorded a pane now in another window
	fx.term.window("elsewhere", "%8")   // ... this one
	fx.term.window("dave", "%3")        // the agent recorded no pane
	fx.term.window("erin", "%4")        // the agent recorded a pane that is gone
	fx.status("bob", "ready", "%5")
	fx.status("carol", "ready", "%8")
	fx.status("dave", "ready", "")
	fx.status("erin", "ready", "%44")
	for _, n := range []string{"bob", "carol", "dave", "erin"} {
		fx.mail(n)
	}
	fx.pass()
	fx.wantRings(map[string]int{"%5": 1, "%2": 1, "%3": 1, "%4": 1})
}

func TestTrickyNames(t *testing.T) {
	fx := newFixture(t)
	// In tmux, "7" as a target is the window at index 7, "-dash" an offset,
	// "a:b" a session and window, and "my" a prefix of "my win".
	names := []string{"alice", "7", "w2", "w3", "w4", "w5", "w6", "x:y", "-dash", "a:b", "my", "my win", "my-other"}
	for i, n := range names {
		fx.term.window(n, fmt.Sprintf("%%%d", i))
	}
	rung := map[string]int{}
	for i, n := range names {
		switch n {
		case "7", "-dash", "a:b":
			fx.status(n, "ready", fmt.Sprintf("%%%d", i))
		case "my":
			// No state entry: found by exact name only.
		default:
			continue
		}
		fx.mail(n)
		rung[fmt.Sprintf("%%%d", i)] = 1
	}
	// "my-other" recorded the pane of "my win": it must not be rung there,
	// and it has no window of its own.
	fx.status("my-other", "ready", "%11")
	fx.term.close("%12")
	fx.mail("my-other")
	// Names that are prefixes of other windows' names, with no window of
	// their own, are rung nowhere.
	fx.status("x", "ready", "")
	fx.mail("x")
	fx.mail("w")
	fx.pass()
	fx.wantRings(rung)
}

func TestIgnoredNeverRung(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("editor", "%1")
	fx.term.window("bob", "%2")
	if err := os.WriteFile(fx.store.Root+"/.agentmailignore", []byte("  editor \n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fx.status("editor", "ready", "%1")
	fx.mail("editor")
	fx.mail("bob")
	fx.pass()
	fx.wantRings(map[string]int{"%2": 1})
}

// A person's address and a named agent have no pane: a window that takes
// such a name is never rung for its mail.
func TestAddressesNeverRung(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("human", "%1")
	fx.term.window("carol", "%2")
	fx.term.window("bob", "%3")
	if err := fx.store.AddPerson("human"); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.store.AddNamedAgent(context.Background(), "carol", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"human", "carol", "bob"} {
		fx.mail(name)
	}
	fx.status("carol", "ready", "%2")
	fx.pass()
	fx.wantRings(map[string]int{"%3": 1})
}

func TestUnreadableStatesRingNobody(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.mail("bob") // bob has no entry we can read: he might be at work
	if err := os.Mkdir(fx.store.StatesPath(), 0o700); err != nil {
		t.Fatal(err)
	}
	fx.pass()
	fx.pass()
	fx.wantRings(nil)
	if n := fx.log.count("cannot read the agents' states"); n != 1 {
		t.Errorf("the unreadable states were logged %d times, want 1; log:\n%s", n, fx.log)
	}
}

func TestTmuxGoneEndsThePass(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.mail("bob")
	fx.term.gone = fmt.Errorf("%w: server is gone", tmux.ErrNotInTmux)
	if _, err := fx.m.pass(context.Background()); !errors.Is(err, tmux.ErrNotInTmux) {
		t.Errorf("pass with tmux gone: err = %v, want ErrNotInTmux", err)
	}

	// Any other failure to list panes is logged, and the pass goes on.
	fx.term.gone = errGone
	if _, err := fx.m.pass(context.Background()); err != nil {
		t.Errorf("pass with a failing tmux: %v", err)
	}
	fx.term.gone = nil
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
}

// TestStopDuringTmux checks that a pass stopped while it asks tmux, or
// before a ring starts, ends saying nothing and remembers no failed ring:
// what failed then failed only because of the stop.
func TestStopDuringTmux(t *testing.T) {
	for _, c := range []struct {
		name    string
		onPanes func(cancel context.CancelFunc) error
	}{
		{"while the panes are listed", func(cancel context.CancelFunc) error {
			cancel()
			return fmt.Errorf("tmux list-panes: %w", context.Canceled)
		}},
		{"before the ring", func(cancel context.CancelFunc) error {
			cancel()
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.term.window("bob", "%1")
			fx.mail("bob")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fx.term.onPanes = func() error { return c.onPanes(cancel) }
			if _, err := fx.m.pass(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("stopped pass: err = %v, want nil or context.Canceled", err)
			}
			if log := fx.log.String(); log != "" {
				t.Errorf("a stopped pass logged:\n%s", log)
			}
			// Nothing is held against bob: the next pass rings him.
			fx.term.onPanes = nil
			fx.pass()
			fx.wantRings(map[string]int{"%1": 1})
		})
	}
}

func TestTmuxCheckedWithoutMail(t *testing.T) {
	fx := newFixture(t)
	fx.term.gone = fmt.Errorf("%w: server is gone", tmux.ErrNotInTmux)
	// With nobody to ring, tmux is still asked once per safetyInterval, so
	// that a mailman whose tmux is gone stops even in a quiet project.
	if _, err := fx.m.pass(context.Background()); !errors.Is(err, tmux.ErrNotInTmux) {
		t.Fatalf("first pass with tmux gone: err = %v, want ErrNotInTmux", err)
	}
	fx.term.gone = nil
	fx.pass()
	fx.term.gone = fmt.Errorf("%w: server is gone", tmux.ErrNotInTmux)
	fx.clock.advance(5 * time.Second)
	if _, err := fx.m.pass(context.Background()); err != nil {
		t.Errorf("pass within the safety interval asked tmux: %v", err)
	}
	fx.clock.advance(5 * time.Second)
	if _, err := fx.m.pass(context.Background()); !errors.Is(err, tmux.ErrNotInTmux) {
		t.Errorf("pass a safety interval later: err = %v, want ErrNotInTmux", err)
	}
}

func TestRingsDoNotWaitForEachOther(t *testing.T) {
	fx := newFixture(t)
	const n = 5
	release := make(chan struct{})
	started := make(chan string, n)
	fx.term.onType = func(pane string) {
		started <- pane
		<-release
	}
	for i := range n {
		name := fmt.Sprintf("agent%d", i)
		fx.term.window(name, fmt.Sprintf("%%%d", i))
		fx.status(name, mailbox.StatusReady, fmt.Sprintf("%%%d", i))
		fx.mail(name)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fx.pass()
	}()
	// Every ring is under way before any of them has finished.
	timeout := time.After(5 * time.Second)
	for range n {
		select {
		case <-started:
		case <-timeout:
			t.Fatal("the rings ran one after the other")
		}
	}
	close(release)
	<-done
	fx.wantRings(map[string]int{"%0": 1, "%1": 1, "%2": 1, "%3": 1, "%4": 1})
}

func TestGuardStopsThePass(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.mail("bob")
	fx.m.Guard = func() error { return errGone }
	if _, err := fx.m.pass(context.Background()); !errors.Is(err, errGone) {
		t.Errorf("pass with a failing guard: err = %v, want %v", err, errGone)
	}
	fx.wantRings(nil)
}

// TestRungBeforeItsEntry checks that a ring of an agent without a state
// entry counts as its notified_at once it makes one: "status ready" right
// after the ring does not bring a second ring within the minute. Work or
// offline in between ends the wait, as it resets notified_at.
func TestRungBeforeItsEntry(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("carol", "%2")
	fx.term.window("dave", "%3")
	fx.mail("carol")
	fx.mail("dave")
	fx.pass()
	fx.wantRings(map[string]int{"%2": 1, "%3": 1})

	fx.clock.advance(2 * time.Second)
	fx.status("carol", "ready", "%2")
	fx.status("dave", "work", "%3")
	fx.pass()
	fx.wantRings(map[string]int{"%2": 1, "%3": 1})
	fx.clock.advance(time.Second)
	fx.status("dave", "ready", "%3")
	fx.pass()
	fx.wantRings(map[string]int{"%2": 1, "%3": 2})

	fx.clock.advance(57 * time.Second)
	fx.pass()
	fx.wantRings(map[string]int{"%2": 2, "%3": 2})
}

// TestFailedRingFutureStatus checks that a state entry updated "in the
// future" (a clock that went back, a hand edit) does not pass for a new
// status at every event: the failed ring still waits its minute.
func TestFailedRingFutureStatus(t *testing.T) {
	fx := newFixture(t)
	now := fx.store.Now
	fx.store.Now = func() time.Time { return now().AddDate(70, 0, 0) }
	fx.status("ghost", "ready", "%5") // no such pane, no such window
	fx.store.Now = now
	for range 12 {
		fx.mail("ghost")
		fx.pass()
		fx.clock.advance(4 * time.Second)
	}
	if n := fx.log.count(`cannot ring "ghost"`); n != 1 {
		t.Errorf("ghost's missing window was tried %d times within a minute, want 1; log:\n%s", n, fx.log)
	}
}

// TestSharedNameNotRung puts two windows named bob among the panes: each
// could be the agent, and agentmail refuses both an address they share, so
// neither is rung, and the log says so once. Once one window is left, bob
// is rung; a second window of the name stops the rings again.
func TestSharedNameNotRung(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.readyWithMail("bob", "%2")
	const shared = `not ringing "bob": 2 windows have that name; rename all but one`
	for range 3 {
		fx.pass()
		fx.clock.advance(time.Minute)
	}
	fx.wantRings(nil)
	if n := fx.log.count(shared); n != 1 {
		t.Fatalf("%d log lines saying %q, want 1; log:\n%s", n, shared, fx.log)
	}

	fx.term.close("%1")
	fx.pass()
	fx.wantRings(map[string]int{"%2": 1})
	fx.term.window("bob", "%3")
	fx.clock.advance(time.Minute)
	fx.pass()
	fx.wantRings(map[string]int{"%2": 1})
	if n := fx.log.count(shared); n != 2 {
		t.Errorf("after a window closed and another opened, %d log lines saying %q, want 2; log:\n%s", n, shared, fx.log)
	}
}

// TestSharedNameButForCaseNotRung puts windows bob and Bob among the panes:
// on a case-insensitive file system they share one mailbox, so neither is
// rung.
func TestSharedNameButForCaseNotRung(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.term.window("Bob", "%2")
	fx.status("bob", "ready", "%1")
	fx.mail("bob")
	fx.pass()
	fx.wantRings(nil)
	if n := fx.log.count(`not ringing "bob": 2 windows have that name`); n != 1 {
		t.Errorf("%d log lines saying bob is not rung, want 1; log:\n%s", n, fx.log)
	}
	fx.term.close("%2")
	fx.clock.advance(time.Minute)
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
}

// TestWorkDuringAnotherRing has bob, rung before, go to work and be ready
// again while the same pass still rings alice, before the pass records his
// ring: his notified_at, reset by the work, says so, and he is rung at
// once by the next pass.
func TestWorkDuringAnotherRing(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("alice", "%0")
	fx.term.window("bob", "%1")
	fx.status("alice", "ready", "%0")
	fx.status("bob", "ready", "%1")
	fx.mail("bob")
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
	if fx.state("bob").NotifiedAt.IsZero() {
		t.Fatal("bob's ring was not recorded")
	}

	fx.clock.advance(time.Minute)
	fx.mail("alice")
	bobDone := make(chan struct{})
	fx.term.onType = func(pane string) {
		switch pane {
		case "%1":
			close(bobDone)
		case "%0":
			<-bobDone
			fx.clock.advance(time.Second)
			fx.status("bob", "work", "%1")
			fx.clock.advance(time.Second)
			fx.status("bob", "ready", "%1")
		}
	}
	fx.pass()
	fx.term.onType = nil
	fx.wantRings(map[string]int{"%0": 1, "%1": 2})
	fx.clock.advance(time.Second)
	fx.pass()
	fx.wantRings(map[string]int{"%0": 1, "%1": 3})
}

// TestMissingWindowLoggedEachTime checks that the log-once of a ring that
// cannot be made lasts as long as the trouble: once the agent has nothing
// to be rung for, the same trouble met again later is logged again.
func TestMissingWindowLoggedEachTime(t *testing.T) {
	fx := newFixture(t)
	fx.status("dave", "ready", "%4") // no window
	fx.mail("dave")
	fx.pass()
	fx.read("dave")
	fx.status("dave", "offline", "%4")
	fx.clock.advance(time.Hour)
	fx.pass()
	fx.clock.advance(24 * time.Hour)
	fx.status("dave", "ready", "%4")
	fx.mail("dave")
	fx.pass()
	if n := fx.log.count(`cannot ring "dave"`); n != 2 {
		t.Errorf("dave's missing window, met twice a day apart, was logged %d times, want 2; log:\n%s", n, fx.log)
	}

	// The same for an agent without an entry, whose mail is read.
	fx.mail("erin")
	fx.pass()
	fx.read("erin")
	fx.clock.advance(time.Hour)
	fx.pass()
	fx.mail("erin")
	fx.pass()
	if n := fx.log.count(`not ringing "erin"`); n != 2 {
		t.Errorf("erin's missing window, met twice, was logged %d times, want 2; log:\n%s", n, fx.log)
	}
}

// TestCleanupAfterRing removes, with cleanup, the entry of a ready agent
// not updated for days but rung a moment ago: cleanup keeps it, so the
// agent is not rung again within the minute as one without an entry.
func TestCleanupAfterRing(t *testing.T) {
	fx := newFixture(t)
	fx.term.window("bob", "%1")
	fx.status("bob", "ready", "%1")
	fx.clock.advance(49 * time.Hour)
	fx.mail("bob")
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
	if _, err := fx.store.Cleanup(mailbox.CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: []string{"bob"}}); err != nil {
		t.Fatal(err)
	}
	fx.clock.advance(time.Second)
	fx.pass()
	fx.wantRings(map[string]int{"%1": 1})
}
