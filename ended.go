package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentmail/mailbox"
)

// endedFile keeps the ids of the HTTP sessions that DELETE ended, in
// .agentmail/http-sessions-ended (mode 0600), one "<expiry> <id>" line
// each, so that a restarted server refuses them until they expire. The
// ids are signed, so a line written by anyone else names no session.
type endedFile struct {
	path string
	mu   sync.Mutex
}

const endedName = "http-sessions-ended"

// Load reads the ids not yet expired, and rewrites the file without the
// others when there are any.
func (f *endedFile) Load() (map[string]time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	file, _, err := mailbox.OpenRegular(f.path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	ended := map[string]time.Time{}
	stale := 0
	now := time.Now()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		stamp, id, ok := strings.Cut(sc.Text(), " ")
		secs, err := strconv.ParseInt(stamp, 10, 64)
		if !ok || err != nil || time.Unix(secs, 0).Before(now) {
			stale++
			continue
		}
		ended[id] = time.Unix(secs, 0)
	}
	if err := sc.Err(); err != nil {
		return ended, err
	}
	if stale > 0 {
		return ended, f.rewrite(ended)
	}
	return ended, nil
}

// rewrite replaces the file with the ids in ended, atomically.
func (f *endedFile) rewrite(ended map[string]time.Time) error {
	var b strings.Builder
	for id, t := range ended {
		fmt.Fprintf(&b, "%d %s\n", t.Unix(), id)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(b.String())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Add appends an id ended, until it expires.
func (f *endedFile) Add(id string, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return err
	}
	// As every file of .agentmail: never written through a link.
	file, _, err := mailbox.OpenOwn(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(file, "%d %s\n", until.Unix(), id)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
}
