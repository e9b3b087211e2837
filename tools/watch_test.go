package tools_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

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
	err := tools.Watch(context.Background(), alive, time.Millisecond)
	if !errors.Is(err, tools.ErrTmuxGone) {
		t.Fatalf("Watch = %v, want ErrTmuxGone", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("alive called %d times, want 4", n)
	}
}

func TestWatchWaitsOneIntervalAndStopsWithContext(t *testing.T) {
	var calls atomic.Int32
	alive := func(context.Context) error { calls.Add(1); return errors.New("down") }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tools.Watch(ctx, alive, time.Hour) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch after cancel = %v, want nil", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("alive called %d times before the first interval, want 0", n)
	}
}
