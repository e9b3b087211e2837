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
	w, p, err := m.watch()
	if err != nil {
		return err
	}
	defer w.Close()
	if started != nil {
		started()
	}
	sched := newSchedule()
	defer sched.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("the file watcher stopped")
			}
			if m.relevant(w, p, ev) {
				sched.event(time.Now())
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("the file watcher stopped")
			}
			// An error such as a queue overflow means events were lost, so
			// look at everything again.
			m.logf("file watcher: %v", err)
			sched.now()
		case <-sched.timer.C:
			next, err := m.pass(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			// next is on the Mailman's clock, timers on the real one.
			sched.passed(next, m.now())
		}
	}
}

// watch starts watching the store: the root, only to see .agentmail
// appear again after it was removed (its other entries are ignored), and
// the directories that hold the mailboxes and the states.
func (m *Mailman) watch() (*fswatch.Watcher, paths, error) {
	w, err := fswatch.New()
	if err != nil {
		return nil, paths{}, fmt.Errorf("starting the file watcher: %w", err)
	}
	// The Store's paths are joined, hence clean, like the names of events.
	p := paths{
		root:   filepath.Clean(m.Store.Root),
		dir:    m.Store.Dir(),
		boxes:  m.Store.MailboxDir(),
		states: m.Store.StatesPath(),
		pid:    PIDPath(m.Store),
	}
	if err := w.Add(p.root); err != nil {
		w.Close()
		return nil, paths{}, fmt.Errorf("watching %s: %w", p.root, err)
	}
	if err := watchDirs(w, p); err != nil {
		w.Close()
		return nil, paths{}, err
	}
	return w, p, nil
}

// schedule decides when the next pass runs. wake is when it is due for a
// reason other than an event: at once at the start, then the safety timer
// or the end of an agent's once-a-minute wait. burst is when the first of
// the events not yet handled by a pass arrived; soon is when those events
// are due.
type schedule struct {
	wake, burst, soon time.Time
	timer             *time.Timer
}

func newSchedule() *schedule {
	return &schedule{wake: time.Now(), timer: time.NewTimer(0)}
}

// due is when the next pass runs.
func (s *schedule) due() time.Time {
	if !s.burst.IsZero() && s.soon.Before(s.wake) {
		return s.soon
	}
	return s.wake
}

// event schedules a pass for an event at t: after the events that follow
// it within debounce, and at most maxDelay after the first of them.
func (s *schedule) event(t time.Time) {
	if s.burst.IsZero() {
		s.burst = t
	}
	s.soon = t.Add(debounce)
	if limit := s.burst.Add(maxDelay); s.soon.After(limit) {
		s.soon = limit
	}
	s.timer.Reset(time.Until(s.due()))
}

// now schedules a pass at once.
func (s *schedule) now() {
	s.wake = time.Now()
	s.timer.Reset(0)
}

// passed schedules the pass after one that asked to run again at next
// (zero: no need), which is on the Mailman's clock, whose time is clock.
func (s *schedule) passed(next, clock time.Time) {
	s.burst = time.Time{}
	s.wake = time.Now().Add(safetyInterval)
	if !next.IsZero() {
		if t := time.Now().Add(next.Sub(clock)); t.Before(s.wake) {
			s.wake = t
		}
	}
	s.timer.Reset(time.Until(s.due()))
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
