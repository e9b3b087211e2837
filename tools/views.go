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
)

// InboxSize is how many messages the inbox view shows.
const InboxSize = 20

// InboxFilter chooses the messages of an inbox view.
type InboxFilter struct {
	All  bool   // read mail too; otherwise unread mail only
	From string // only mail from this sender, when set
}

// Inbox is a view of the caller's mailbox that marks nothing read: how many
// messages are unread, and the newest messages the filter keeps, unread
// first.
type Inbox struct {
	Agent    string         `json:"agent"`
	Unread   int            `json:"unread"`
	Messages []InboxMessage `json:"messages"`
}

// InboxMessage is one message of an inbox view: its header and the first
// line of its body.
type InboxMessage struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	ThreadID  string    `json:"thread_id,omitempty"`
	Unread    bool      `json:"unread"`
	FirstLine string    `json:"first_line"`
}

// Inbox returns the caller's inbox view: the newest InboxSize messages
// that filter keeps, unread ones first, each group newest first. It reads
// the mailbox backwards from its end and marks nothing read.
func (s *Service) Inbox(ctx context.Context, filter InboxFilter) (Inbox, error) {
	sess, err := s.agent(ctx)
	if err != nil {
		return Inbox{}, err
	}
	st, err := s.store()
	if err != nil {
		return Inbox{}, err
	}
	name := sess.Self.Name
	unread, err := st.Unread(context.Background(), name)
	if err != nil {
		return Inbox{}, err
	}
	keep := func(m *mailbox.Message) bool {
		return (filter.All || !m.ReadFlag) && (filter.From == "" || m.From == filter.From)
	}
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	recent, err := st.Recent(ctx, name, InboxSize, keep)
	if err != nil {
		return Inbox{}, s.lockError(err)
	}
	in := Inbox{Agent: name, Unread: unread, Messages: []InboxMessage{}}
	for _, unreadFirst := range []bool{true, false} {
		for _, m := range recent {
			if m.ReadFlag == unreadFirst {
				continue
			}
			in.Messages = append(in.Messages, InboxMessage{
				ID: m.ID, From: m.From, CreatedAt: m.CreatedAt, ThreadID: m.Thread(),
				Unread: !m.ReadFlag, FirstLine: firstLine(m.Message),
			})
		}
	}
	return in, nil
}

// InboxText is the inbox view as Markdown, for a person or a model.
func InboxText(in Inbox) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Inbox of %s\n\n", in.Agent)
	switch in.Unread {
	case 0:
		b.WriteString("No unread messages.\n")
	case 1:
		b.WriteString("1 unread message.\n")
	default:
		fmt.Fprintf(&b, "%d unread messages.\n", in.Unread)
	}
	if len(in.Messages) > 0 {
		b.WriteString("\n")
	}
	for _, m := range in.Messages {
		state := "read"
		if m.Unread {
			state = "unread"
		}
		fmt.Fprintf(&b, "- %s, from %s, %s", state, m.From, timeText(m.CreatedAt))
		if m.ThreadID != "" && m.ThreadID != m.ID {
			fmt.Fprintf(&b, ", thread %s", m.ThreadID)
		}
		fmt.Fprintf(&b, ", id %s: %s\n", m.ID, m.FirstLine)
	}
	return b.String()
}

// firstLine is the first line of a body, cut to a length that keeps a
// view readable.
func firstLine(body string) string {
	line, _, more := strings.Cut(body, "\n")
	const most = 120
	if len(line) > most {
		cut := most
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		return line[:cut] + "…"
	}
	if more {
		return line + " …"
	}
	return line
}

// timeText is a message's time as a view shows it.
func timeText(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ErrThreadNotFound is the error for a thread that does not exist, or that
// the caller has no message of: the two are not told apart.
var ErrThreadNotFound = errors.New("thread not found")

// Thread is a whole thread, oldest message first.
type Thread struct {
	ID       string            `json:"thread_id"`
	Messages []mailbox.Message `json:"messages"`
}

// Thread returns the thread id, when the caller sent or received one of its
// messages; otherwise ErrThreadNotFound. Threads span mailboxes, so it
// reads every mailbox of the project.
func (s *Service) Thread(ctx context.Context, id string) (Thread, error) {
	sess, err := s.agent(ctx)
	if err != nil {
		return Thread{}, err
	}
	th, err := s.ProjectThread(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	if !slices.ContainsFunc(th.Messages, func(m mailbox.Message) bool {
		return m.From == sess.Self.Name || m.To == sess.Self.Name
	}) {
		return Thread{}, ErrThreadNotFound
	}
	return th, nil
}

// readThread reads the messages of thread id from every mailbox, oldest
// first.
func readThread(ctx context.Context, st *mailbox.Store, id string) (Thread, error) {
	th := Thread{ID: id}
	if id == "" {
		return th, nil
	}
	err := eachMessage(ctx, st, func(m *mailbox.Message) bool {
		if m.Thread() == id {
			th.Messages = append(th.Messages, *m)
		}
		return true
	})
	if err != nil {
		return Thread{}, err
	}
	slices.SortStableFunc(th.Messages, func(a, b mailbox.Message) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return th, nil
}

// ThreadText is a thread as Markdown for a model's context: the first line
// of its first message as a heading, then each message with its sender,
// time and body, separated by horizontal rules, oldest first.
func ThreadText(th Thread) string {
	var b strings.Builder
	title := "Thread " + th.ID
	if len(th.Messages) > 0 {
		title = firstLine(th.Messages[0].Message)
	}
	fmt.Fprintf(&b, "# %s\n\nThread %s, %d messages.\n", title, th.ID, len(th.Messages))
	for _, m := range th.Messages {
		fmt.Fprintf(&b, "\n---\n\n**From %s to %s**, %s, id %s", m.From, m.To, timeText(m.CreatedAt), m.ID)
		if m.ReplyTo != "" {
			fmt.Fprintf(&b, ", in reply to %s", m.ReplyTo)
		}
		fmt.Fprintf(&b, "\n\n%s\n", m.Message)
	}
	return b.String()
}

// eachMessage calls fn for every well-formed message of every mailbox,
// until fn returns false.
func eachMessage(ctx context.Context, st *mailbox.Store, fn func(m *mailbox.Message) bool) error {
	names, err := st.Mailboxes()
	if err != nil {
		return err
	}
	more := true
	for _, name := range names {
		if err := st.Messages(ctx, name, func(m *mailbox.Message) bool {
			more = fn(m)
			return more
		}); err != nil || !more {
			return err
		}
	}
	return nil
}

// findOwn returns the first message the caller (self) received or sent
// that match keeps, or nil; with self "", the first message of anybody.
func findOwn(ctx context.Context, st *mailbox.Store, self string, match func(m *mailbox.Message) bool) (*mailbox.Message, error) {
	var found *mailbox.Message
	err := eachMessage(ctx, st, func(m *mailbox.Message) bool {
		if (self == "" || m.To == self || m.From == self) && match(m) {
			found = m
			return false
		}
		return true
	})
	return found, err
}

// WatchInbox reports changes to the caller's mailbox (see
// mailbox.Store.Watch) until stop is called.
func (s *Service) WatchInbox(ctx context.Context) (changes <-chan struct{}, stop func(), err error) {
	sess, err := s.agent(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.store()
	if err != nil {
		return nil, nil, err
	}
	return st.Watch(sess.Self.Name)
}
