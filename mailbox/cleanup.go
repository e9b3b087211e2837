package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CleanupOptions says what Cleanup removes.
type CleanupOptions struct {
	// StaleAfter removes state entries not updated within it. It must be
	// positive.
	StaleAfter time.Duration
	// DeliveredAfter removes read messages created longer ago than it. It
	// must be positive. Messages without created_at are kept.
	DeliveredAfter time.Duration
	// Windows lists the names of the live windows; entries of other names
	// are removed as offline. Nil means unknown and skips that check.
	Windows []string
	// WindowsListedAt is when Windows was listed. An entry updated since
	// (and not later than the moment it is looked at) is kept: its window
	// may have opened after the listing. Zero keeps none for that reason.
	WindowsListedAt time.Time
	// DryRun computes and reports the same removals without doing them.
	DryRun bool
	// LockWait bounds the wait for the lock of each file. A file whose
	// lock another process holds for longer is left untouched, with a
	// warning (see Store.Warnf), and counted in CleanupReport.Skipped.
	// Zero waits for as long as it takes.
	LockWait time.Duration
}

// CleanupReport counts what Cleanup removed (or, in a dry run, would
// remove). A state entry is counted once, as offline when it is both.
type CleanupReport struct {
	OfflineRecipients int
	StaleRecipients   int
	Messages          int
	Mailboxes         int
	// Skipped counts the files left untouched because another process
	// held their lock for longer than CleanupOptions.LockWait.
	Skipped int
	// TempFiles counts the temporary files of rewrites cut short by a
	// crash that were removed (see leftoverAge).
	TempFiles int
}

// updatedSince reports whether st was updated from since (not zero) to
// now: a time after now is none that a command of ours wrote.
func updatedSince(st *State, since, now time.Time) bool {
	return !since.IsZero() && !st.UpdatedAt.Before(since) && !st.UpdatedAt.After(now)
}

// leftoverAge is the age from which a temporary file of a rewrite counts
// as left by a crash: a rewrite holds one for milliseconds, and the file
// it was to replace is then intact.
const leftoverAge = time.Hour

// Cleanup removes state entries of windows that are gone (when
// opt.Windows is known, and the entry was not updated after the listing),
// ready entries neither updated nor rung within opt.StaleAfter, and the
// later entries of a name that has more than one,
// read messages with a created_at older than opt.DeliveredAfter,
// mailboxes left without any line, and the temporary files of rewrites
// that a crash cut short, once they are leftoverAge old. Unread messages, messages without
// created_at and malformed or torn lines are always kept.
//
// Each file is planned and changed under its own lock, by the same code in
// a dry run and a real one, so a dry run reports exactly what a real run at
// that moment removes. A dry run opens every file read-only, under a shared
// lock, and writes nothing, so it works on files it may not write. A file
// whose lock another process holds for longer than opt.LockWait is
// skipped, in a dry run as in a real one; the other files are cleaned all
// the same. So are they after a file that cannot be cleaned (one that may
// not be read, say): the error then joins a "cleaning <path>: …" for each
// such file, and the report counts only what was done. A mailbox is
// rewritten through a synced temporary file and a rename, and an emptied
// one is unlinked under its lock; since every locker checks that it holds
// the lock of the current file, a message appended while Cleanup runs is
// never lost.
func (s *Store) Cleanup(opt CleanupOptions) (CleanupReport, error) {
	if opt.StaleAfter <= 0 {
		return CleanupReport{}, fmt.Errorf("stale threshold must be positive, got %v", opt.StaleAfter)
	}
	if opt.DeliveredAfter <= 0 {
		return CleanupReport{}, fmt.Errorf("delivered threshold must be positive, got %v", opt.DeliveredAfter)
	}
	c := &cleaning{s: s, opt: opt, now: s.now()}
	c.states()
	names, err := s.Mailboxes()
	if err != nil {
		return c.rep, errors.Join(append(c.errs, err)...)
	}
	for _, name := range names {
		c.mailbox(name)
	}
	n, err := s.removeLeftovers(c.now.Add(-leftoverAge), opt.DryRun)
	c.rep.TempFiles = n
	if err != nil {
		c.errs = append(c.errs, err)
	}
	return c.rep, errors.Join(c.errs...)
}

// cleaning is one Cleanup in progress. errs holds a failure for each file
// that could not be cleaned; the files after it are cleaned all the same.
type cleaning struct {
	s    *Store
	opt  CleanupOptions
	now  time.Time
	rep  CleanupReport
	errs []error
}

// locking returns the context of the wait for one file's lock.
func (c *cleaning) locking() (context.Context, context.CancelFunc) {
	if c.opt.LockWait <= 0 {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), c.opt.LockWait)
}

// skipped reports whether err says that the wait for path's lock ran out,
// and if so warns that path was left untouched, naming the file whose
// lock was held when the store says which (recipients.lock, say).
func (c *cleaning) skipped(path string, err error) bool {
	if !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if busy := (*BusyError)(nil); errors.As(err, &busy) && busy.Path != path {
		c.s.warnf("%s is locked by another process: %s left untouched after waiting %v for it", busy.Path, path, c.opt.LockWait)
	} else {
		c.s.warnf("%s is locked by another process: left untouched after waiting %v for it", path, c.opt.LockWait)
	}
	c.rep.Skipped++
	return true
}

// states removes the state entries of agents gone or long idle. The
// entries are counted only once the states are written.
func (c *cleaning) states() {
	var windows map[string]bool
	if c.opt.Windows != nil {
		windows = make(map[string]bool, len(c.opt.Windows))
		for _, w := range c.opt.Windows {
			windows[w] = true
		}
	}
	var offline, stale int
	ctx, cancel := c.locking()
	err := c.s.editStates(ctx, false, c.opt.DryRun, func(lines []stateLine) ([]stateLine, bool) {
		kept := lines[:0:0]
		seen := map[string]bool{}
		for _, l := range lines {
			switch c.drop(l, seen, windows) {
			case "offline":
				offline++
			case "stale":
				stale++
			default:
				kept = append(kept, l)
			}
		}
		return kept, len(kept) < len(lines)
	})
	cancel()
	switch {
	case err == nil:
		c.rep.OfflineRecipients, c.rep.StaleRecipients = offline, stale
	case !c.skipped(c.s.StatesPath(), err):
		c.errs = append(c.errs, fmt.Errorf("cleaning %s: %w", c.s.StatesPath(), err))
	}
}

// drop says why the state line l goes ("offline" or "stale"), or "" when
// it stays. seen holds the names whose first entry came before.
func (c *cleaning) drop(l stateLine, seen, windows map[string]bool) string {
	if l.st == nil {
		return ""
	}
	first := !seen[l.st.Recipient]
	seen[l.st.Recipient] = true
	staleBefore := c.now.Add(-c.opt.StaleAfter)
	switch {
	case !first:
		// Only a name's first entry counts, for us and for the earlier
		// tool; a later one, kept, would take its place once the first is
		// removed, with a status long out of date.
		return "stale"
	case windows != nil && !windows[l.st.Recipient] && !updatedSince(l.st, c.opt.WindowsListedAt, c.s.now()):
		return "offline"
	case l.st.UpdatedAt.Before(staleBefore) && l.st.NotifiedAt.Before(staleBefore) && l.st.Status == StatusReady:
		// Only ready entries go for age alone: without its entry, an agent
		// whose window may still be there is rung as one that never set a
		// status, so removing a work or offline entry would have the
		// mailman ring an agent that said not to. A ready entry's age
		// counts from its last ring too: removed just after one, the
		// agent would be rung again at once.
		return "stale"
	}
	return ""
}

// mailbox removes the long-delivered messages of name's mailbox, and the
// mailbox when nothing is left in it.
func (c *cleaning) mailbox(name string) {
	ctx, cancel := c.locking()
	removed, gone, err := c.s.cleanMailbox(ctx, name, c.now.Add(-c.opt.DeliveredAfter), c.opt.DryRun)
	cancel()
	switch {
	case c.skipped(c.s.MailboxPath(name), err):
	case err != nil:
		c.errs = append(c.errs, fmt.Errorf("cleaning %s: %w", c.s.MailboxPath(name), err))
	default:
		c.rep.Messages += removed
		if gone {
			c.rep.Mailboxes++
		}
	}
}

// removeLeftovers removes the temporary files of rewrites (see
// writeFileAtomic) last changed before the given time, and returns how
// many it removed, or would remove in a dry run.
func (s *Store) removeLeftovers(before time.Time, dryRun bool) (int, error) {
	n := 0
	var errs []error
	for _, dir := range []string{s.Dir(), s.MailboxDir()} {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cleaning %s: %w", dir, err))
			continue
		}
		for _, e := range entries {
			if !isTempName(e.Name()) || !e.Type().IsRegular() {
				continue
			}
			info, err := e.Info()
			if err != nil || !info.ModTime().Before(before) {
				continue // gone meanwhile, or a rewrite may be using it
			}
			if !dryRun {
				path := filepath.Join(dir, e.Name())
				if err := os.Remove(path); err != nil {
					if !errors.Is(err, fs.ErrNotExist) {
						errs = append(errs, fmt.Errorf("cleaning %s: %w", path, err))
					}
					continue
				}
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// cleanMailbox removes the read messages of name's mailbox created before
// the given time, and the mailbox itself when no line is left. It returns
// the number of messages removed and whether the mailbox went. When ctx is
// done before the mailbox's lock is held, it returns ctx's error and
// changes nothing.
func (s *Store) cleanMailbox(ctx context.Context, name string, before time.Time, dryRun bool) (removed int, gone bool, err error) {
	path := s.MailboxPath(name)
	// A dry run only reads, so it needs no more than read permission and a
	// shared lock, which still keeps writers out while it reads.
	flag := os.O_RDWR
	if dryRun {
		flag = os.O_RDONLY
	}
	f, fi, err := s.openMailbox(ctx, name, flag, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	data, err := readAll(f, fi)
	if err != nil {
		return 0, false, err
	}

	var kept []byte
	left := 0
	for line := range bytes.Lines(data) {
		body, complete := bytes.CutSuffix(line, []byte("\n"))
		if isBlank(body) {
			continue
		}
		if kind, _, _, _ := classifyLine(body); complete && kind == lineRead {
			var m Message
			if json.Unmarshal(body, &m) == nil && !m.CreatedAt.IsZero() && m.CreatedAt.Before(before) {
				removed++
				continue
			}
		}
		// Unread, undated, malformed and torn lines stay byte for byte.
		kept = append(kept, line...)
		left++
	}
	gone = left == 0
	if dryRun || (!gone && removed == 0) {
		return removed, gone, nil
	}
	if gone {
		if err := os.Remove(path); err != nil {
			return 0, false, err
		}
	} else if err := writeFileAtomic(path, kept, fi, true); err != nil {
		return 0, false, err
	}
	// The cursor described the old file; it would be rejected anyway, but
	// a stale hint is clutter, so failing to remove it (or leaving a
	// linked cursors directory alone) fails nothing.
	if err := s.removeCursor(name); err != nil {
		s.warnf("not removing the read cursor of %s: %v", path, err)
	}
	return removed, gone, nil
}
