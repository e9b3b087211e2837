package mailman

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/tmux"
)

// fakeTerm is a tmux server in memory: panes in windows, and what each pane
// was typed. It is safe for the concurrent rings of a pass.
type fakeTerm struct {
	mu       sync.Mutex
	panes    []tmux.Pane
	typed    map[string][]string // pane -> texts typed into it, in order
	attempts map[string]int      // pane -> calls of Type, failed ones included
	fail     map[string]error    // pane -> error Type returns
	gone     error               // when set, Panes returns it
	onType   func(pane string)   // called inside Type, before it returns
	onPanes  func() error        // called first in Panes; its error is Panes' error
	rung     chan string         // when set, receives the pane of every ring
	windows  int                 // windows added so far, for unique ids
	lines    map[string]string   // pane -> its input line, when set
}

func newFakeTerm() *fakeTerm {
	return &fakeTerm{typed: map[string][]string{}, attempts: map[string]int{}, fail: map[string]error{}}
}

// window adds a window with one active pane per id (the first is active).
func (f *fakeTerm) window(name string, panes ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := fmt.Sprintf("@%d", 100+f.windows)
	f.windows++
	for i, p := range panes {
		f.panes = append(f.panes, tmux.Pane{ID: p, Window: w, WindowName: name, Active: i == 0})
	}
}

// close removes the window that holds pane.
func (f *fakeTerm) close(pane string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var w string
	for _, p := range f.panes {
		if p.ID == pane {
			w = p.Window
		}
	}
	f.panes = slices.DeleteFunc(f.panes, func(p tmux.Pane) bool { return p.Window == w })
}

func (f *fakeTerm) Panes(ctx context.Context) ([]tmux.Pane, error) {
	f.mu.Lock()
	onPanes := f.onPanes
	f.mu.Unlock()
	if onPanes != nil {
		if err := onPanes(); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone != nil {
		return nil, f.gone
	}
	return slices.Clone(f.panes), nil
}

func (f *fakeTerm) Type(ctx context.Context, pane, text string) error {
	f.mu.Lock()
	f.attempts[pane]++
	err := f.fail[pane]
	if err == nil {
		// As tmux's client does, a done context types nothing.
		err = ctx.Err()
	}
	if err == nil && !slices.ContainsFunc(f.panes, func(p tmux.Pane) bool { return p.ID == pane }) {
		err = fmt.Errorf("can't find pane: %s", pane)
	}
	if err == nil {
		f.typed[pane] = append(f.typed[pane], text)
	}
	onType, rung := f.onType, f.rung
	f.mu.Unlock()
	if onType != nil {
		onType(pane)
	}
	if err == nil && rung != nil {
		rung <- pane
	}
	return err
}

// InputLine returns the line set for pane in lines, "" when none is.
func (f *fakeTerm) InputLine(ctx context.Context, pane string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lines[pane], nil
}

// allRings returns the number of rings per pane, for panes that were rung,
// and checks that no pane was typed anything but the ring.
func (f *fakeTerm) allRings(t *testing.T) map[string]int {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]int{}
	for p, texts := range f.typed {
		for _, text := range texts {
			if text != ringText {
				t.Errorf("pane %s was typed %q, want only %q", p, text, ringText)
			}
		}
		m[p] = len(texts)
	}
	return m
}

func (f *fakeTerm) tries(pane string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[pane]
}

// clock is a fake time that only moves when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// logs collects a Mailman's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// count returns how many lines contain s.
func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// fixture is a Mailman on a fresh root with a fake terminal and clock.
type fixture struct {
	t     *testing.T
	m     *Mailman
	store *mailbox.Store
	term  *fakeTerm
	clock *clock
	log   *logs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	st := mailbox.New(t.TempDir())
	st.Now = c.now
	l := &logs{}
	st.Warnf = l.logf
	term := newFakeTerm()
	return &fixture{
		t:     t,
		m:     &Mailman{Store: st, Term: term, Logf: l.logf, Now: c.now},
		store: st,
		term:  term,
		clock: c,
		log:   l,
	}
}

// pass runs one pass and returns when the next one is due.
func (fx *fixture) pass() time.Time {
	fx.t.Helper()
	next, err := fx.m.pass(context.Background())
	if err != nil {
		fx.t.Fatalf("pass: %v", err)
	}
	return next
}

func (fx *fixture) mail(to string) {
	fx.t.Helper()
	if _, err := fx.store.Append(context.Background(), "alice", to, "the body, never typed"); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fixture) status(name, status, pane string) {
	fx.t.Helper()
	if err := fx.store.SetStatus(context.Background(), name, status, pane); err != nil {
		fx.t.Fatal(err)
	}
}

// readyWithMail gives name a window with pane, a ready status and a
// message: an agent the next pass may ring.
func (fx *fixture) readyWithMail(name, pane string) {
	fx.t.Helper()
	fx.term.window(name, pane)
	fx.status(name, "ready", pane)
	fx.mail(name)
}

func (fx *fixture) read(name string) {
	fx.t.Helper()
	for {
		m, err := fx.store.Receive(context.Background(), name, nil)
		if err != nil {
			fx.t.Fatal(err)
		}
		if m == nil {
			return
		}
	}
}

func (fx *fixture) state(name string) mailbox.State {
	fx.t.Helper()
	states, err := fx.store.States(context.Background())
	if err != nil {
		fx.t.Fatal(err)
	}
	for _, st := range states {
		if st.Recipient == name {
			return st
		}
	}
	fx.t.Fatalf("no state entry for %q", name)
	return mailbox.State{}
}

// wantRings checks the number of rings of every pane: those not listed must
// have none.
func (fx *fixture) wantRings(want map[string]int) {
	fx.t.Helper()
	got := fx.term.allRings(fx.t)
	for p, n := range got {
		if want[p] != n {
			fx.t.Errorf("pane %s was rung %d times, want %d (all rings: %v)", p, n, want[p], got)
		}
	}
	for p, n := range want {
		if got[p] != n {
			fx.t.Errorf("pane %s was rung %d times, want %d (all rings: %v)", p, got[p], n, got)
		}
	}
	if fx.t.Failed() {
		fx.t.Logf("log:\n%s", fx.log)
	}
}

var errGone = errors.New("gone")
