package mailbox

import (
	"bytes"
	"errors"
	"io/fs"
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

// Announced returns the ids recorded for name by SetAnnounced; none when
// nothing was recorded.
func (s *Store) Announced(name string) ([]string, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	f, fi, err := OpenRegular(s.announcedPath(name), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readAll(f, fi)
	if err != nil {
		return nil, err
	}
	var ids []string
	for line := range bytes.Lines(data) {
		if id := string(bytes.TrimSpace(line)); id != "" {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// SetAnnounced records ids as announced for name, replacing what was
// recorded; the file is replaced whole, so a reader sees the old list or
// the new one.
func (s *Store) SetAnnounced(name string, ids []string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	dir := filepath.Join(s.Root, dirName, announcedDir)
	if err := realDir(filepath.Join(s.Root, dirName), true); err != nil {
		return err
	}
	if err := realDir(dir, true); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		b.WriteString(id)
		b.WriteByte('\n')
	}
	return writeFileAtomic(s.announcedPath(name), b.Bytes(), nil)
}
