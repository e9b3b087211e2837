package tools

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"agentmail/mailbox"
)

// SentSize is how many messages the sent view shows unless asked for more.
const SentSize = 20

// SentFilter chooses the messages of a sent view.
type SentFilter struct {
	To    string // only mail to this recipient, when set
	Limit int    // at most this many; SentSize when zero
}

// Sent is the caller's recent messages, newest first, each with how far
// it got: stored, notified (a wake reached the recipient) or read.
type Sent struct {
	Agent    string        `json:"agent"`
	Messages []SentMessage `json:"messages"`
}

// SentMessage is one message of the sent view.
type SentMessage struct {
	ID         string    `json:"id"`
	To         string    `json:"to"`
	FirstLine  string    `json:"first_line"`
	State      string    `json:"state"`
	StoredAt   time.Time `json:"stored_at,omitzero"`
	NotifiedAt time.Time `json:"notified_at,omitzero"`
	NotifiedBy string    `json:"notified_by,omitempty"`
	ReadAt     time.Time `json:"read_at,omitzero"`
}

// The states a sent message can be in.
const (
	StateStored   = "stored"
	StateNotified = mailbox.Notified
	StateRead     = mailbox.Read
)

// Sent returns the caller's sent view. It reads every mailbox, since the
// caller's messages are in their recipients' mailboxes, and the delivery
// record.
func (s *Service) Sent(ctx context.Context, filter SentFilter) (Sent, error) {
	sess, err := s.agent(ctx)
	if err != nil {
		return Sent{}, err
	}
	st, err := s.store()
	if err != nil {
		return Sent{}, err
	}
	deliveries, err := st.Deliveries()
	if err != nil {
		return Sent{}, err
	}
	me := sess.Self.Name
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	var mine []mailbox.Message
	err = eachMessage(ctx, st, func(m *mailbox.Message) bool {
		if m.From == me && (filter.To == "" || m.To == filter.To) {
			mine = append(mine, *m)
		}
		return true
	})
	if err != nil {
		return Sent{}, s.lockError(err)
	}
	slices.SortStableFunc(mine, func(a, b mailbox.Message) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	mine = mine[:min(len(mine), cmp.Or(filter.Limit, SentSize))]
	out := Sent{Agent: me, Messages: make([]SentMessage, len(mine))}
	for i, m := range mine {
		out.Messages[i] = sentMessage(&m, deliveries[m.ID])
	}
	return out, nil
}

// sentMessage is m as the sent view shows it, with what the delivery
// record says. A message marked read that the record has no read for was
// taken by a tool that keeps no record (the earlier one): read, at a time
// unknown.
func sentMessage(m *mailbox.Message, d mailbox.Delivery) SentMessage {
	sm := SentMessage{ID: m.ID, To: m.To, FirstLine: firstLine(m.Message), State: StateStored,
		StoredAt: m.CreatedAt, NotifiedAt: d.NotifiedAt, NotifiedBy: d.NotifiedBy, ReadAt: d.ReadAt}
	switch {
	case m.ReadFlag || !d.ReadAt.IsZero():
		sm.State = StateRead
	case !d.NotifiedAt.IsZero():
		sm.State = StateNotified
	}
	return sm
}

// SentViewText is the sent view as Markdown, for a person or a model.
func SentViewText(v Sent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sent by %s\n\n", v.Agent)
	if len(v.Messages) == 0 {
		b.WriteString("No messages sent.\n")
		return b.String()
	}
	for _, m := range v.Messages {
		fmt.Fprintf(&b, "- %s, to %s, %s, id %s: %s\n", m.State, m.To, timeText(m.StoredAt), m.ID, m.FirstLine)
		if !m.NotifiedAt.IsZero() {
			fmt.Fprintf(&b, "  notified %s", timeText(m.NotifiedAt))
			if m.NotifiedBy != "" {
				fmt.Fprintf(&b, " by %s", m.NotifiedBy)
			}
			b.WriteString("\n")
		}
		if !m.ReadAt.IsZero() {
			fmt.Fprintf(&b, "  read %s\n", timeText(m.ReadAt))
		}
	}
	return b.String()
}

// Waiting says, for each recipient of a send that cannot act on its mail
// soon, why: its status is offline, or it has set no status and nothing
// is set up to wake it (no watch --hook waits for it and no mailman runs),
// unless it is a person's address.
// The others are left out. A receive that waits is not seen: an agent
// that waits that way and sets no status gets the note too. Callers ask
// before they store the message, since a hook the message wakes ends.
func (s *Service) Waiting(ctx context.Context, recipients []string) map[string]string {
	st, err := s.store()
	if err != nil {
		return nil
	}
	states, err := st.States(ctx)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	known := map[string]bool{}
	for _, e := range states {
		known[e.Recipient] = true
		if e.Status == mailbox.StatusOffline && slices.Contains(recipients, e.Recipient) {
			out[e.Recipient] = e.Recipient + " is offline"
		}
	}
	// A person reads mail on the web page, which nothing needs to wake.
	people, _ := st.People()
	mailman := sync.OnceValue(func() bool { return mailmanRuns(st) })
	for _, r := range recipients {
		if known[r] || st.Watching(r) || slices.Contains(people, r) {
			continue
		}
		if !mailman() {
			out[r] = r + " has set no status and nothing wakes it"
		}
	}
	return out
}
