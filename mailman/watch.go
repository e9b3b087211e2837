package mailman

import (
	"agentmail/internal/fswatch"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
)

// Run rings agents until ctx is done, reacting to changes of the mailboxes
// and of recipients.jsonl (see the package documentation). It calls started,
// when not nil, once the watches are in place and before the first pass. It
// returns nil when ctx is done, and an error when the file watcher cannot be
// started or fails for good, when tmux is gone, or when Guard fails.
func (m *Mailman) Run(ctx context.Context, started func()) error {
	w, err := fswatch.New()
	if err != nil {
		return fmt.Errorf("starting the file watcher: %w", err)
	}
	defer w.Close()
	// The Store's paths are joined, hence clean, like the names of events.
	p := paths{
		root:   filepath.Clean(m.Store.Root),
		dir:    m.Store.Dir(),
		boxes:  m.Store.MailboxDir(),
		states: m.Store.StatesPath(),
		pid:    PIDPath(m.Store),
	}
	// The root is watched only to see .agentmail appear again after it was
	// removed; its other entries are ignored.
	if err := w.Add(p.root); err != nil {
		return fmt.Errorf("watching %s: %w", p.root, err)
	}
	if err := watchDirs(w, p); err != nil {
		return err
	}
	if started != nil {
		started()
	}

	// wake is when the next pass is due for a reason other than an event:
	// at once at the start, then the safety timer or the end of an agent's
	// once-a-minute wait. burst is when the first of the events not yet
	// handled by a pass arrived; soon is when those events are due.
	wake := time.Now()
	var burst, soon time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	due := func() time.Time {
		if !burst.IsZero() && soon.Before(wake) {
			return soon
		}
		return wake
	}
	for {
		select {
		case <-ctx.Done():
			return nil

		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("the file watcher stopped")
			}
			if !m.relevant(w, p, ev) {
				continue
			}
			t := time.Now()
			if burst.IsZero() {
				burst = t
			}
			soon = t.Add(debounce)
			if limit := burst.Add(maxDelay); soon.After(limit) {
				soon = limit
			}
			timer.Reset(time.Until(due()))

		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("the file watcher stopped")
			}
			// An error such as a queue overflow means events were lost, so
			// look at everything again.
			m.logf("file watcher: %v", err)
			wake = time.Now()
			timer.Reset(0)

		case <-timer.C:
			burst = time.Time{}
			next, err := m.pass(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			wake = time.Now().Add(safetyInterval)
			if !next.IsZero() {
				// next is on the Mailman's clock, timers on the real one.
				if t := time.Now().Add(next.Sub(m.now())); t.Before(wake) {
					wake = t
				}
			}
			timer.Reset(time.Until(due()))
		}
	}
}

// paths are the cleaned paths Run watches and compares events against.
type paths struct {
	root, dir, boxes, states, pid string
}

// watchDirs adds watches on .agentmail and .agentmail/mailboxes when they
// exist. Adding a watch again is harmless.
func watchDirs(w *fswatch.Watcher, p paths) error {
	for _, dir := range []string{p.dir, p.boxes} {
		if err := w.Add(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // The next directory cannot exist either.
			}
			return fmt.Errorf("watching %s: %w", dir, err)
		}
	}
	return nil
}

// relevant reports whether ev may change who should be rung, adding watches
// when .agentmail or its mailboxes directory appears. The mailman's own log,
// lock files and temporary files are not relevant. The PID file is: when
// someone removes it, the pass that follows puts it back (Guard), before a
// second mailman can take its place.
func (m *Mailman) relevant(w *fswatch.Watcher, p paths, ev fswatch.Event) bool {
	name := filepath.Clean(ev.Name)
	switch {
	case name == p.dir || name == p.boxes:
		if ev.Created {
			if err := watchDirs(w, p); err != nil {
				m.logf("%v", err)
			}
		}
		return true
	case name == p.states, name == p.pid && !ev.Created:
		return true
	case filepath.Dir(name) == p.boxes:
		return strings.HasSuffix(name, ".jsonl")
	}
	return false
}
