package mailbox

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"agentmail/internal/fswatch"
)

// peopleFile lists the addresses of people: names that are not tmux
// windows, whose mail a person reads on the web page (agentmail web). One
// name a line, as in .agentmailignore. Agents list them as recipients and
// may write to them; the earlier tool ignores the file.
const peopleFile = "people"

// PeoplePath returns the path of the file of people's addresses.
func (s *Store) PeoplePath() string { return filepath.Join(s.Root, dirName, peopleFile) }

// People returns the names of people's addresses, sorted, each once;
// names that cannot name a mailbox are left out. A missing file is an
// empty list.
func (s *Store) People() ([]string, error) {
	f, fi, err := OpenOwn(s.PeoplePath(), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := readAll(f, fi)
	f.Close()
	if err != nil {
		return nil, err
	}
	var names []string
	for line := range bytes.Lines(data) {
		name := strings.TrimSpace(string(line))
		if name != "" && ValidName(name) == nil && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// AddPerson adds name to the people's addresses, unless it is there. The
// file is replaced by a rename, so a reader never sees half of it; two
// people added at the same instant may lose one, who is added again at
// the next start of its page.
func (s *Store) AddPerson(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	names, err := s.People()
	if err != nil {
		return err
	}
	if slices.Contains(names, name) {
		return nil
	}
	if err := realDir(s.Dir(), true); err != nil {
		return err
	}
	names = append(names, name)
	slices.Sort(names)
	old, _ := os.Lstat(s.PeoplePath())
	if old != nil && !old.Mode().IsRegular() {
		return errors.New(s.PeoplePath() + " is not a regular file")
	}
	return writeFileAtomic(s.PeoplePath(), []byte(strings.Join(names, "\n")+"\n"), old, false)
}

// WatchProject reports changes anywhere agentmail keeps what a view of
// the whole project shows: a value arrives on changes (coalesced, never
// blocking) whenever a mailbox, the states, the delivery record or the
// people's addresses may have changed, until stop is called. It creates
// the mailboxes directory when it is missing. Reading takes no write, so
// a reader woken by it does not wake itself again.
func (s *Store) WatchProject() (changes <-chan struct{}, stop func(), err error) {
	if err := realDir(s.Dir(), true); err != nil {
		return nil, nil, err
	}
	if err := realDir(s.MailboxDir(), true); err != nil {
		return nil, nil, err
	}
	w, err := fswatch.New()
	if err != nil {
		return nil, nil, err
	}
	for _, d := range []string{s.Dir(), s.MailboxDir()} {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, nil, err
		}
	}
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				select {
				case ch <- struct{}{}:
				default:
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return ch, func() { w.Close(); <-done }, nil
}
