package mailman

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentmail/mailbox"
)

// Files of the mailman in the .agentmail directory.
const (
	pidFileName = "mailman.pid"
	LogFileName = "mailman.log"
)

// PIDPath is the PID file, and lock, of the mailman of st's root.
func PIDPath(st *mailbox.Store) string { return filepath.Join(st.Dir(), pidFileName) }

// The lock
//
// One mailman runs per root because each holds an exclusive flock on
// .agentmail/mailman.pid for as long as it lives, taken with a non-blocking
// try: whoever gets the lock runs, everyone else reads the holder's PID from
// the file and gives up. The kernel drops the lock when its holder dies,
// however it dies, so no PID is ever trusted on its own and there is no
// stale-PID logic, except for the earlier tool's mailman, which takes no
// lock and is recognised by its PID and command line (earlierMailman). A
// mailman that stops cleanly removes the file while it still holds the
// lock. Every locker checks, once it holds a lock, that the
// path still names the file it locked and starts over otherwise, so a
// removed file never lets two mailmen lock two different files. The file
// holds "<pid>\n", the content the earlier tool writes and reads.
//
// lockedfile, which the mailbox package uses, only blocks until it gets a
// lock, and a second mailman must not wait for the first one to end, hence
// the small flock helpers in lock_unix.go.

// lockWait bounds how long Acquire and Running wait for a PID to appear in
// a locked file: its holder writes it right after taking the lock.
const lockWait = 2 * time.Second

// RunningError reports that another mailman holds the lock.
type RunningError struct {
	PID int // 0 when the holder's PID could not be read
}

func (e *RunningError) Error() string {
	if e.PID <= 0 {
		return "mailman already running (PID: unknown)"
	}
	return fmt.Sprintf("mailman already running (PID: %d)", e.PID)
}

// Lock is a held mailman lock.
type Lock struct {
	path string
	f    *os.File
}

// Acquire takes the mailman lock on path (the PID file) for this process
// and writes its PID into it. When another live process holds the lock it
// returns a *RunningError with that process's PID. A PID file that is not a
// regular file (a symbolic link, a named pipe), or has another hard link,
// is refused, never locked, written or waited on.
func Acquire(path string) (*Lock, error) {
	deadline := time.Now().Add(lockWait)
	for {
		f, _, err := mailbox.OpenOwn(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		got, err := tryLock(f, true)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if got {
			if !samePath(f, path) {
				f.Close()
				continue
			}
			if pid := readPID(f); earlierMailman(pid, path) {
				f.Close()
				return nil, &RunningError{PID: pid}
			}
			if err := writePID(f, os.Getpid()); err != nil {
				f.Close()
				return nil, fmt.Errorf("writing %s: %w", path, err)
			}
			return &Lock{path: path, f: f}, nil
		}
		pid := readPID(f)
		f.Close()
		if pid > 0 && alive(pid) {
			return nil, &RunningError{PID: pid}
		}
		// The holder has not written its PID yet, or the lock is held only
		// for a moment by "mailman status" while the file still names a
		// mailman that was killed.
		if time.Now().After(deadline) {
			return nil, &RunningError{}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Check verifies that the lock's file is still in place. When the file was
// removed (say, with the whole .agentmail directory), it takes the lock on
// a new file so that no second mailman can start; when another mailman got
// there first it returns a *RunningError, and the caller should stop.
func (l *Lock) Check() error {
	if samePath(l.f, l.path) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return err
	}
	nl, err := Acquire(l.path)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f = nl.f
	return nil
}

// Release removes the PID file, if it is still the one locked, and drops
// the lock.
func (l *Lock) Release() error {
	var err error
	if samePath(l.f, l.path) {
		err = os.Remove(l.path)
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Running returns the PID of the mailman that holds the lock on path, or 0
// when none does. It never removes or writes the file, and refuses one that
// is not a regular file, or has another hard link, as Acquire does.
func Running(path string) (int, error) {
	deadline := time.Now().Add(lockWait)
	for {
		f, _, err := mailbox.OpenOwn(path, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		// A shared try-lock does not stop a concurrent probe, and a starter
		// that fails against it retries (see Acquire).
		got, err := tryLock(f, false)
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("locking %s: %w", path, err)
		}
		if got {
			pid := readPID(f)
			f.Close()
			if earlierMailman(pid, path) {
				return pid, nil
			}
			return 0, nil
		}
		pid := readPID(f)
		f.Close()
		if pid > 0 && alive(pid) {
			return pid, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s is locked but names no live process", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// earlierMailman reports whether pid, read from the unlocked PID file at
// path, is a live mailman of the earlier tool, which writes its PID file
// without taking the lock: a process other than this one whose command
// line is an agentmail binary's "mailman" and whose working directory is
// the root the PID file belongs to, or a directory below it with no other
// project in between (that tool's mailman runs in the root, or where it
// was started in the foreground). The two keep a
// PID that a killed mailman left behind, since reused by another program
// or by the mailman of another project, from passing for one. A process
// that is gone has no command line, and without /proc to read it the
// answer is false too. A working directory that cannot be read (a process
// of another user) is not held against the process.
func earlierMailman(pid int, path string) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	i := slices.Index(args, "mailman")
	if i <= 0 || !slices.ContainsFunc(args[:i], func(a string) bool {
		return strings.Contains(filepath.Base(a), "agentmail")
	}) {
		return false
	}
	cwd, err := os.Readlink(proc + "/cwd")
	if err != nil {
		// Not ours to read; any other error means the process is gone.
		return errors.Is(err, fs.ErrPermission)
	}
	root, err := filepath.Abs(filepath.Dir(filepath.Dir(path)))
	if err != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if cwd == root {
		return true
	}
	// Started below the root, its root is the nearest directory upwards
	// that holds .git, as ours is, or its working directory when none
	// does: a nested project (a submodule, say) has a root of its own.
	theirs, err := mailbox.FindRoot(cwd, func(string) string { return "" })
	return err == nil && theirs == root
}

// samePath reports whether path still names the file f itself, not a
// symbolic link to it.
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, pi)
}

// writePID replaces the content of f with "<pid>\n".
func writePID(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0)
	return err
}

// readPID returns the PID in f, or 0 when it holds none.
func readPID(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 64))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Stop sends SIGTERM to the mailman that holds the lock on path and waits
// up to wait for it to let go. It returns that mailman's PID, or 0 when none
// was running.
func Stop(path string, wait time.Duration) (int, error) {
	pid, err := Running(path)
	if err != nil || pid == 0 {
		return 0, err
	}
	if err := terminate(pid); err != nil {
		return pid, fmt.Errorf("stopping the mailman (PID: %d): %w", pid, err)
	}
	deadline := time.Now().Add(wait)
	for {
		now, err := Running(path)
		if err == nil && now != pid {
			return pid, nil
		}
		if time.Now().After(deadline) {
			return pid, fmt.Errorf("the mailman (PID: %d) did not stop within %v", pid, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
