package mailbox

import (
	"agentmail/internal/fswatch"
)

// Watch reports changes to the mailbox of name: a value arrives on changes
// (coalesced, never blocking the watcher) whenever the mailbox file may
// have changed, until stop is called. It creates the mailboxes directory
// when it is missing, so that the first message sent to a new agent is
// seen too. A waiter watches before it looks at the mailbox, then looks,
// then waits for a change: mail stored in between is never missed.
func (s *Store) Watch(name string) (changes <-chan struct{}, stop func(), err error) {
	if err := ValidName(name); err != nil {
		return nil, nil, err
	}
	dir := s.MailboxDir()
	if err := realDir(dir, true); err != nil {
		return nil, nil, err
	}
	w, err := fswatch.New()
	if err != nil {
		return nil, nil, err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, nil, err
	}
	target := s.MailboxPath(name)
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				// The directory itself changing (moved away, removed)
				// counts too: the waiter looks again and finds out.
				if ev.Name != target && ev.Name != dir {
					continue
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				// Lost events (a queue overflow) may have hidden a change.
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, func() { w.Close(); <-done }, nil
}
