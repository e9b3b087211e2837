package tmux

import (
	"context"
	"slices"
	"sync"
	"time"
)

// listing keeps, for a control connection, the last list of the panes of
// the session it is attached to, from which Session and ListPanes answer
// about that session without asking tmux for every one of its windows at
// every tool call. On a session of 50 windows that list costs tmux many
// times what a one-line command does, and tmux answers the commands of
// all its clients one at a time.
//
// A kept list is used only while tmux has reported nothing since it was
// asked for. tmux sends the connection a notification when a window is
// added to, closed in or renamed in any session, when a pane is added to
// or closed in a window of the attached session (%layout-change), when a
// window's active pane changes, and when a session is created, closed or
// switched to. Every notification, of whatever kind, and every opening or
// end of a connection count in Control.epoch, and a list asked for at one
// epoch is used at that epoch only.
//
// A notification can still be on its way when a call begins: tmux has
// written it before the command that made the change ended, but the
// connection reads it a moment later. So a call first has tmux answer a
// command on the connection (see sync): tmux answers after every
// notification it wrote before, so every change made before the call
// began has then been counted.
//
// tmux does not report everything: swap-window, and the commands of hooks
// on tmux's own notifications (window-linked, say), change windows without
// a notification (tmux 3.3a). A list is therefore also kept for no longer
// than listingMaxAge.
//
// A window linked into several sessions is taken for one of the attached
// session when the list holds it, where tmux, asked about one of its
// panes, picks one of those sessions by its own rules.
type listing struct {
	// mu is held while a list is asked for, so that callers who find none
	// at the same time ask tmux once.
	mu      sync.Mutex
	session string    // the session listed, "$N"; "" when none is kept
	epoch   uint64    // Control.epoch when the list was asked for
	at      time.Time // when it was asked for
	rows    []paneRow // never changed once kept: callers share it
}

// listingMaxAge bounds how long a list is kept, for the changes that tmux
// does not report. A variable, so that tests can shorten it.
var listingMaxAge = time.Second

// listedRows returns the rows of "list-panes -s" for the session the
// control connection is attached to, and that session. ok is false when
// there is no open connection or the list cannot be had from it; the
// caller then asks tmux as it would without a connection.
func (c *Client) listedRows(ctx context.Context) (rows []paneRow, session string, ok bool) {
	k := c.Control
	if k == nil || !k.sync(ctx) {
		return nil, "", false
	}
	l := &k.listing
	l.mu.Lock()
	defer l.mu.Unlock()
	epoch := k.epoch.Load()
	session, _ = k.attached.Load().(string)
	if l.session == session && l.epoch == epoch && time.Since(l.at) < listingMaxAge {
		return l.rows, session, true
	}
	if !k.isOpen() {
		return nil, "", false
	}
	at := time.Now()
	rows, err := c.paneRows(ctx, "session "+session, "-s", "-t", session)
	if err != nil {
		return nil, "", false
	}
	// The same epoch means that the same connection answered and that
	// tmux reported nothing before its answer.
	if k.epoch.Load() == epoch {
		l.session, l.epoch, l.at, l.rows = session, epoch, at, rows
	}
	return rows, session, true
}

// listedSession answers Session from listedRows when they hold the
// caller's pane.
func (c *Client) listedSession(ctx context.Context) (*Session, bool) {
	rows, _, ok := c.listedRows(ctx)
	if !ok || !slices.ContainsFunc(rows, func(r paneRow) bool { return r.pane == c.Pane }) {
		return nil, false
	}
	s, err := buildSession(rows, c.Pane)
	return s, err == nil
}

// Listed reports whether the list k keeps of session ("$N") holds pane,
// without asking tmux: only a list that is current as far as the
// connection has read counts. A change made a moment ago, or one that
// tmux does not report, can still be missing from it (see listing), so
// the answer is a hint: it may spare a question whose answer is checked
// again, as SessionIn does, never replace one.
func (k *Control) Listed(session, pane string) bool {
	if k == nil {
		return false
	}
	l := &k.listing
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.session == session && l.epoch == k.epoch.Load() && time.Since(l.at) < listingMaxAge &&
		slices.ContainsFunc(l.rows, func(r paneRow) bool { return r.pane == pane })
}

// sync returns true once tmux has answered, on the open connection, a
// command written after sync was called: tmux writes its notifications
// and its answers in order, so every change it reported before that
// answer has then been counted in epoch. Calls made at once share a
// command: a call that waited for the connection while the command of
// another was written and answered needs none of its own. It returns
// false when the connection is not open or breaks, or ctx has ended.
func (k *Control) sync(ctx context.Context) bool {
	start := k.sent.Load()
	if ctx.Err() != nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.state != controlOpen {
		return false
	}
	if k.answered > start {
		return true
	}
	b, err := k.roundTrip("display-message -p sync")
	if err != nil {
		k.endLocked()
		return false
	}
	return !b.failed
}

// isOpen reports whether the connection is open.
func (k *Control) isOpen() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.state == controlOpen
}
