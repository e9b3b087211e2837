package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"agentmail/mailbox"
)

// maxAnnounce bounds how many unread messages a watch looks at, newest
// first: enough for any notice, and a bound on the work of each look.
const maxAnnounce = 1000

// ErrReplaced is returned by a wake hook's Unannounced when a newer one
// for the same agent has taken its place.
var ErrReplaced = errors.New("another watch for this agent took its place")

// Unannounced waits up to wait (forever when wait is zero) for unread mail
// of the caller that seen has not announced yet, and returns it, oldest
// first. seen is asked and told about ids: when remember is set, it is the
// record in .agentmail that makes each message announced once across
// processes (a wake hook), and otherwise the caller's own memory. It
// returns nothing when the time is up, and an error when the caller's
// window is gone or ctx ends. It takes nothing: the mail stays unread.
//
// With remember, it also holds the place of the one wake hook waiting for
// the caller (mailbox.Store.StartWatcher): a later Unannounced with
// remember for the same agent, in any process, takes that place, and this
// one then returns ErrReplaced at once.
func (s *Service) Unannounced(ctx context.Context, wait time.Duration, remember bool, seen map[string]bool) ([]mailbox.Message, error) {
	sess, err := s.agent(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	name := sess.Self.Name
	changes, stop, err := st.Watch(name)
	if err != nil {
		return nil, err
	}
	defer stop()
	var replaced <-chan struct{}
	var w *mailbox.Watcher
	if remember {
		if w, err = st.StartWatcher(name); err != nil {
			return nil, err
		}
		defer w.Close()
		replaced = w.Changes()
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	// The window is looked at once a second: a watch must end when its
	// agent's window goes away.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if w != nil && w.Replaced() {
			return nil, ErrReplaced
		}
		fresh, err := s.announce(ctx, st, name, remember, seen)
		if err != nil || len(fresh) > 0 {
			return fresh, err
		}
		select {
		case <-changes:
		case <-replaced:
		case <-tick.C:
			if _, err := s.agent(ctx); err != nil {
				return nil, err
			}
		case <-deadline:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// announce finds the unread messages not announced yet and records them:
// in .agentmail when remember is set (see mailbox.Store.Announce), in seen
// otherwise.
func (s *Service) announce(ctx context.Context, st *mailbox.Store, name string, remember bool, seen map[string]bool) ([]mailbox.Message, error) {
	lctx, cancel := s.lockContext(ctx)
	defer cancel()
	if remember {
		fresh, err := st.Announce(lctx, name, maxAnnounce)
		// A wake hook's notice is what reaches the agent: for the sender,
		// the message is notified (a view of the delivery, which never
		// fails the notice).
		for _, m := range fresh {
			st.RecordDelivery(mailbox.DeliveryEvent{ID: m.ID, To: name, State: mailbox.Notified, By: "hook"})
		}
		return fresh, s.lockError(err)
	}
	unread, err := st.Recent(lctx, name, maxAnnounce, func(m *mailbox.Message) bool { return !m.ReadFlag })
	if err != nil {
		return nil, s.lockError(err)
	}
	var fresh []mailbox.Message
	for _, m := range unread {
		if !seen[m.ID] {
			fresh = append(fresh, m)
			seen[m.ID] = true
		}
	}
	slices.Reverse(fresh)
	return fresh, nil
}

// NoticeText is a watch's notice of new mail: who wrote, how many
// messages and their ids, never their bodies.
func NoticeText(ms []mailbox.Message) string {
	var from, ids []string
	for _, m := range ms {
		if !slices.Contains(from, m.From) {
			from = append(from, m.From)
		}
		ids = append(ids, m.ID)
	}
	what := "1 new message"
	if len(ms) > 1 {
		what = fmt.Sprintf("%d new messages", len(ms))
	}
	return fmt.Sprintf("You got %s from %s (id %s). Read with agentmail receive.",
		what, strings.Join(from, ", "), strings.Join(ids, ", "))
}
