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
// still there. Two failed checks in a row end the watch, so the loss is
// reported within about two intervals plus the time of one tmux command,
// well inside a second.
const WatchInterval = 200 * time.Millisecond

// Watch blocks until ctx is done (returning nil) or until alive has failed
// twice in a row (returning an error wrapping ErrTmuxGone and the cause).
// The second check keeps one slow or interrupted tmux command from ending
// an agent's server. The first check comes one interval after the start,
// so that a starting server answers its client's first requests without a
// tmux process competing for the CPU.
func Watch(ctx context.Context, alive func(context.Context) error, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := alive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures = 0
		} else if failures++; failures >= 2 {
			return fmt.Errorf("%w: %v", ErrTmuxGone, err)
		}
	}
}
