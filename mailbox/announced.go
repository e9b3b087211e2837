package mailbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
)

// announcedDir holds, per agent, the ids of the unread messages a watch
// has already announced, one a line, so that an agent is woken once per
// message and not again and again for the same mail.
const announcedDir = "announced"

func (s *Store) announcedPath(name string) string {
	return filepath.Join(s.Root, dirName, announcedDir, name)
}

// Announce returns the unread messages of name's mailbox that no Announce
// has returned before, oldest first, looking at the newest most unread
// ones only, and records them as announced. The record keeps only ids still unread,
// so it stays small.
//
// It reads the mailbox, checks the record and writes it while holding an
// exclusive lock on the record, so each message is returned once however
// many processes announce at the same time. The record is replaced whole
// (written, synced and renamed into place), so a crash leaves the old list
// or the new one; a locker that waited on a replaced record locks the new
// one (see openLocked). Waiting for the lock ends with ctx's error, as for
// a mailbox.
func (s *Store) Announce(ctx context.Context, name string, most int) (_ []Message, err error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.Root, dirName, announcedDir)
	if err := realDir(filepath.Join(s.Root, dirName), true); err != nil {
		return nil, err
	}
	if err := realDir(dir, true); err != nil {
		return nil, err
	}
	path := s.announcedPath(name)
	f, fi, err := openLockedContext(ctx, path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	data, err := readAll(f, fi)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for line := range bytes.Lines(data) {
		if id := string(bytes.TrimSpace(line)); id != "" {
			seen[id] = true
		}
	}
	unread, err := s.Recent(ctx, name, most, func(m *Message) bool { return !m.ReadFlag })
	if err != nil {
		return nil, err
	}
	var fresh []Message
	var still []string
	for _, m := range unread {
		if !seen[m.ID] {
			fresh = append(fresh, m)
			seen[m.ID] = true
		}
		still = append(still, m.ID)
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	for _, id := range slices.Compact(slices.Sorted(slices.Values(still))) {
		b.WriteString(id)
		b.WriteByte('\n')
	}
	if err := writeFileAtomic(path, b.Bytes(), fi, true); err != nil {
		return nil, err
	}
	slices.Reverse(fresh)
	return fresh, nil
}
