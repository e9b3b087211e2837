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
//
// The watches of one mailboxes directory share one watcher in the process
// (see fswatch.WatchEntry), however many receives wait and clients
// subscribe.
func (s *Store) Watch(name string) (changes <-chan struct{}, stop func(), err error) {
	if err := ValidName(name); err != nil {
		return nil, nil, err
	}
	if err := realDir(s.MailboxDir(), true); err != nil {
		return nil, nil, err
	}
	return fswatch.WatchEntry(s.MailboxPath(name))
}
