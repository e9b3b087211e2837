// Package mailman is agentmail's notifier: it rings an idle agent whose
// mailbox holds unread mail by typing "Check your agentmail" into the
// agent's tmux pane, then pressing Enter as a key of its own. It never types
// a message body.
//
// # Who is rung
//
// A pass looks at every state entry of recipients.jsonl and at every
// mailbox:
//
//   - An agent whose status is ready and who has unread mail is rung, and
//     rung again at most once a minute while the mail
//     stays unread. A successful ring is recorded as the entry's
//     notified_at, which "status work" and "status offline" reset and
//     "status ready" keeps, so an agent that went to work and came back is
//     rung at once if mail still waits. The mailman learns of that work
//     from a pass that sees it, or from a notified_at reset while it was
//     ringing; a ring of an agent never rung since its last work, during
//     which the agent worked and said ready again, looks like a repeated
//     ready, and counts against the minute all the same.
//   - Agents whose status is work or offline are never rung.
//   - An agent with a mailbox but no state entry (it never ran "agentmail
//     status") is rung at most once a minute while a window of its
//     name exists, and never when there is none. Such a ring counts as the
//     notified_at of the entry the agent makes next, unless that entry
//     says work or offline.
//   - A ring that fails, including a ready agent whose window is gone, is
//     retried at most once a minute, not on every event; a new
//     status from the agent ends that wait early (a status time in the
//     future does not count as new).
//   - Names listed in .agentmailignore are never rung: they are windows that
//     are not agents, and text typed into them would do harm.
//
// The timers of the rules above are measured from the moment a ring starts,
// so a ready agent is rung again a minute after a ring started, not a
// minute plus the time the ring took.
//
// # Which pane
//
// tmux is never targeted by window name (it would read "7" as an index, "-x"
// as an offset, "a:b" as session:window and "my" as a prefix of "my win").
// An agent is rung in the pane recorded in its state entry when that pane
// still exists and belongs to a window with exactly the agent's name;
// otherwise in the active pane of the first window, in tmux order, whose
// name is exactly the agent's name. The panes considered are those the
// Terminal lists: the command line restricts them to the session of the
// pane the mailman was started from, or to the whole server. When several
// windows among them have the agent's name, none is rung, and the log says
// so once: each could be the agent, and inside one session none of them can
// read the mail (agentmail refuses an address that two windows share).
//
// # When
//
// Run watches the project root (to see .agentmail appear), .agentmail and
// .agentmail/mailboxes with inotify (polling elsewhere), adding watches as
// the directories appear. A relevant event (a change of recipients.jsonl or
// of a mailbox file, or the removal of the mailman's PID file) schedules a
// pass 50 ms later; a stream of events never postpones it by more than
// 300 ms from the first event. A pass also runs when a once-a-minute wait
// of an agent with unread mail ends, and at least every ten seconds in
// case an event was missed. Rings of different agents in one pass run at the
// same time, so one agent's Enter delay does not hold up another's in that
// pass; the next pass waits for them, so a long Enter delay postpones rings
// that events during a ring call for. tmux is asked for its panes whenever
// someone may be rung, and at least every ten seconds otherwise; when
// the tmux server or the session the mailman serves is gone, Run returns,
// since nobody is left to ring.
//
// A pass waits at most a second for the lock of a mailbox or of
// recipients.jsonl. A file that another process keeps locked for longer is
// skipped, so that one held mailbox does not keep the other agents from
// being rung; the skip is logged once. Until the file is free again, passes
// wait for it only briefly, and one runs every quarter of a second to look
// at it again: letting go of a lock is no event the watcher sees. When ctx
// ends, as on a stop signal, a pass ends at once, whatever lock it waits
// for.
//
// # One mailman per root
//
// Acquire takes an exclusive flock on .agentmail/mailman.pid with a
// non-blocking try and the mailman holds it for its lifetime; whoever fails
// the try reads the holder's PID and gives up. Running and Stop find the
// holder the same way. The kernel drops the lock with its holder, so no PID
// is trusted on its own.
package mailman

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"agentmail/mailbox"
	"agentmail/tmux"
)

// ringText is what the mailman types into an agent's pane.
const ringText = "Check your agentmail"

// The mailman's timing.
const (
	// ringInterval is the least time between two rings of one agent.
	ringInterval = time.Minute
	// safetyInterval is the longest time between two passes.
	safetyInterval = 10 * time.Second
	// debounce is how long Run waits after an event for more events.
	debounce = 50 * time.Millisecond
	// maxDelay bounds how long a stream of events can postpone a pass.
	maxDelay = 300 * time.Millisecond
)

// storeWait bounds how long a pass waits for the lock of one file of the
// store (a mailbox, recipients.jsonl). Such a lock is held for milliseconds;
// a file locked for longer is left for a later pass, so that it holds up
// neither the rings of other agents nor a stop.
const storeWait = time.Second

// busyWait bounds the wait for a file that was still locked when last
// tried: long enough to take a lock that has been let go, short enough
// that a file held for good does not cost storeWait on every pass.
const busyWait = 100 * time.Millisecond

// recheckInterval is how soon a pass that skipped a locked file is
// followed by another. The store's abandoned wait takes the lock as soon
// as its holder lets go, but tells nobody, so the mailman looks again.
const recheckInterval = 250 * time.Millisecond

// busyText is what the log says of a file that another process kept locked.
const busyText = "it is locked by another process"

// wake tells c of its mail: through its Codex session when it has one and
// Queue is set, and by typing into its pane otherwise, or when that fails.
func (m *Mailman) wake(ctx context.Context, c *candidate) error {
	if m.Queue != nil && c.client == "codex" && c.session != "" {
		err := m.Queue(ctx, c.session, ringText)
		if err == nil {
			c.by = "codex"
			return nil
		}
		m.logf("cannot queue for %q in its Codex session: %v; typing instead", c.name, err)
	}
	c.by = "mailman"
	// A pane in copy mode takes keys as commands, whatever its agent: it
	// is looked at before every ring. The line itself is compared only
	// with one recorded at ready.
	line, err := m.Term.InputLine(ctx, c.target)
	switch {
	case errors.Is(err, tmux.ErrPaneInMode):
		return err
	case c.prompt == "":
	case err != nil:
		return err
	case line != c.prompt:
		return errDraft
	}
	if err := m.Term.Type(ctx, c.target, ringText); err != nil {
		return err
	}
	if c.prompt != "" {
		return m.submitted(ctx, c.target, c.prompt)
	}
	return nil
}

// errDraft is the wake of an agent whose input line is not as it was when
// the agent became ready: a person may be typing there.
var errDraft = errors.New("its input line holds text that may be a person's draft")

// errNotSubmitted is a ring whose text stayed on the agent's input line.
var errNotSubmitted = errors.New("the ring did not leave its input line")

// submitWait is how long a ring's text may take to leave the input line
// once Enter is pressed.
const submitWait = 2 * time.Second

// submitted waits for pane's input line to be back as the agent left it
// (prompt), as it is once the assistant has taken the ring. That the text
// is gone is not enough: a prompt box that takes a fast Enter as a new
// line moves the cursor to an empty line below the text, which stays
// unsent. The text is never deleted when it stays.
func (m *Mailman) submitted(ctx context.Context, pane, prompt string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		line, err := m.Term.InputLine(ctx, pane)
		if err == nil && line == prompt {
			return nil
		}
		select {
		case <-ctx.Done():
			return errNotSubmitted
		case <-tick.C:
		}
	}
}

// recordNotified records, for the senders, that a wake reached c with
// the unread mail it holds: the messages stored since its previous ring
// (all unread ones for an agent never rung), which earlier rings did not
// cover. It reads the mailbox, not the whole delivery record, so a ring
// costs the same however long the record grows. It is a view of the
// delivery, not the mail: a failure fails nothing.
func (m *Mailman) recordNotified(ctx context.Context, c *candidate, now time.Time) {
	unread, err := m.Store.Recent(context.WithoutCancel(ctx), c.name, maxRecorded, func(msg *mailbox.Message) bool {
		return !msg.ReadFlag && msg.CreatedAt.After(c.notified)
	})
	if err != nil {
		return
	}
	for _, msg := range unread {
		m.Store.RecordDelivery(mailbox.DeliveryEvent{ID: msg.ID, To: c.name, State: mailbox.Notified, At: now, By: c.by})
	}
}

// maxRecorded bounds the messages one wake records as notified.
const maxRecorded = 1000

// ringTimeout is the deadline of one ring's context. It cuts a long Enter
// delay short, but the ring still ends with its Enter (see Terminal.Type).
const ringTimeout = 10 * time.Second

// Terminal is the part of tmux the mailman needs. *Tmux implements it.
type Terminal interface {
	// Panes lists the panes the mailman may ring, with their windows, in
	// tmux order. An error wrapping tmux.ErrNotInTmux means that the tmux
	// server (or the session the mailman serves) is gone for good.
	Panes(ctx context.Context) ([]tmux.Pane, error)
	// Type types text literally into pane, a pane id, then presses Enter.
	// When ctx ends, as it does when the mailman stops, Type returns soon,
	// but never with the text typed and the Enter not pressed: a ring left
	// half done would be sent along with whatever is typed next.
	Type(ctx context.Context, pane, text string) error
	// InputLine returns the line of pane its cursor is on, trailing
	// spaces removed.
	InputLine(ctx context.Context, pane string) (string, error)
}

// Mailman rings agents. Set Store and Term; Logf, Now and Guard are
// optional. Its methods must not be called concurrently.
type Mailman struct {
	Store *mailbox.Store
	Term  Terminal
	// Logf receives one line per thing worth knowing. Nil discards them.
	Logf func(format string, args ...any)
	// Now tells the time. Nil means time.Now.
	Now func() time.Time
	// Guard, when set, is called before every pass; an error stops Run. The
	// command line uses it to check that it still holds the mailman lock.
	Guard func() error
	// Queue, when set, wakes an agent that runs in a Codex session (its
	// state names the client "codex" and the session) without typing into
	// its pane, by queueing text for that session; an error falls back to
	// typing.
	Queue func(ctx context.Context, session, text string) error

	// tried holds, per agent, the last ring that counts against the agent's
	// once-a-minute limit outside recipients.jsonl: every ring of an agent
	// without a state entry, and failed rings of stated agents.
	tried map[string]try
	// asked is when tmux was last asked for its panes.
	asked time.Time
	// said remembers the last message logged per subject, so that a
	// condition that lasts is logged once, not on every pass.
	said map[string]string
	// busy holds the keys of the files of the store whose lock another
	// process held when they were last tried (see lockContext).
	busy map[string]bool
}

func (m *Mailman) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Mailman) logf(format string, args ...any) {
	if m.Logf != nil {
		m.Logf(format, args...)
	}
}

// report logs msg about subject unless it is what was last logged about it;
// an empty msg forgets the subject, so that its next message is logged.
func (m *Mailman) report(subject, msg string) {
	if m.said == nil {
		m.said = map[string]string{}
	}
	if msg == "" {
		delete(m.said, subject)
		return
	}
	if m.said[subject] != msg {
		m.said[subject] = msg
		m.logf("%s", msg)
	}
}

// lockContext bounds a call of the store on the file named by key: by
// storeWait, or by busyWait when the file was locked when last tried.
func (m *Mailman) lockContext(ctx context.Context, key string) (context.Context, context.CancelFunc) {
	if m.busy[key] {
		return context.WithTimeout(ctx, busyWait)
	}
	return context.WithTimeout(ctx, storeWait)
}

// held records whether err says that the file named by key was locked by
// another process, and reports it.
func (m *Mailman) held(key string, err error) bool {
	var busy *mailbox.BusyError
	if !errors.As(err, &busy) {
		delete(m.busy, key)
		return false
	}
	if m.busy == nil {
		m.busy = map[string]bool{}
	}
	m.busy[key] = true
	return true
}

// candidate is an agent with unread mail that may be rung in this pass.
type candidate struct {
	name   string
	stated bool   // it has a state entry (and is ready)
	pane   string // the pane recorded in the entry, if any
	// updated and notified are the entry's updated_at and notified_at
	// when the pass read it.
	updated, notified time.Time
	target            string // the pane to ring
	shared            int    // how many windows have the name, when more than one: none is rung
	// client and session are the assistant session the entry names, if
	// any; by is how the ring went: "codex" or "mailman" (typed).
	client, session, by string
	// prompt is the agent's input line as it was when it became ready.
	prompt string
}

// pass rings every agent that should be rung now and returns when the
// earliest once-a-minute wait of an agent with unread mail ends (zero when
// there is none), so that the caller can run the next pass then. It returns
// an error only when Guard fails or the tmux server or session is gone,
// which nothing will cure, or with ctx's error when ctx ends; other trouble
// is logged and the pass does what it safely can. A file of the store that
// another process keeps locked for more than a second is skipped, and next
// is then at most recheckInterval away, to look at it again.
func (m *Mailman) pass(ctx context.Context) (next time.Time, err error) {
	if m.Guard != nil {
		if err := m.Guard(); err != nil {
			return time.Time{}, err
		}
	}
	r := &round{m: m, ctx: ctx, now: m.now(), every: ringInterval}
	m.forgetTries(r.now, r.every)
	in, ok := r.read()
	if ctx.Err() != nil {
		return time.Time{}, ctx.Err()
	}
	if !ok {
		return r.next, nil
	}
	cands := r.candidates(in)
	// A pass that ends here because the mailman stops says nothing more:
	// what failed then failed only because of the stop.
	if ctx.Err() != nil {
		return time.Time{}, ctx.Err()
	}
	// tmux is asked when someone may be rung, and otherwise once per
	// safetyInterval, so that a mailman whose tmux is gone stops.
	if len(cands) == 0 && r.now.Sub(m.asked) < safetyInterval {
		return r.next, nil
	}
	m.asked = r.now
	panes, err := m.Term.Panes(ctx)
	if err != nil {
		if errors.Is(err, tmux.ErrNotInTmux) {
			return time.Time{}, err
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		m.report("panes", "cannot list the tmux panes: "+err.Error())
		return r.next, nil
	}
	m.report("panes", "")
	errs := r.ring(cands, panes)
	for i := range cands {
		r.settle(&cands[i], errs[i])
	}
	return r.next, nil
}

// round is one pass in progress: its time, and the earliest time the next
// pass is needed.
type round struct {
	m     *Mailman
	ctx   context.Context
	now   time.Time
	every time.Duration
	next  time.Time
}

// later asks for the next pass at t at the latest.
func (r *round) later(t time.Time) {
	if r.next.IsZero() || t.Before(r.next) {
		r.next = t
	}
}

// waiting reports whether a ring that started at t is recent enough to
// wait for, and schedules the end of the wait.
func (r *round) waiting(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	// A time in the future is not trusted: it would silence the agent
	// until then.
	if since := r.now.Sub(t); since >= 0 && since < r.every {
		r.later(t.Add(r.every))
		return true
	}
	return false
}

// forgetTries drops the rings whose minute is over.
func (m *Mailman) forgetTries(now time.Time, every time.Duration) {
	if m.tried == nil {
		m.tried = map[string]try{}
	}
	for name, t := range m.tried {
		if now.Sub(t.at) >= every {
			delete(m.tried, name)
		}
	}
}

// inputs are what a pass reads of the store.
type inputs struct {
	states  []mailbox.State
	ignored map[string]bool
	boxes   []string
}

// read reads the states, the ignored names and the mailboxes. Without the
// states nobody is rung (ok false): an agent at work must never be taken
// for one without an entry because its entry could not be read.
func (r *round) read() (in inputs, ok bool) {
	m := r.m
	sctx, cancel := m.lockContext(r.ctx, "states")
	states, err := m.Store.States(sctx)
	cancel()
	switch {
	case r.ctx.Err() != nil:
		return in, false
	case m.held("states", err):
		m.report("states", "cannot read the agents' states: "+busyText)
		r.later(r.now.Add(recheckInterval))
		return in, false
	case err != nil:
		m.report("states", "cannot read the agents' states: "+err.Error())
		return in, false
	}
	m.report("states", "")
	in.states = states
	in.ignored, err = m.Store.Ignored()
	if err != nil {
		m.report("ignore", "cannot read .agentmailignore, ringing as if it were empty: "+err.Error())
	} else {
		m.report("ignore", "")
	}
	// A person reads mail on the web page, and a named agent reaches the
	// project over HTTP: neither has a pane, and a window that takes
	// such a name is never rung for it, as an ignored name is not.
	people, _ := m.Store.People()
	named, _ := m.Store.NamedAgents(r.ctx)
	if len(people)+len(named) > 0 && in.ignored == nil {
		in.ignored = map[string]bool{}
	}
	for _, p := range people {
		in.ignored[p] = true
	}
	for _, a := range named {
		in.ignored[a.Name] = true
	}
	in.boxes, err = m.Store.Mailboxes()
	if err != nil {
		m.report("mailboxes", "cannot list the mailboxes: "+err.Error())
	} else {
		m.report("mailboxes", "")
	}
	return in, true
}

// unread reports whether name's mailbox holds unread mail; a mailbox it
// cannot read, or that another process holds, counts as none for now.
func (r *round) unread(name string) bool {
	m := r.m
	key := "mailbox " + name
	uctx, cancel := m.lockContext(r.ctx, key)
	has, err := m.Store.HasUnread(uctx, name)
	cancel()
	switch {
	case r.ctx.Err() != nil:
		return false
	case m.held(key, err):
		m.report("unread "+name, fmt.Sprintf("not looking at the mailbox of %q for now: %s; looking again once it is free", name, busyText))
		r.later(r.now.Add(recheckInterval))
		return false
	case err != nil:
		m.report("unread "+name, fmt.Sprintf("cannot read the mailbox of %q: %v", name, err))
		return false
	}
	m.report("unread "+name, "")
	return has
}

// candidates lists the agents to ring now: ready agents with unread mail
// whose minute is over, then agents without an entry, which are rung while
// their window exists.
func (r *round) candidates(in inputs) []candidate {
	var cands []candidate
	stated := make(map[string]bool, len(in.states))
	for _, st := range in.states {
		stated[st.Recipient] = true
		if c, ok := r.stated(st, in.ignored); ok {
			cands = append(cands, c)
		}
	}
	for _, name := range in.boxes {
		if stated[name] {
			continue
		}
		if in.ignored[name] || !r.unread(name) {
			r.m.report("window "+name, "")
			continue
		}
		if r.waiting(r.m.tried[name].at) {
			continue
		}
		cands = append(cands, candidate{name: name})
	}
	return cands
}

// stated reports whether the agent of entry st is to be rung now.
func (r *round) stated(st mailbox.State, ignored map[string]bool) (candidate, bool) {
	m := r.m
	// Entries such as the empty name the earlier tool could write have no
	// mailbox and no window to ring.
	if mailbox.ValidName(st.Recipient) != nil {
		return candidate{}, false
	}
	if st.Status != mailbox.StatusReady {
		// Work and offline end every wait, as they reset notified_at.
		delete(m.tried, st.Recipient)
		m.report("window "+st.Recipient, "")
		return candidate{}, false
	}
	if ignored[st.Recipient] || !r.unread(st.Recipient) {
		// Whatever kept it from being rung is said again should it come
		// back.
		m.report("window "+st.Recipient, "")
		return candidate{}, false
	}
	if r.waiting(st.NotifiedAt) {
		return candidate{}, false
	}
	// A ring from before the agent had an entry counts as its
	// notified_at. A failed ring waits too, unless the agent has set its
	// status since (it may be back in a new pane); a time in the future is
	// not trusted to say so.
	if t, ok := m.tried[st.Recipient]; ok {
		renewed := st.UpdatedAt.After(t.at) && !st.UpdatedAt.After(r.now)
		if (t.rang || !renewed) && r.waiting(t.at) {
			return candidate{}, false
		}
	}
	return candidate{name: st.Recipient, stated: true, pane: st.Pane, updated: st.UpdatedAt, notified: st.NotifiedAt,
		client: st.Client, session: st.Session, prompt: st.Prompt}, true
}

// ring wakes every candidate that has exactly one window, at once, and
// returns how each went.
func (r *round) ring(cands []candidate, panes []tmux.Pane) []error {
	var wg sync.WaitGroup
	errs := make([]error, len(cands))
	for i := range cands {
		c := &cands[i]
		c.target = target(panes, c.name, c.pane)
		if c.target == "" {
			continue
		}
		if c.shared = windowsNamed(panes, c.name); c.shared > 1 {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.ctx, ringTimeout)
			defer cancel()
			errs[i] = r.m.wake(ctx, c)
		})
	}
	wg.Wait()
	return errs
}

// settle reports and records how the ring of c went.
func (r *round) settle(c *candidate, err error) {
	m, now, every := r.m, r.now, r.every
	switch {
	case c.shared > 1:
		m.report("window "+c.name, fmt.Sprintf("not ringing %q: %d windows have that name; "+
			"rename all but one so that each agent has an address of its own", c.name, c.shared))
	case c.target == "" && !c.stated:
		m.report("window "+c.name, fmt.Sprintf("not ringing %q: it has unread mail but no window", c.name))
	case c.target == "":
		m.report("window "+c.name, fmt.Sprintf("cannot ring %q: no window has that name; trying again every %v", c.name, every))
		m.tried[c.name] = try{at: now}
		r.later(now.Add(every))
	case err != nil && r.ctx.Err() != nil && errors.Is(err, r.ctx.Err()):
		// The stop came before the ring started: nothing was typed, and
		// nothing failed.
	case errors.Is(err, errDraft), errors.Is(err, tmux.ErrPaneInMode):
		// Looked at again on the next passes, which come soon enough.
		m.report("window "+c.name, fmt.Sprintf("not ringing %q now: %v; trying again", c.name, err))
		r.later(now.Add(recheckInterval))
	case err != nil:
		m.report("window "+c.name, fmt.Sprintf("ringing %q in pane %s failed: %v; trying again every %v", c.name, c.target, err, every))
		m.tried[c.name] = try{at: now}
		r.later(now.Add(every))
	default:
		r.rang(c)
	}
}

// rang logs and records a ring that happened.
func (r *round) rang(c *candidate) {
	m, now := r.m, r.now
	m.report("window "+c.name, "")
	if c.by == "codex" {
		m.logf("woke %q through its Codex session", c.name)
	} else {
		m.logf("rang %q in pane %s", c.name, c.target)
	}
	m.recordNotified(r.ctx, c, now)
	r.later(now.Add(r.every))
	if !c.stated {
		m.tried[c.name] = try{at: now, rang: true}
		return
	}
	delete(m.tried, c.name)
	// The ring happened, so it is recorded even when the mailman is
	// stopping; lockContext bounds the wait. Its key is not that of
	// reading the states: a record waits for recipients.lock as well,
	// which a reading never takes.
	rctx, cancel := m.lockContext(context.WithoutCancel(r.ctx), "record")
	unrecorded, err := m.markNotified(rctx, c, now)
	cancel()
	m.held("record", err)
	if err != nil {
		m.logf("cannot record the ring of %q: %v", c.name, err)
	}
	if err != nil || unrecorded {
		// The ring counts against the agent's minute all the same. Work
		// or offline end the wait, as always.
		m.tried[c.name] = try{at: now, rang: true}
	}
}

// try is a ring that counts against an agent's once-a-minute limit outside
// recipients.jsonl: when it started, and whether it rang.
type try struct {
	at   time.Time
	rang bool
}

// markNotified sets the notified_at of c's entry to t, unless the agent
// has set its status since the pass read the entry (when its updated_at was
// updated), so that a notified_at reset by work or offline stands. It
// reports whether the ring, not recorded, must still count against the
// agent's minute: when the entry says ready and shows no such reset, the
// agent only said ready again while it was rung.
func (m *Mailman) markNotified(ctx context.Context, c *candidate, t time.Time) (unrecorded bool, err error) {
	err = m.Store.UpdateState(ctx, c.name, func(st *mailbox.State, exists bool) bool {
		ready := exists && st.Status == mailbox.StatusReady && st.NotifiedAt.Equal(c.notified)
		if ready && st.UpdatedAt.Equal(c.updated) {
			st.NotifiedAt = t
			return true
		}
		unrecorded = ready
		return false
	})
	return unrecorded, err
}

// windowsNamed counts the windows among panes whose names share name's
// mailbox (mailbox.SameMailbox).
func windowsNamed(panes []tmux.Pane, name string) int {
	var seen []string
	for _, p := range panes {
		if mailbox.SameMailbox(p.WindowName, name) && !slices.Contains(seen, p.Window) {
			seen = append(seen, p.Window)
		}
	}
	return len(seen)
}

// target returns the pane to ring for the agent name: the recorded pane when
// it still exists in a window named exactly name, else the active pane of
// the first window named exactly name, else "".
func target(panes []tmux.Pane, name, recorded string) string {
	if recorded != "" {
		for _, p := range panes {
			if p.ID == recorded && p.WindowName == name {
				return p.ID
			}
		}
	}
	for _, p := range panes {
		if p.WindowName == name && p.Active {
			return p.ID
		}
	}
	return ""
}
