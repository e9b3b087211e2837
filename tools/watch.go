package tools

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTmuxGone is returned by Watch when the agent's pane, its session or the
// tmux server has gone away.
var ErrTmuxGone = errors.New("tmux context lost")

// WatchInterval is how often Watch asks tmux whether the agent's pane is
// still there while tmux reports changes on a control connection, and
// WatchRecheck how soon it asks again after a failed check, and how often
// it asks when no changes are reported (before the connection opens, and
// without one). Two failed checks in a row end the watch. A loss that tmux
// reports is seen at once and confirmed WatchRecheck later; any other within
// WatchInterval plus WatchRecheck plus the time of three tmux commands,
// inside a second. Every check wakes the server and the tmux server; an
// idle agent's server with a control connection is checked twice a second.
const (
	WatchInterval = 500 * time.Millisecond
	WatchRecheck  = 200 * time.Millisecond
)

// Watch blocks until ctx is done (returning nil) or until alive has failed
// twice in a row (returning an error wrapping ErrTmuxGone and the cause).
// The first check comes recheck after the start, so that a starting server
// answers its client's first requests without a tmux command competing for
// the CPU. Then a check comes at once when changes receives, every interval
// while changes is open, every recheck when it is nil or closed, and
// recheck after one that failed; the second check keeps one slow or
// interrupted tmux command from ending an agent's server.
func Watch(ctx context.Context, alive func(context.Context) error, interval, recheck time.Duration, changes <-chan struct{}) error {
	if changes == nil {
		interval = recheck
	}
	t := time.NewTimer(recheck)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case _, open := <-changes:
			t.Stop()
			if !open {
				changes, interval = nil, recheck
			}
		}
		err := alive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures = 0
			t.Reset(interval)
		} else if failures++; failures >= 2 {
			return fmt.Errorf("%w: %v", ErrTmuxGone, err)
		} else {
			t.Reset(recheck)
		}
	}
}
