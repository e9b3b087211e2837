// Package tools is the one layer shared by the CLI and the MCP server: the
// operations send, receive, status and list-recipients as plain Go functions,
// the texts both surfaces print, and the MCP methods that expose them.
//
// The CLI and the MCP server call the same Service methods and format results
// with the same functions, so the same operation gives the same result on both
// surfaces by construction.
package tools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"agentmail/mailbox"
	"agentmail/mailman"
	"agentmail/tmux"
)

// Terminal is the part of tmux the operations need: the caller's window and
// the windows of its session, learned with one tmux command.
type Terminal interface {
	Session(ctx context.Context) (*tmux.Session, error)
}

// Service runs the operations for one agent.
type Service struct {
	// Store is the mailbox of the project; nil when no root was found, in
	// which case StoreErr says why.
	Store    *mailbox.Store
	StoreErr error
	// Term is the caller's tmux; nil when not inside tmux, in which case
	// TermErr says why.
	Term    Terminal
	TermErr error
	// LockWait bounds the lock waits of one operation, for locks in
	// .agentmail that another process holds; zero means DefaultLockWait.
	LockWait time.Duration
}

// DefaultLockWait is how long an operation waits for locks that another
// process holds before it fails, changing nothing. A lock is held for
// milliseconds; a holder that keeps it longer has stopped (a suspended
// process, say), and a command, a hook or a tool call must not hang on it.
const DefaultLockWait = 5 * time.Second

func (s *Service) lockWait() time.Duration { return cmp.Or(s.LockWait, DefaultLockWait) }

// lockContext is ctx, bounded by the lock wait. Under it the store only
// waits for locks, so its deadline passing means a lock was held too long.
func (s *Service) lockContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.lockWait())
}

// lockError says of an operation that gave up on a lock that it did, and
// passes any other error on.
func (s *Service) lockError(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var busy *mailbox.BusyError
	if !errors.As(err, &busy) {
		// The budget ran out in an earlier wait of the same operation.
		return fmt.Errorf("a file in .agentmail is locked by another process: gave up after waiting %v", s.lockWait())
	}
	return fmt.Errorf("%w: gave up after waiting %v", busy, s.lockWait())
}

// ErrRecipientNotFound is the error for an unknown, ignored or own window.
var ErrRecipientNotFound = errors.New("recipient not found")

// ErrNoMessage is returned for an empty message body.
var ErrNoMessage = errors.New("no message provided")

// ErrNotUTF8 is returned for a message body that is not valid UTF-8: JSON
// cannot carry it unchanged.
var ErrNotUTF8 = errors.New("message is not valid UTF-8 text")

// NotInTmux reports whether err means the caller is not inside tmux.
func NotInTmux(err error) bool { return errors.Is(err, tmux.ErrNotInTmux) }

func (s *Service) store() (*mailbox.Store, error) {
	st, err := s.Store, s.StoreErr
	if st == nil && err == nil {
		err = errors.New("no project root")
	}
	return st, err
}

// session asks tmux for the caller's window and its session's windows, and
// refuses an identity that cannot own a mailbox: a message is never written
// with an empty or unusable sender.
func (s *Service) session(ctx context.Context) (*tmux.Session, error) {
	if s.Term == nil {
		if s.TermErr != nil {
			return nil, s.TermErr
		}
		return nil, tmux.ErrNotInTmux
	}
	sess, err := s.Term.Session(ctx)
	if err != nil {
		return nil, err
	}
	if err := mailbox.ValidName(sess.Self.Name); err != nil {
		return nil, fmt.Errorf("your window name %q cannot be used as an agent name: %w", sess.Self.Name, err)
	}
	return sess, nil
}

// agent is session for the operations that use the caller's address: send
// (as the sender), receive (its mailbox) and recipients. It also refuses a
// caller whose window name another window of its session has, since the
// two agents would read each other's mail, unless the name is listed in
// .agentmailignore: an ignored window is nobody's address.
func (s *Service) agent(ctx context.Context) (*tmux.Session, error) {
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	n, otherCase := windowsNamed(sess, sess.Self.Name)
	if n < 2 {
		return sess, nil
	}
	if st := s.Store; st != nil {
		ignored, err := st.Ignored()
		if err != nil {
			return nil, err
		}
		if ignored[sess.Self.Name] {
			return sess, nil
		}
	}
	return nil, &SharedNameError{Name: sess.Self.Name, Windows: n, Own: true, Case: otherCase}
}

// SharedNameError is the error for a name that several windows of the
// session have: the agents in them would share one mailbox. Names that
// differ only in case count as one, since a case-insensitive file system
// (macOS's, by default) gives them one mailbox file.
type SharedNameError struct {
	Name    string
	Windows int  // how many windows of the session have the name
	Own     bool // the caller's own window is one of them
	Case    bool // some of them spell it in other letter case
}

func (e *SharedNameError) Error() string {
	what, rename := "another window", "rename one of them"
	if e.Windows > 2 {
		what, rename = fmt.Sprintf("%d other windows", e.Windows-1), "rename all but one of them"
	}
	rename += " (tmux rename-window) so that each agent has an address of its own"
	letterCase := ""
	if e.Case {
		letterCase = ", but for letter case, and on a case-insensitive file system they share one mailbox"
	}
	if e.Own {
		return fmt.Sprintf("your window name %q is also the name of %s of this session%s: %s", e.Name, what, letterCase, rename)
	}
	return fmt.Sprintf("recipient %q is ambiguous: %d windows of this session have that name%s; %s", e.Name, e.Windows, letterCase, rename)
}

// windowsNamed counts the windows of sess whose names share name's mailbox
// (mailbox.SameMailbox), and reports whether any of them spells it
// otherwise.
func windowsNamed(sess *tmux.Session, name string) (n int, otherCase bool) {
	for _, w := range sess.Windows {
		if mailbox.SameMailbox(w.Name, name) {
			n++
			otherCase = otherCase || w.Name != name
		}
	}
	return n, otherCase
}

// Send stores message for recipient and returns the stored message.
//
// Sending to yourself, to an ignored window or to a window that does not
// exist in the caller's session fails with ErrRecipientNotFound, with a
// "did you mean" hint when a close name exists; sending to a name that
// several windows of the session have fails with a *SharedNameError, since
// their agents would share one mailbox. ctx, and the lock wait,
// bound the wait for the recipient's mailbox lock.
//
// replyTo, when not empty, is the id of a message the caller received or
// sent: the new message answers it, in its thread. An id the caller never
// received or sent fails with an error that names it, and nothing is
// stored.
func (s *Service) Send(ctx context.Context, recipient, message, replyTo string) (mailbox.Message, error) {
	ms, err := s.SendAll(ctx, []string{recipient}, message, replyTo)
	if err != nil {
		return mailbox.Message{}, err
	}
	return ms[0], nil
}

// MaxRecipients bounds the recipients of one send.
const MaxRecipients = 50

// SendAll sends message to each of recipients, each its own message, all
// in one thread: the thread of replyTo's message, or the one the first
// message starts. Every name is checked before anything is stored, so one
// unknown or shared name refuses the whole send, naming it.
func (s *Service) SendAll(ctx context.Context, recipients []string, message, replyTo string) ([]mailbox.Message, error) {
	if err := checkBody(message); err != nil {
		return nil, err
	}
	if err := checkRecipientList(recipients); err != nil {
		return nil, err
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	sess, err := s.agent(ctx)
	if err != nil {
		return nil, err
	}
	ignored, err := st.Ignored()
	if err != nil {
		return nil, err
	}
	others, err := otherAddresses(ctx, st)
	if err != nil {
		return nil, err
	}
	for _, r := range recipients {
		if err := checkRecipient(sess, ignored, others, r); err != nil {
			if len(recipients) > 1 {
				// Nothing is stored: the send names the one that failed.
				return nil, fmt.Errorf("%q: %w; nothing was sent", r, err)
			}
			return nil, err
		}
	}
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	var parent *mailbox.Message
	if replyTo != "" {
		self := sess.Self.Name
		if isPerson(sess) {
			// A person may step into any thread of the project, all of
			// which their page shows them.
			self = ""
		}
		if parent, err = findOwn(ctx, st, self, func(m *mailbox.Message) bool { return m.ID == replyTo }); err != nil {
			return nil, s.lockError(err)
		}
		if parent == nil {
			return nil, fmt.Errorf("reply_to %q: no message with that id was sent to you or by you", replyTo)
		}
	}
	return s.appendAll(ctx, st, sess.Self.Name, recipients, message, parent)
}

// appendAll stores one message to each recipient, the first in parent's
// thread or a thread of its own, the others in the first one's thread.
func (s *Service) appendAll(ctx context.Context, st *mailbox.Store, from string, recipients []string, message string, parent *mailbox.Message) ([]mailbox.Message, error) {
	ms := make([]mailbox.Message, 0, len(recipients))
	thread := ""
	for _, r := range recipients {
		m, err := st.AppendIn(ctx, from, r, message, parent, thread)
		if err != nil {
			if len(ms) > 0 {
				return ms, fmt.Errorf("stored for %s, then %s: %w", sentTo(ms), r, s.lockError(err))
			}
			return nil, s.lockError(err)
		}
		ms = append(ms, m)
		thread = m.Thread()
	}
	return ms, nil
}

// sentTo names the recipients of messages already stored.
func sentTo(ms []mailbox.Message) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.To
	}
	return strings.Join(names, ", ")
}

// checkBody checks a message's text.
func checkBody(message string) error {
	switch {
	case len(message) > mailbox.MaxMessageSize:
		return mailbox.ErrTooLarge
	case message == "":
		return ErrNoMessage
	case !utf8.ValidString(message):
		// Storing it would replace the bad bytes, changing the message.
		return ErrNotUTF8
	}
	return nil
}

// checkRecipientList checks the shape of a send's list of names.
func checkRecipientList(recipients []string) error {
	switch {
	case len(recipients) == 0 || len(recipients) == 1 && recipients[0] == "":
		return errors.New("no recipient given")
	case len(recipients) > MaxRecipients:
		return fmt.Errorf("%d recipients: one send takes at most %d", len(recipients), MaxRecipients)
	}
	for i, r := range recipients {
		if slices.Contains(recipients[:i], r) {
			return fmt.Errorf("recipient %q given twice", r)
		}
	}
	return nil
}

// checkRecipient checks that name is another agent's address in sess, or
// a person's (see mailbox.Store.People). Only valid names are recipients,
// so no other name reaches the store.
func checkRecipient(sess *tmux.Session, ignored map[string]bool, addrs []address, name string) error {
	// The windows are looked at first, and the addresses only for name, as
	// recipients lists them: a hub has many named agents.
	listed := slices.ContainsFunc(recipients(sess, ignored, nil), func(r Recipient) bool { return !r.IsCurrent && r.Name == name })
	if !listed && slices.ContainsFunc(addrs, func(a address) bool { return a.name == name }) {
		listed = !ignored[name] && !slices.ContainsFunc(sess.Windows, func(w tmux.Window) bool { return mailbox.SameMailbox(w.Name, name) })
	}
	if !listed {
		var others []string
		for _, r := range recipients(sess, ignored, addrs) {
			if !r.IsCurrent {
				others = append(others, r.Name)
			}
		}
		if err := mailbox.ValidName(name); err != nil && slices.ContainsFunc(sess.Windows, func(w tmux.Window) bool { return w.Name == name }) {
			return fmt.Errorf("invalid recipient: %w", err)
		}
		if hint := closest(name, others); hint != "" {
			return fmt.Errorf("%w (did you mean %q?)", ErrRecipientNotFound, hint)
		}
		return ErrRecipientNotFound
	}
	if n, otherCase := windowsNamed(sess, name); n > 1 {
		return &SharedNameError{Name: name, Windows: n, Case: otherCase}
	}
	return nil
}

// MaxWait is the longest a receive may wait for mail.
const MaxWait = 600 * time.Second

// Receive returns the caller's oldest unread message and marks it read, or
// nil when there is none. deliver, when not nil, hands the message on
// before it is marked read, and ctx, and the lock wait, bound the wait for
// the mailbox's lock (see mailbox.Store.Receive).
//
// With wait above zero and no unread mail, Receive waits up to wait for a
// message to arrive, watching the mailbox file rather than polling it, and
// returns nil when the time is up. It watches before it first looks, so
// mail stored in between is not missed. A wait that ends with ctx (the
// call cancelled, the client gone, the server stopping) takes nothing.
func (s *Service) Receive(ctx context.Context, wait time.Duration, deliver func(*mailbox.Message) error) (*mailbox.Message, error) {
	if wait < 0 || wait > MaxWait {
		return nil, fmt.Errorf("the wait must be between 0 and %d seconds", int(MaxWait/time.Second))
	}
	// tmux first, as for every command that needs it: outside tmux the
	// answer is "not inside tmux" wherever the command runs.
	sess, err := s.agent(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	var changes <-chan struct{}
	if wait > 0 {
		var stop func()
		changes, stop, err = st.Watch(sess.Self.Name)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	deadline := time.Now().Add(wait)
	for {
		lctx, cancel := s.lockContext(ctx)
		m, err := st.Receive(lctx, sess.Self.Name, deliver)
		cancel()
		if m != nil && err == nil {
			// The sender's view of the message; the mail itself does not
			// depend on it, so a failure to record it fails nothing.
			st.RecordDelivery(mailbox.DeliveryEvent{ID: m.ID, To: m.To, State: mailbox.Read})
		}
		if m != nil || err != nil || wait == 0 {
			return m, s.lockError(err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(left)
		select {
		case <-changes:
			t.Stop()
		case <-t.C:
			// One last look: mail may have come with the deadline.
			wait = 0
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// MarkRead marks m, a message Receive gave to a deliver function that
// failed while still handing it on, read in the caller's mailbox once it
// has been handed on. A message already read there is left as it is (see
// mailbox.Store.MarkRead).
func (s *Service) MarkRead(ctx context.Context, m *mailbox.Message) error {
	sess, err := s.agent(ctx)
	if err != nil {
		return err
	}
	st, err := s.store()
	if err != nil {
		return err
	}
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	_, err = st.MarkRead(ctx, sess.Self.Name, m)
	return s.lockError(err)
}

// SetStatus records the caller's status (ready, work or offline) and its
// pane id, which the mailman uses to ring the right pane.
func (s *Service) SetStatus(ctx context.Context, status string) error {
	return s.SetStatusFrom(ctx, status, "", "")
}

// SetStatusFrom is SetStatus from a hook of client, an assistant, that
// said its session: both are recorded with the status.
func (s *Service) SetStatusFrom(ctx context.Context, status, client, session string) error {
	if err := mailbox.ValidStatus(status); err != nil {
		return err
	}
	// tmux first: outside tmux, status is a no-op for hooks, wherever
	// they run.
	sess, err := s.session(ctx)
	if err != nil {
		return err
	}
	st, err := s.store()
	if err != nil {
		return err
	}
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	var prompt string
	if r, ok := s.Term.(lineReader); ok && status == mailbox.StatusReady && sess.Self.Pane != "" && mailmanRuns(st) {
		// Only a mailman types into panes, so the line is read only while
		// one runs: a status costs no more tmux than before otherwise.
		// Without it the mailman rings as it always did; a status never
		// fails for it.
		prompt, _ = r.InputLine(ctx, sess.Self.Pane)
	}
	return s.lockError(st.SetStatusFrom(ctx, sess.Self.Name, status, sess.Self.Pane, client, session, prompt))
}

// mailmanRuns reports whether a mailman holds st's mailman lock.
func mailmanRuns(st *mailbox.Store) bool {
	pid, err := mailman.Running(mailman.PIDPath(st))
	return err == nil && pid != 0
}

// lineReader is a Term that can read the line of a pane its cursor is on.
type lineReader interface {
	InputLine(ctx context.Context, pane string) (string, error)
}

// Recipient is one entry of the recipients list.
type Recipient struct {
	Name      string `json:"name"`
	IsCurrent bool   `json:"is_current"`
	// Windows counts the windows of the session whose names share this
	// name's mailbox (windowsNamed), as send counts them: send refuses a
	// name that more than one has (see SharedNameError), and the text
	// marks it; the caller's own entry has 1. It is not part of the
	// tool's structured output.
	Windows int `json:"-"`
	// Person marks the address of a person, who reads mail on the web
	// page (agentmail web), not a tmux window. It is not part of the
	// tool's structured output either, whose schema is fixed.
	Person bool `json:"-"`
	// Remote marks a named agent: one that is no tmux window and reaches
	// the project's HTTP server with a token of its own (agentmail agent).
	// Not part of the structured output either.
	Remote bool `json:"-"`
}

// Recipients lists the windows of the caller's session in tmux order, minus
// ignored ones; the caller's own window is always listed and marked.
func (s *Service) Recipients(ctx context.Context) ([]Recipient, error) {
	sess, err := s.agent(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	ignored, err := st.Ignored()
	if err != nil {
		return nil, err
	}
	others, err := otherAddresses(ctx, st)
	if err != nil {
		return nil, err
	}
	return recipients(sess, ignored, others), nil
}

// recipients lists the agents of sess in tmux order: the caller's own
// window, marked, and every other name once, minus ignored names and names
// that cannot name a mailbox (mailbox.ValidName: "", "a/b", a tab, …). send
// refuses the names this does not list as others, and a listed name that
// several windows have (see SharedNameError). Another window with the
// caller's own name is skipped as ignored: agent refuses such a name
// unless .agentmailignore lists it. The addresses that are no window,
// people's and named agents', come last, marked, unless a window or an
// ignored name has it: a window keeps its address.
func recipients(sess *tmux.Session, ignored map[string]bool, addrs []address) []Recipient {
	list := []Recipient{}
	at := map[string]bool{} // names listed
	for _, w := range sess.Windows {
		self := w.ID == sess.Self.ID
		if at[w.Name] && !self {
			continue
		}
		if !self && (ignored[w.Name] || mailbox.ValidName(w.Name) != nil) {
			continue
		}
		at[w.Name] = true
		r := Recipient{Name: w.Name, IsCurrent: self, Windows: 1}
		if !self {
			// As send counts them: names that differ only in letter
			// case share a mailbox, so each counts the other's windows.
			r.Windows, _ = windowsNamed(sess, w.Name)
		}
		list = append(list, r)
	}
	windows := newFoldSet(len(sess.Windows))
	for _, w := range sess.Windows {
		windows.add(w.Name)
	}
	for _, a := range addrs {
		if !ignored[a.name] && !windows.has(a.name) {
			list = append(list, Recipient{Name: a.name, Windows: 1, Person: !a.remote, Remote: a.remote})
		}
	}
	return list
}

// SentText is the success text of send.
func SentText(id string) string { return "Message #" + id + " sent" }

// SentAllText is the text of a send: SentText for one message, and a line
// naming the recipient for each of several.
// A recipient that cannot act soon (see Waiting) is named in brackets.
func SentAllText(ms []mailbox.Message, waiting map[string]string) string {
	lines := make([]string, len(ms))
	for i, m := range ms {
		lines[i] = SentText(m.ID)
		if len(ms) > 1 {
			lines[i] += " to " + m.To
		}
		if why := waiting[m.To]; why != "" {
			lines[i] += " (" + why + "; it is kept until " + m.To + " reads it)"
		}
	}
	return strings.Join(lines, "\n")
}

// NoMail is the text of a receive that found nothing.
const NoMail = "No unread messages"

// ReceivedText is the text of a receive: the message with its sender and id,
// or NoMail.
func ReceivedText(m *mailbox.Message) string {
	if m == nil {
		return NoMail
	}
	head := "From: " + m.From + "\nID: " + m.ID
	if m.ReplyTo != "" {
		head += "\nReply-To: " + m.ReplyTo
	}
	if m.Thread() != m.ID {
		head += "\nThread: " + m.Thread()
	}
	return head + "\n\n" + m.Message
}

// NoOthers ends the recipients text of an agent that is alone in its
// session, so that an empty list is never mistaken for a failure.
const NoOthers = "No other agents in this session"

// RecipientsText is the text of list-recipients and of the CLI's
// recipients, one operation with one text on both surfaces: one name a
// line, the caller's as "<name> [you]", a name that several windows share
// as "<name> [N windows: unreachable]", since send refuses it, a person's
// address as "<name> [person]", then
// NoOthers when nobody else is there.
func RecipientsText(list []Recipient) string {
	lines := make([]string, 0, len(list)+1)
	others := 0
	for _, r := range list {
		switch {
		case r.IsCurrent:
			lines = append(lines, r.Name+" [you]")
		case r.Windows > 1:
			lines = append(lines, fmt.Sprintf("%s [%d windows: unreachable]", r.Name, r.Windows))
			others++
		case r.Person:
			lines = append(lines, r.Name+" [person]")
			others++
		case r.Remote:
			lines = append(lines, r.Name+" [remote]")
			others++
		default:
			lines = append(lines, r.Name)
			others++
		}
	}
	if others == 0 {
		lines = append(lines, NoOthers)
	}
	return strings.Join(lines, "\n")
}

// closest returns the candidate most like name, or "" when none is close
// enough to be a plausible typo.
func closest(name string, candidates []string) string {
	best, bestDist := "", 0
	lname := []rune(strings.ToLower(name))
	for _, c := range candidates {
		lc := []rune(strings.ToLower(c))
		limit := 2
		if n := len([]rune(c)); n <= 3 {
			limit = 1
		}
		d := distanceAtMost(lname, lc, limit)
		if d > limit {
			continue
		}
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// distanceAtMost is the Levenshtein distance between a and b when it is at
// most limit, and limit+1 otherwise. Only the cells within limit of the
// table's diagonal can hold such a distance, so only those are computed,
// and it stops once a whole row exceeds limit: a long name costs time in
// proportion to its length, not to the product of the two lengths.
func distanceAtMost(a, b []rune, limit int) int {
	over := limit + 1
	if abs(len(a)-len(b)) > limit {
		return over
	}
	prev := make([]int, len(b)+2)
	cur := make([]int, len(b)+2)
	for j := range prev {
		prev[j] = min(j, over)
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-limit), min(len(b), i+limit)
		cur[lo-1] = over
		if lo == 1 {
			cur[0] = min(i, over)
		}
		rowMin := cur[lo-1]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost, over)
			rowMin = min(rowMin, cur[j])
		}
		cur[hi+1] = over
		if rowMin >= over {
			return over
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
