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

// WatchInterval is the period of Watch's safety tick while tmux reports
// changes on a control connection, and WatchRecheck its period when no
// changes can be reported, and how soon a failed check is repeated. Two
// failed checks in a row end the watch. A loss that tmux reports is seen at
// once and confirmed WatchRecheck later; any other within WatchInterval
// plus WatchRecheck plus the time of two checks, inside a second. Every
// check wakes the server and the tmux server; an idle agent's server with a
// control connection is checked twice a second.
const (
	WatchInterval = 500 * time.Millisecond
	WatchRecheck  = 200 * time.Millisecond
)

// Watch blocks until ctx is done (returning nil) or until alive has failed
// twice in a row (returning an error wrapping ErrTmuxGone and the cause).
//
// It checks at once, then whenever changes receives or is closed, at every
// tick of a clock of period interval (recheck once changes is nil or
// closed), and recheck after a check that failed. The clock is never
// stopped or reset by changes or checks, so neither a stream of changes
// nor a check that passed can put the next tick off: a loss that no change
// reports is still seen within a period. The second check keeps one slow
// or interrupted tmux command from ending an agent's server.
func Watch(ctx context.Context, alive func(context.Context) error, interval, recheck time.Duration, changes <-chan struct{}) error {
	if changes == nil {
		interval = recheck
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	again := time.NewTimer(recheck)
	again.Stop()
	defer again.Stop()
	failures := 0
	for {
		err := alive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures = 0
			again.Stop()
		} else if failures++; failures >= 2 {
			return fmt.Errorf("%w: %v", ErrTmuxGone, err)
		} else {
			again.Reset(recheck)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-again.C:
		case _, open := <-changes:
			if !open {
				changes = nil
				tick.Reset(recheck)
			}
		}
	}
}
