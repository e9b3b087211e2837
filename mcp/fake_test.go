package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"agentmail/tmux"
)

// fakeTerm is a tmux session held in memory: a list of windows, the one the
// agent sits in, and a gate that can hold every Session call until it is
// released or the call is cancelled, so a test can have a tool call in
// flight for as long as it needs.
type fakeTerm struct {
	mu      sync.Mutex
	self    string
	windows []string
	gate    chan struct{} // non-nil while held; closed to release
	blocked int           // Session calls waiting at the gate
	changed chan struct{} // closed and replaced whenever blocked changes
}

func newFakeTerm(self string, windows ...string) *fakeTerm {
	return &fakeTerm{self: self, windows: windows, changed: make(chan struct{})}
}

// Session implements tools.Terminal.
func (f *fakeTerm) Session(ctx context.Context) (*tmux.Session, error) {
	f.mu.Lock()
	gate := f.gate
	if gate != nil {
		f.setBlocked(+1)
	}
	f.mu.Unlock()
	if gate != nil {
		var err error
		select {
		case <-gate:
		case <-ctx.Done():
			err = ctx.Err()
		}
		f.mu.Lock()
		f.setBlocked(-1)
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	sess := &tmux.Session{}
	found := false
	for i, name := range f.windows {
		w := tmux.Window{ID: "@" + strconv.Itoa(i), Name: name, Pane: "%" + strconv.Itoa(i)}
		if name == f.self && !found {
			sess.Self, found = w, true
		}
		sess.Windows = append(sess.Windows, w)
	}
	if !found {
		return nil, fmt.Errorf("%w: no window %q in the fake session", tmux.ErrNotInTmux, f.self)
	}
	return sess, nil
}

// setBlocked changes the count of blocked calls and wakes waiters. f.mu must
// be held.
func (f *fakeTerm) setBlocked(delta int) {
	f.blocked += delta
	close(f.changed)
	f.changed = make(chan struct{})
}

// hold makes later Session calls wait until release.
func (f *fakeTerm) hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate == nil {
		f.gate = make(chan struct{})
	}
}

// release lets every waiting and later Session call through.
func (f *fakeTerm) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate != nil {
		close(f.gate)
		f.gate = nil
	}
}

// waitBlocked waits until at least one Session call waits at the gate.
func (f *fakeTerm) waitBlocked(d time.Duration) error {
	deadline := time.After(d)
	for {
		f.mu.Lock()
		n, changed := f.blocked, f.changed
		f.mu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return errors.New("no tool call reached tmux in time")
		}
	}
}

// setSelf moves the agent to another window.
func (f *fakeTerm) setSelf(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.self = name
}

// setWindows replaces the session's windows.
func (f *fakeTerm) setWindows(names []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.windows = names
}

// current returns the window the agent sits in.
func (f *fakeTerm) current() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.self
}
