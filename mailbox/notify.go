package mailbox

// These accessors name the paths a notifier watches, so that it follows the
// layout described in the package documentation instead of repeating it.

// Dir returns the .agentmail directory of the store.
func (s *Store) Dir() string { return s.dir() }

// MailboxDir returns the directory that holds the mailbox files.
func (s *Store) MailboxDir() string { return s.mailboxDir() }

// StatesPath returns the path of recipients.jsonl, the file of state entries.
func (s *Store) StatesPath() string { return s.statesPath() }
