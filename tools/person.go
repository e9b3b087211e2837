package tools

import (
	"context"
	"slices"
	"strings"

	"agentmail/mailbox"
	"agentmail/tmux"
)

// AsPerson returns the Terminal of the person named name who watches the
// agents of term's session (agentmail web): term's session, with the
// person as the caller, an address that is no window. The person may then
// send to the session's agents, and read and answer its own mail, through
// the same operations as an agent; a window with the person's name makes
// every operation fail as for any name two windows have.
func AsPerson(term Terminal, name string) Terminal {
	return personTerm{term: term, name: name, id: personID}
}

// AsNamedAgent returns the Terminal of the named agent name (see
// mailbox.NamedAgent), which reaches the project from outside tmux: as
// AsPerson, with an agent's rights rather than a person's.
func AsNamedAgent(term Terminal, name string) Terminal {
	return personTerm{term: term, name: name, id: namedID}
}

type personTerm struct {
	term Terminal
	name string
	id   string // personID or namedID
}

func (p personTerm) Session(ctx context.Context) (*tmux.Session, error) {
	sess, err := p.term.Session(ctx)
	if err != nil {
		return nil, err
	}
	// The id is not one tmux gives ("@N"), so no window is taken for it.
	self := tmux.Window{ID: p.id + p.name, Name: p.name}
	windows := make([]tmux.Window, 0, len(sess.Windows)+1)
	windows = append(windows, self)
	windows = append(windows, sess.Windows...)
	return &tmux.Session{Self: self, Windows: windows}, nil
}

// personID and namedID start the window id of a person's session and a
// named agent's (personTerm).
const (
	personID = "person:"
	namedID  = "agent:"
)

// address is a name that is no tmux window: a person's address, or a
// named agent's (remote).
type address struct {
	name   string
	remote bool
}

// otherAddresses returns the addresses of st that are no window: people's,
// then named agents'.
func otherAddresses(ctx context.Context, st *mailbox.Store) ([]address, error) {
	people, err := st.People()
	if err != nil {
		return nil, err
	}
	named, err := st.NamedAgents(ctx)
	if err != nil {
		return nil, err
	}
	list := make([]address, 0, len(people)+len(named))
	for _, p := range people {
		list = append(list, address{name: p})
	}
	for _, a := range named {
		if !slices.Contains(people, a.Name) {
			list = append(list, address{name: a.Name, remote: true})
		}
	}
	return list, nil
}

// isPerson reports whether sess is a person's, from AsPerson.
func isPerson(sess *tmux.Session) bool { return strings.HasPrefix(sess.Self.ID, personID) }

// MarkThreadRead marks the caller's unread messages of thread id read, as
// receive would have, and records each read for its sender's view: a
// person reads a thread on the page rather than with receive. It returns
// how many it marked.
func (s *Service) MarkThreadRead(ctx context.Context, id string) (int, error) {
	sess, err := s.agent(ctx)
	if err != nil {
		return 0, err
	}
	st, err := s.store()
	if err != nil {
		return 0, err
	}
	ctx, cancel := s.lockContext(ctx)
	defer cancel()
	th, err := readThread(ctx, st, id)
	if err != nil {
		return 0, s.lockError(err)
	}
	n := 0
	for _, m := range th.Messages {
		if m.To != sess.Self.Name || m.ReadFlag {
			continue
		}
		marked, err := st.MarkRead(ctx, m.To, &m)
		if err != nil {
			return n, s.lockError(err)
		}
		if marked {
			n++
			st.RecordDelivery(mailbox.DeliveryEvent{ID: m.ID, To: m.To, State: mailbox.Read})
		}
	}
	return n, nil
}

// foldSet is a set of names that tells whether a name is one of them but
// for letter case (mailbox.SameMailbox) without comparing it with each: a
// hub lists a thousand named agents against its windows at every send.
type foldSet struct {
	ascii map[string]bool // ASCII names, in lower case
	other []string        // the rest, compared one by one
}

func newFoldSet(n int) foldSet { return foldSet{ascii: make(map[string]bool, n)} }

func (f *foldSet) add(name string) {
	if isASCII(name) {
		f.ascii[strings.ToLower(name)] = true
	} else {
		f.other = append(f.other, name)
	}
}

// has reports whether name is in f but for letter case. Two ASCII names
// are the same but for case exactly when their lower cases are equal;
// any other pair is compared as mailbox.SameMailbox compares it.
func (f *foldSet) has(name string) bool {
	if isASCII(name) && f.ascii[strings.ToLower(name)] {
		return true
	}
	if slices.ContainsFunc(f.other, func(o string) bool { return mailbox.SameMailbox(o, name) }) {
		return true
	}
	if isASCII(name) {
		return false
	}
	for o := range f.ascii {
		if mailbox.SameMailbox(o, name) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
