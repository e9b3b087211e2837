package tools

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"agentmail/mailbox"
)

// The views of this file show the whole project, every agent's mail, to
// the person who runs the agents (agentmail web). That person owns the
// files and may read them all anyway; an agent's own views (Inbox, Sent,
// Thread) show it only its own mail.

// Agent is one address of the project as the person's page lists it.
type Agent struct {
	Name string `json:"name"`
	// Kind is "window" (a tmux window of the session), "person" (see
	// mailbox.Store.People), "remote" (a named agent, see
	// mailbox.NamedAgent) or "mailbox" (a name that has mail but no
	// window now).
	Kind         string    `json:"kind"`
	You          bool      `json:"you,omitempty"`
	Status       string    `json:"status,omitempty"` // ready, work, offline; "" when never set
	Unread       int       `json:"unread"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	// Wake is how the agent learns of new mail: "hook" (a watch --hook
	// waits), "codex" (the mailman queues a prompt in its Codex session),
	// "mailman" (the mailman types into its pane), "page" (a person's web
	// page) or "none".
	Wake string `json:"wake"`
}

// Agents lists the project's addresses: the caller's session's windows
// and people's addresses (when the caller is in tmux), then the other
// names that have a mailbox, each with its status, unread count, last
// activity (its last status change or the newest message it got) and how
// it is woken.
func (s *Service) Agents(ctx context.Context) ([]Agent, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	var list []Agent
	if s.Term != nil {
		rs, err := s.Recipients(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			a := Agent{Name: r.Name, Kind: "window", You: r.IsCurrent}
			switch {
			case r.Person || r.IsCurrent:
				a.Kind = "person"
			case r.Remote:
				a.Kind = "remote"
			}
			list = append(list, a)
		}
	} else {
		others, err := otherAddresses(ctx, st)
		if err != nil {
			return nil, err
		}
		for _, o := range others {
			a := Agent{Name: o.name, Kind: "person"}
			if o.remote {
				a.Kind = "remote"
			}
			list = append(list, a)
		}
	}
	boxes, err := st.Mailboxes()
	if err != nil {
		return nil, err
	}
	for _, b := range boxes {
		if !slices.ContainsFunc(list, func(a Agent) bool { return a.Name == b }) {
			list = append(list, Agent{Name: b, Kind: "mailbox"})
		}
	}
	states, err := st.States(ctx)
	if err != nil {
		return nil, err
	}
	mailman := mailmanRuns(st)
	for i := range list {
		a := &list[i]
		if err := agentDetails(ctx, st, a, states, mailman); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// agentDetails fills in what the states and a's mailbox say of a.
func agentDetails(ctx context.Context, st *mailbox.Store, a *Agent, states []mailbox.State, mailman bool) error {
	var state *mailbox.State
	for i := range states {
		if states[i].Recipient == a.Name {
			state = &states[i]
		}
	}
	if state != nil {
		a.Status, a.LastActivity = state.Status, state.UpdatedAt
	}
	n, err := st.Unread(ctx, a.Name)
	if err != nil {
		return err
	}
	a.Unread = n
	if recent, err := st.Recent(ctx, a.Name, 1, nil); err != nil {
		return err
	} else if len(recent) == 1 && recent[0].CreatedAt.After(a.LastActivity) {
		a.LastActivity = recent[0].CreatedAt
	}
	switch {
	case a.Kind == "person":
		a.Wake = "page"
	case st.Watching(a.Name):
		a.Wake = "hook"
	case mailman && state != nil && state.Client == "codex" && state.Session != "":
		a.Wake = "codex"
	case mailman && a.Kind == "window":
		a.Wake = "mailman"
	default:
		a.Wake = "none"
	}
	return nil
}

// MessageFilter chooses a page of the project's messages.
type MessageFilter struct {
	Agent  string // only messages from or to this name, when set
	Text   string // only messages whose sender, recipient or body hold this, in any case
	Limit  int    // at most this many; PageSize when zero
	Cursor string // where the page starts: a Page's Next; the newest when ""
}

// PageSize is how many messages a page of the project's messages holds
// unless asked for fewer or more; MaxPageSize bounds what may be asked.
const (
	PageSize    = 50
	MaxPageSize = 500
)

// Page is a page of the project's messages, newest first. Next, when not
// "", is the cursor of the page after it.
type Page struct {
	Messages []ProjectMessage `json:"messages"`
	Next     string           `json:"next,omitempty"`
}

// ProjectMessage is one message of a Page: its header, the first line of
// its body and its delivery state, as the sent view gives them.
type ProjectMessage struct {
	ID        string    `json:"id"`
	ThreadID  string    `json:"thread_id"`
	ReplyTo   string    `json:"reply_to,omitempty"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	FirstLine string    `json:"first_line"`
	State     string    `json:"state"`
}

// pageCursor is where a page starts: in each mailbox that gave messages
// to the pages before, the offset of the line of the oldest it gave; the
// other mailboxes are read from their end, for messages no newer than
// Time (a mailbox made since the first page holds newer ones).
type pageCursor struct {
	Offsets map[string]int64 `json:"o"`
	Time    time.Time        `json:"t"`
}

// ErrBadCursor is the error for a cursor that no page gave.
var ErrBadCursor = errors.New("invalid page cursor")

// Messages returns a page of every mailbox's messages, newest first. Each
// mailbox is read backwards from where the page starts, for at most a
// page of messages, so a page costs the same however long the history
// behind it; only a text filter that few messages match reads further.
func (s *Service) Messages(ctx context.Context, f MessageFilter) (Page, error) {
	st, err := s.store()
	if err != nil {
		return Page{}, err
	}
	limit := min(cmp.Or(f.Limit, PageSize), MaxPageSize)
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	cur, err := decodeCursor(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	boxes, err := st.Mailboxes()
	if err != nil {
		return Page{}, err
	}
	type found struct {
		m   mailbox.Message
		box string
		off int64
	}
	var all []found
	for _, box := range boxes {
		before, seen := cur.Offsets[box]
		if !seen {
			before = -1
		}
		keep := f.keep(seen || cur.Time.IsZero(), cur.Time)
		ms, offs, err := st.RecentBefore(ctx, box, before, limit, keep)
		if err != nil {
			return Page{}, err
		}
		for i := range ms {
			all = append(all, found{ms[i], box, offs[i]})
		}
	}
	slices.SortStableFunc(all, func(a, b found) int {
		return cmp.Or(b.m.CreatedAt.Compare(a.m.CreatedAt), cmp.Compare(b.m.ID, a.m.ID))
	})
	more := len(all) > limit
	all = all[:min(len(all), limit)]
	ids := make([]string, len(all))
	for i, x := range all {
		ids[i] = x.m.ID
	}
	deliveries, err := st.DeliveriesOf(ids)
	if err != nil {
		return Page{}, err
	}
	page := Page{Messages: make([]ProjectMessage, len(all))}
	next := pageCursor{Offsets: map[string]int64{}, Time: cur.Time}
	for k, v := range cur.Offsets {
		next.Offsets[k] = v
	}
	for i, x := range all {
		sm := sentMessage(&x.m, deliveries[x.m.ID])
		page.Messages[i] = ProjectMessage{ID: x.m.ID, ThreadID: x.m.Thread(), ReplyTo: x.m.ReplyTo,
			From: x.m.From, To: x.m.To, CreatedAt: x.m.CreatedAt, FirstLine: sm.FirstLine, State: sm.State}
		next.Offsets[x.box] = x.off
		if next.Time.IsZero() || i == len(all)-1 {
			next.Time = x.m.CreatedAt
		}
	}
	if more {
		page.Next = encodeCursor(next)
	}
	return page, nil
}

// keep is the filter's test of a message; with fresh false, a message
// newer than since is left out too.
func (f MessageFilter) keep(fresh bool, since time.Time) func(*mailbox.Message) bool {
	text := strings.ToLower(f.Text)
	return func(m *mailbox.Message) bool {
		if !fresh && m.CreatedAt.After(since) {
			return false
		}
		if f.Agent != "" && m.From != f.Agent && m.To != f.Agent {
			return false
		}
		return text == "" || strings.Contains(strings.ToLower(m.Message), text) ||
			strings.Contains(strings.ToLower(m.From), text) || strings.Contains(strings.ToLower(m.To), text)
	}
}

func encodeCursor(c pageCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (pageCursor, error) {
	var c pageCursor
	if s == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return c, ErrBadCursor
	}
	return c, nil
}

// ProjectThread returns the thread id, whoever wrote its messages; see
// Thread for an agent's own.
func (s *Service) ProjectThread(ctx context.Context, id string) (Thread, error) {
	st, err := s.store()
	if err != nil {
		return Thread{}, err
	}
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	th, err := readThread(ctx, st, id)
	if err != nil {
		return Thread{}, s.lockError(err)
	}
	if len(th.Messages) == 0 {
		return Thread{}, ErrThreadNotFound
	}
	return th, nil
}
