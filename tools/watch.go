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
// changes can be reported, and how soon a check that failed without an
// answer is repeated. A loss that tmux reports is seen at once; any other
// within WatchInterval plus the time of a check. Every check wakes the
// server and the tmux server; an idle agent's server with a control
// connection is checked twice a second.
const (
	WatchInterval = 500 * time.Millisecond
	WatchRecheck  = 200 * time.Millisecond
)

// Watch blocks until ctx is done (returning nil) or until alive reports the
// pane gone (returning an error wrapping ErrTmuxGone and the cause).
//
// The pane is gone when alive returns an error that wraps
// tmux.ErrNotInTmux, an answer of tmux itself: the pane, its session or
// the server is not there, or another server answers on the socket. Any
// other error (tmux did not answer in time, could not be run) counts as
// gone only when the next check fails too, so that one slow or interrupted
// tmux command does not end an agent's server.
//
// It checks a recheck delay after its start, then whenever changes receives or is closed, at every
// tick of a clock of period interval (recheck once changes is nil or
// closed), and recheck after a check that failed. The clock is never
// stopped or reset by changes or checks, so neither a stream of changes
// nor a check that passed can put the next tick off: a loss that no change
// reports is still seen within a period.
//
// One answer is enough because a loss also ends the control connection:
// the checks after it run as tmux processes, and on a loaded machine a
// tmux process can take most of a second to start and answer. Waiting for
// a second answer made the exit take two of them plus the recheck delay,
// past the one second the server has.
func Watch(ctx context.Context, alive func(context.Context) error, interval, recheck time.Duration, changes <-chan struct{}) error {
	if changes == nil {
		interval = recheck
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// The first check comes a recheck delay after the start, so that a
	// starting server answers its client's first requests without a tmux
	// command competing for the processor, and a server that is only
	// probed and closed at once never asks tmux.
	again := time.NewTimer(recheck)
	defer again.Stop()
	failures := 0
	for {
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
		err := alive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures = 0
			again.Stop()
		} else if failures++; failures >= 2 || NotInTmux(err) {
			return fmt.Errorf("%w: %v", ErrTmuxGone, err)
		} else {
			again.Reset(recheck)
		}
	}
}
