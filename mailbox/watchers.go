package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"agentmail/internal/fswatch"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// watchersDir holds, per agent, the file of the wake hook (watch --hook)
// that waits for the agent's mail.
//
// An assistant may start a new wake hook at the end of every turn without
// ending the one before, so there must be one waiting hook per agent, the
// newest. Each hook makes a new file holding its PID, takes an exclusive
// lock on it and renames it into place, over its predecessor's; it keeps
// the lock for as long as it waits. A hook whose file is no longer the one
// at the path has been replaced, and ends. The kernel drops the lock of a
// hook however it ends, so a file whose lock nobody holds names no waiting
// hook, and no PID is ever trusted or signalled. Nothing is ever written
// through the path: a link put there is replaced by the rename, never
// followed.
const watchersDir = "watchers"

func (s *Store) watchersDir() string { return filepath.Join(s.Root, dirName, watchersDir) }

func (s *Store) watcherPath(name string) string { return filepath.Join(s.watchersDir(), name) }

// A Watcher holds the place of the one wake hook that waits for an agent's
// mail, from StartWatcher until Close or until a newer one replaces it.
type Watcher struct {
	path    string
	f       *lockedfile.File
	changes <-chan struct{}
	stop    func()
}

// StartWatcher takes for this process the place of the wake hook waiting
// for name's mail: the place of any earlier one, which sees that it was
// replaced (Watcher.Replaced). The watchers directory is created as needed,
// and must be a real directory.
func (s *Store) StartWatcher(name string) (_ *Watcher, err error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if err := realDir(s.Dir(), true); err != nil {
		return nil, err
	}
	dir := s.watchersDir()
	if err := realDir(dir, true); err != nil {
		return nil, err
	}
	var tmp string
	var f *lockedfile.File
	for {
		tmp = filepath.Join(dir, tempPrefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err = lockedfile.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|openFlags, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	w := &Watcher{path: s.watcherPath(name), f: f}
	defer func() {
		if err != nil {
			os.Remove(tmp)
			w.Close()
		}
	}()
	if _, err := fmt.Fprintf(f, "%d\n", os.Getpid()); err != nil {
		return nil, err
	}
	if w.changes, w.stop, err = fswatch.WatchEntry(w.path); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, w.path); err != nil {
		return nil, err
	}
	return w, nil
}

// Replaced reports whether another watcher has taken w's place since, or
// its file is gone (with the whole .agentmail directory, say): then w
// should end.
func (w *Watcher) Replaced() bool {
	fi, err := w.f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && !os.SameFile(fi, pi)
}

// Changes reports, with a value (coalesced), each time w's file may have
// been replaced, so that a waiting watcher can ask Replaced at once.
func (w *Watcher) Changes() <-chan struct{} { return w.changes }

// Close gives up w's place. Its file is left as it is, unlocked: removing
// it could remove a newer watcher's file renamed in meanwhile, and a file
// that nobody holds locked names no waiting watcher.
func (w *Watcher) Close() error {
	if w.stop != nil {
		w.stop()
	}
	return w.f.Close()
}

// Watching reports whether a wake hook is waiting for name's mail now:
// whether the file of name in the watchers directory is locked, as a
// watcher keeps it for as long as it waits. It is false when it cannot
// tell: on systems without flock, or when that file or directory is not
// what agentmail makes (a symbolic link, a file with other hard links).
func (s *Store) Watching(name string) bool {
	if ValidName(name) != nil || realDir(s.watchersDir(), false) != nil {
		return false
	}
	f, _, err := OpenOwn(s.watcherPath(name), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	held, err := lockedByOther(f)
	return err == nil && held
}
