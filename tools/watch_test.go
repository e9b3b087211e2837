package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"agentmail/tmux"
	"agentmail/tools"
)

func TestWatchEndsAfterTwoFailures(t *testing.T) {
	cause := errors.New("pane gone")
	var calls atomic.Int32
	alive := func(context.Context) error {
		// One failure, one success, then failures: only the second
		// failure in a row ends the watch.
		switch calls.Add(1) {
		case 1, 3:
			return cause
		case 2:
			return nil
		}
		return cause
	}
	err := tools.Watch(context.Background(), alive, time.Millisecond, time.Millisecond, nil)
	if !errors.Is(err, tools.ErrTmuxGone) {
		t.Fatalf("Watch = %v, want ErrTmuxGone", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("alive called %d times, want 4", n)
	}
}

// TestWatchChecksAtOnceAndStopsWithContext: the first check comes at the
// start, and a cancelled watch returns nil without waiting for the next.
// TestWatchEndsAtAnAnswer: tmux saying that the pane is gone ends the watch
// at once, without a second check.
func TestWatchEndsAtAnAnswer(t *testing.T) {
	var calls atomic.Int32
	alive := func(context.Context) error {
		calls.Add(1)
		return fmt.Errorf("%w: tmux pane %%3 not found", tmux.ErrNotInTmux)
	}
	err := tools.Watch(context.Background(), alive, time.Hour, time.Millisecond, nil)
	if !errors.Is(err, tools.ErrTmuxGone) || !strings.Contains(err.Error(), "pane %3 not found") {
		t.Fatalf("Watch = %v, want ErrTmuxGone with the cause", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("alive called %d times, want 1", n)
	}
}

func TestWatchChecksAtOnceAndStopsWithContext(t *testing.T) {
	var calls atomic.Int32
	alive := func(context.Context) error { calls.Add(1); return errors.New("down") }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tools.Watch(ctx, alive, time.Hour, time.Hour, nil) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch after cancel = %v, want nil", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("alive called %d times before the first check was due, want 0", n)
	}
}

// TestWatchRechecksSoon checks that a failed check is repeated after the
// recheck delay, and that after a check that passes the next one comes on
// the clock's next tick, which that check did not put off.
func TestWatchRechecksSoon(t *testing.T) {
	const interval = time.Second
	start := time.Now()
	var at []time.Time
	alive := func(context.Context) error {
		at = append(at, time.Now())
		if len(at) == 2 {
			return nil
		}
		return errors.New("down")
	}
	if err := tools.Watch(context.Background(), alive, interval, 10*time.Millisecond, make(chan struct{})); !errors.Is(err, tools.ErrTmuxGone) {
		t.Fatalf("Watch = %v, want ErrTmuxGone", err)
	}
	if len(at) != 4 {
		t.Fatalf("alive called %d times, want 4", len(at))
	}
	if d := at[1].Sub(at[0]); d >= interval/2 {
		t.Errorf("check after a failure came %v later, want the recheck delay", d)
	}
	if d := at[2].Sub(start); d < interval || d > interval+interval/2 {
		t.Errorf("check after a pass came %v after the start, want the first tick, %v", d, interval)
	}
	if d := at[3].Sub(at[2]); d >= interval/2 {
		t.Errorf("second failure came %v after the first, want the recheck delay", d)
	}
}

// TestWatchChecksOnChange checks that a value on changes starts a check at
// once, long before the interval.
func TestWatchChecksOnChange(t *testing.T) {
	changes := make(chan struct{}, 1)
	checked := make(chan struct{}, 4)
	alive := func(context.Context) error {
		checked <- struct{}{}
		return errors.New("down")
	}
	done := make(chan error, 1)
	go func() { done <- tools.Watch(context.Background(), alive, time.Hour, time.Millisecond, changes) }()
	changes <- struct{}{}
	select {
	case err := <-done:
		if !errors.Is(err, tools.ErrTmuxGone) {
			t.Fatalf("Watch = %v, want ErrTmuxGone", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not check on a change")
	}
	if n := len(checked); n != 2 {
		t.Errorf("alive called %d times, want 2", n)
	}
}

// TestWatchWithoutChanges checks that without changes to wait for (none
// given, or the channel closed when the control connection ended) checks
// come every recheck delay, not every interval.
func TestWatchWithoutChanges(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	for _, changes := range []chan struct{}{nil, closed} {
		var calls atomic.Int32
		alive := func(context.Context) error {
			if calls.Add(1) <= 3 {
				return nil
			}
			return errors.New("down")
		}
		done := make(chan error, 1)
		go func() { done <- tools.Watch(context.Background(), alive, time.Hour, time.Millisecond, changes) }()
		select {
		case err := <-done:
			if !errors.Is(err, tools.ErrTmuxGone) {
				t.Errorf("changes %v: Watch = %v, want ErrTmuxGone", changes, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("changes %v: Watch waited for the interval", changes)
		}
	}
}
