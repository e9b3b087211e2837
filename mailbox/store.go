package mailbox

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// MaxMessageSize is the largest message body in bytes.
const MaxMessageSize = 65536

// ErrTooLarge is returned by Append for a body longer than MaxMessageSize.
var ErrTooLarge = errors.New("message exceeds maximum size of 64KB (65536 bytes)")

// Names of the files and directories under the root.
const (
	dirName        = ".agentmail"
	ignoreFileName = ".agentmailignore"
	mailboxesDir   = "mailboxes"
	cursorsDir     = "cursors"
	statesFile     = "recipients.jsonl"
	statesLockFile = "recipients.lock"
	mailboxExt     = ".jsonl"
)

// Store reads and writes the .agentmail directory of one project root. Its
// methods are safe for concurrent use by many goroutines and processes.
type Store struct {
	// Root is the project root; the files live in Root/.agentmail.
	Root string
	// Warnf reports problems that do not fail the operation: damaged
	// lines that were skipped, a cursor or directory that could not be
	// written. Nil discards them.
	Warnf func(format string, args ...any)
	// Now tells the time. Nil means time.Now.
	Now func() time.Time

	// hints are read cursors kept in memory, for a long-lived process
	// (the mailman) that counts unread mail where no cursor file is
	// valid: Unread and HasUnread write no file (see countUnread).
	hintsMu sync.Mutex
	hints   map[string]cursor

	// delivery is what DeliveriesOf read of the delivery record.
	deliveryMu sync.Mutex
	delivery   *deliveryCache

	// named is what was last read of the named agents' file.
	namedMu sync.Mutex
	named   *namedCache
}

// New returns a Store for root. It does no I/O and takes no lock.
func New(root string) *Store {
	return &Store{Root: root}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) warnf(format string, args ...any) {
	if s.Warnf != nil {
		s.Warnf(format, args...)
	}
}

// Dir returns the .agentmail directory of the store.
func (s *Store) Dir() string { return filepath.Join(s.Root, dirName) }

// MailboxDir returns the directory that holds the mailbox files.
func (s *Store) MailboxDir() string { return filepath.Join(s.Root, dirName, mailboxesDir) }

// StatesPath returns the path of recipients.jsonl, the file of state entries.
func (s *Store) StatesPath() string { return filepath.Join(s.Root, dirName, statesFile) }

func (s *Store) cursorDir() string      { return filepath.Join(s.Root, dirName, cursorsDir) }
func (s *Store) statesLockPath() string { return filepath.Join(s.Root, dirName, statesLockFile) }

// MailboxPath returns the path of name's mailbox file. The name must be
// valid (see ValidName).
func (s *Store) MailboxPath(name string) string {
	return filepath.Join(s.MailboxDir(), name+mailboxExt)
}

func (s *Store) cursorPath(name string) string {
	return filepath.Join(s.cursorDir(), name)
}

// openLocked opens path as OpenOwn does (only a regular file with no other
// hard link, never through a symbolic link) through lockedfile, so with a lock (exclusive
// for a write flag, shared otherwise) taken before the file is checked: a
// lock on a named pipe or a device waits only when another process holds
// one on it, and is dropped at once. It also makes sure that, once the lock is held, path still names the
// locked inode. A mailbox replaced by a rename or removed while we waited
// for its lock is opened again, so nothing is ever written to an orphaned
// inode and no reader trusts one. A wait whose caller gave up (ctx done)
// does not open the path again: it would create the file anew where it
// was removed on purpose.
func openLocked(ctx context.Context, path string, flag int, perm fs.FileMode) (*lockedfile.File, fs.FileInfo, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		f, err := lockedfile.OpenFile(path, flag|openFlags, perm)
		if err != nil {
			return nil, nil, openError(path, err)
		}
		fi, err := regular(f.File, path)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		if err := oneLink(fi, path); err != nil {
			// Another name of the same file, inside .agentmail or out of
			// it, would be read and written through this one.
			f.Close()
			return nil, nil, err
		}
		pi, err := os.Lstat(path)
		if err == nil && os.SameFile(fi, pi) {
			return f, fi, nil
		}
		f.Close()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
	}
}

// openMailbox opens and locks name's mailbox with openLockedContext, once
// realDir has checked the mailboxes directory, which it creates for a flag
// with os.O_CREATE. A missing directory is a missing mailbox:
// errors.Is(err, fs.ErrNotExist).
func (s *Store) openMailbox(ctx context.Context, name string, flag int, perm fs.FileMode) (*lockedfile.File, fs.FileInfo, error) {
	if err := realDir(s.MailboxDir(), flag&os.O_CREATE != 0); err != nil {
		return nil, nil, err
	}
	return openLockedContext(ctx, s.MailboxPath(name), flag, perm)
}

// BusyError is returned by the methods that take a context when its
// deadline passes while they wait for a lock that another process holds.
// errors.Is(err, context.DeadlineExceeded) holds for it.
type BusyError struct {
	Path string // the locked file
}

func (e *BusyError) Error() string { return e.Path + " is locked by another process" }

func (e *BusyError) Unwrap() error { return context.DeadlineExceeded }

// openLockedContext is openLocked, giving up with ctx's error when ctx is
// done before the lock is held, or a *BusyError when its deadline passes
// while it waits. A lock acquired after that is released at once, unused:
// the caller never sees the file, so it changes nothing.
//
// A wait in flock holds an OS thread, which the Go runtime keeps once the
// wait is over: a thousand receives waking at once on one mailbox would
// leave a thousand idle threads behind. So only one goroutine of the
// process at a time waits in flock for a path (lockWaits), including one
// whose caller gave up; the others wait for their turn where waiting
// costs no thread, and give up there with their context.
func openLockedContext(ctx context.Context, path string, flag int, perm fs.FileMode) (*lockedfile.File, fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	gaveUp := func() error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &BusyError{Path: path}
		}
		return ctx.Err()
	}
	turn := lockWaits.turn(path)
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, gaveUp()
	}
	type opened struct {
		f   *lockedfile.File
		fi  fs.FileInfo
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, fi, err := openLocked(ctx, path, flag, perm)
		<-turn
		ch <- opened{f, fi, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.fi, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, nil, gaveUp()
	}
}

// lockWaits holds, for each path, the turn to wait in flock for it: a
// channel with room for one.
var lockWaits = pathTurns{m: map[string]chan struct{}{}}

type pathTurns struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// turn returns path's channel; sending to it takes the turn, receiving
// gives it back.
func (p *pathTurns) turn(path string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.m[path]
	if c == nil {
		c = make(chan struct{}, 1)
		p.m[path] = c
	}
	return c
}

// Append stores a new message from one mailbox name to another and returns
// it. The message gets a UUIDv7 id and the current time. Both names must be
// valid (see ValidName) and the body at most MaxMessageSize bytes, or
// nothing is written. The directories (0700) and the mailbox (0600) are
// created as needed. The line is written with a single write under the
// mailbox's exclusive lock and synced to disk before Append returns; on any
// error the mailbox is left as it was. Waiting for the lock ends with ctx's
// error, and nothing written, if ctx is done first. The message starts a
// thread of its own; AppendReply continues one.
func (s *Store) Append(ctx context.Context, from, to, body string) (Message, error) {
	return s.appendMessage(ctx, from, to, body, nil, "")
}

// AppendReply is Append for a message that answers parent: it carries
// parent's id as reply_to and parent's thread as thread_id.
func (s *Store) AppendReply(ctx context.Context, from, to, body string, parent *Message) (Message, error) {
	return s.appendMessage(ctx, from, to, body, parent, "")
}

// AppendIn is Append for a message of a thread: parent's when it answers
// one, else thread when it is not "", else a thread of its own. A message
// sent to several agents at once is one message to each, in one thread.
func (s *Store) AppendIn(ctx context.Context, from, to, body string, parent *Message, thread string) (Message, error) {
	return s.appendMessage(ctx, from, to, body, parent, thread)
}

func (s *Store) appendMessage(ctx context.Context, from, to, body string, parent *Message, thread string) (_ Message, err error) {
	if err := ValidName(from); err != nil {
		return Message{}, fmt.Errorf("sender: %w", err)
	}
	if err := ValidName(to); err != nil {
		return Message{}, fmt.Errorf("recipient: %w", err)
	}
	if len(body) > MaxMessageSize {
		return Message{}, ErrTooLarge
	}
	m := Message{ID: newID(), From: from, To: to, Message: body, CreatedAt: s.now().Round(0)}
	m.ThreadID = cmp.Or(thread, m.ID)
	if parent != nil {
		m.ReplyTo, m.ThreadID = parent.ID, parent.Thread()
	}
	line, err := json.Marshal(m)
	if err != nil {
		return Message{}, err
	}
	line = append(line, '\n')

	f, fi, err := s.openMailbox(ctx, to, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return Message{}, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	size := fi.Size()
	if line, err = endTornLine(f.File, size, line); err != nil {
		return Message{}, err
	}
	n, err := f.Write(line)
	if err == nil && n != len(line) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = fdatasync(f.File)
	}
	if err != nil {
		// Leave no partial line behind; we still hold the lock.
		if terr := f.Truncate(size); terr != nil {
			return Message{}, fmt.Errorf("%w (and could not undo a partial write: %v)", err, terr)
		}
		return Message{}, err
	}
	if size == 0 {
		// The mailbox may be new: make its directory entries durable too.
		// The message is stored already, so a failure here is only
		// reported; an error would make the sender send it again.
		for _, d := range []string{s.MailboxDir(), s.Dir(), s.Root} {
			if err := syncDir(d); err != nil {
				s.warnf("could not sync directory %s: %v", d, err)
			}
		}
	}
	return m, nil
}

// endTornLine returns line, to be appended to f of the given size, with a
// newline in front when f's last line lacks its own: that line is a torn
// append, and ending it lets line start on a line of its own.
func endTornLine(f *os.File, size int64, line []byte) ([]byte, error) {
	if size == 0 {
		return line, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return nil, err
	}
	if last[0] != '\n' {
		line = append([]byte{'\n'}, line...)
	}
	return line, nil
}

// Receive returns the oldest unread message of name's mailbox and marks it
// read, under one exclusive lock, so each message is delivered exactly once
// however many processes receive at the same time. It returns (nil, nil)
// when there is no unread message or no mailbox, and then creates nothing.
// Malformed and torn lines are skipped with one warning each; see the package
// documentation for the cursor that keeps the cost independent of the
// number of messages already read.
//
// Waiting for the mailbox's lock ends with ctx's error if ctx is done first,
// and nothing is changed. deliver, when not nil, is called with the
// message, still under the lock, before it is marked read: if deliver
// fails, the message stays unread and the error is returned, so a message
// that could not be handed on is not lost. (If marking it read fails after
// deliver succeeded, it is delivered again later.)
func (s *Store) Receive(ctx context.Context, name string, deliver func(*Message) error) (*Message, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	path := s.MailboxPath(name)
	f, fi, err := s.openMailbox(ctx, name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cf := s.openCursor(name, true)
	defer cf.close()
	if cf.err != nil {
		// The cursor is a hint: without it the receive scans from the start.
		s.warnf("ignoring the read cursor of %s: %v", path, cf.err)
	}
	start := cf.load(f.File, fi)
	var found *Message
	// The cursor moves past the last line scanned that is not blank; that
	// line is kept, to be hashed once at the end rather than every line
	// on the way. A blank line is no fingerprint: "\n" comes back at the
	// same offset of a file rewritten in place as easily as not, and the
	// cursor would then skip the unread mail before it. Blank lines after
	// the last other one are scanned again next time.
	var last []byte
	lastAt := int64(-1)
	torn, err := scanLines(f.File, start.Off, fi.Size(), func(line []byte, at int64) (bool, error) {
		kind, m, flagOff, perr := classifyLine(line[:len(line)-1])
		switch kind {
		case lineMalformed:
			s.warnf("skipping malformed line at byte %d of %s: %v", at, path, perr)
		case lineUnread:
			// A copy escapes, not m, which would then be allocated for
			// every line scanned.
			read := m
			read.ReadFlag = true
			if deliver != nil {
				if err := deliver(&read); err != nil {
					return true, err
				}
			}
			if _, err := f.WriteAt(flipTrue, at+int64(flagOff)); err != nil {
				return true, err
			}
			copy(line[flagOff:], flipTrue)
			found = &read
		}
		if kind != lineBlank {
			last, lastAt = append(last[:0], line...), at
		}
		return found != nil, nil
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	if torn >= 0 {
		s.warnf("skipping torn last line at byte %d of %s: no newline, a write was cut short", torn, path)
	}
	if lastAt >= 0 {
		// The cursor is a hint: failing to save it must not lose a message
		// that is already marked read.
		if err := cf.save(start.advance(last, lastAt)); err != nil {
			s.warnf("could not save the read cursor of %s: %v", path, err)
		}
	}
	if err := f.Close(); err != nil {
		if found == nil {
			return nil, err
		}
		s.warnf("closing %s: %v", path, err)
	}
	return found, nil
}

// MarkRead marks the first unread line of name's mailbox that holds
// m (the same id, sender, recipient, text and creation time) read, under
// the mailbox's lock, which it waits for until ctx is done. It is for a
// message that a deliver function of Receive hands on after the lock
// is let go: deliver fails, so the message stays unread meanwhile, and once
// it has been handed on the caller marks it read. It reports whether it
// found the message unread: false, with a nil error, when another receive
// has marked it read meanwhile (it was then delivered twice) or it is gone.
// Another message with the same id is never taken for it.
func (s *Store) MarkRead(ctx context.Context, name string, m *Message) (bool, error) {
	if err := ValidName(name); err != nil {
		return false, err
	}
	f, fi, err := s.openMailbox(ctx, name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	marked := false
	_, err = scanLines(f.File, 0, fi.Size(), func(line []byte, at int64) (bool, error) {
		kind, got, flagOff, _ := classifyLine(line[:len(line)-1])
		if kind != lineUnread || !sameMessage(&got, m) {
			return false, nil
		}
		if _, err := f.WriteAt(flipTrue, at+int64(flagOff)); err != nil {
			return true, err
		}
		marked = true
		return true, nil
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return marked, err
}

// sameMessage reports whether a and b are the same message.
func sameMessage(a, b *Message) bool {
	return a.ID == b.ID && a.From == b.From && a.To == b.To && a.Message == b.Message && a.CreatedAt.Equal(b.CreatedAt)
}

// Unread counts the unread messages of name's mailbox (0 when it has none).
// It holds a shared lock, starts at the read cursor like Receive does, and
// writes nothing; malformed lines are not counted and not reported, and
// neither is a cursor file that cannot be used. Waiting for the mailbox's
// lock ends with ctx's error if ctx is done first.
func (s *Store) Unread(ctx context.Context, name string) (int, error) {
	return s.countUnread(ctx, name, -1)
}

// HasUnread reports whether name's mailbox holds an unread message, as
// Unread does but stopping at the first one.
func (s *Store) HasUnread(ctx context.Context, name string) (bool, error) {
	n, err := s.countUnread(ctx, name, 1)
	return n > 0, err
}

// countUnread counts unread messages up to most (all when most < 0).
func (s *Store) countUnread(ctx context.Context, name string, most int) (int, error) {
	if err := ValidName(name); err != nil {
		return 0, err
	}
	f, fi, err := s.openMailbox(ctx, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cf := s.openCursor(name, false)
	defer cf.close()
	start := cf.load(f.File, fi)
	if start.Off == 0 {
		// No cursor file to go by: the one this process found last time,
		// if it still fits the file, spares reading it all again.
		s.hintsMu.Lock()
		h, ok := s.hints[name]
		s.hintsMu.Unlock()
		if ok && h.fits(f.File, fi) {
			start = h
		}
	}
	n := 0
	// The hint moves, as a cursor does, past the last line that is not
	// blank before the first unread one.
	hint := start
	_, err = scanLines(f.File, start.Off, fi.Size(), func(line []byte, at int64) (bool, error) {
		kind, _, _, _ := classifyLine(line[:len(line)-1])
		switch {
		case kind == lineUnread:
			n++
		case n == 0 && kind != lineBlank:
			hint = hint.advance(line, at)
		}
		return n == most, nil
	})
	if err == nil && hint.Off > start.Off {
		s.hintsMu.Lock()
		if s.hints == nil {
			s.hints = map[string]cursor{}
		}
		s.hints[name] = hint
		s.hintsMu.Unlock()
	}
	return n, err
}

// scanBufSize is the read buffer of scanLines. Typical lines are a few
// hundred bytes, so one read usually reaches the first unread line.
const scanBufSize = 16 << 10

// scanLines calls fn for each complete line of f between from and size, in
// order, with the line including its final newline and the line's offset.
// The slice is only valid during the call. fn returns true to stop. A last
// fragment without a newline (a torn append) is never passed to fn; when the
// scan reaches one that is not blank, scanLines returns its offset as torn,
// and otherwise -1.
func scanLines(f *os.File, from, size int64, fn func(line []byte, at int64) (bool, error)) (torn int64, err error) {
	if from >= size {
		return -1, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, size-from), int(min(size-from, scanBufSize)))
	var long []byte
	at := from
	for {
		frag, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, frag...)
			continue
		}
		line := frag
		if long != nil {
			// The line outgrew the buffer; its earlier parts were copied.
			long = append(long, frag...)
			line = long
		}
		if err == io.EOF {
			if isBlank(line) {
				return -1, nil
			}
			return at, nil
		}
		if err != nil {
			return -1, err
		}
		stop, err := fn(line, at)
		if stop || err != nil {
			return -1, err
		}
		at += int64(len(line))
		long = nil
	}
}

// Mailboxes lists, sorted, the names that have a mailbox file. Files that
// are not "<valid name>.jsonl" are left out, and so are those that no
// operation would open: a symbolic link, a named pipe or anything else
// that is not a regular file, and a file with another hard link. A view of
// every mailbox, cleanup and the mailman pass them by; only the agent whose
// mailbox it is meets the error that names it.
func (s *Store) Mailboxes() ([]string, error) {
	err := realDir(s.MailboxDir(), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.MailboxDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), mailboxExt)
		if !ok || !e.Type().IsRegular() || ValidName(name) != nil {
			continue
		}
		if fi, err := e.Info(); err != nil || links(fi) > 1 {
			continue // removed meanwhile, or another name of some file
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Ignored reads the names listed in <root>/.agentmailignore: one name a
// line, surrounding space trimmed, blank lines skipped. There are no
// comments or patterns. A UTF-8 byte order mark at the start, which some
// editors write, is not part of the first name: a name that silently failed
// to match would let the mailman type into a window that is not an agent.
// A missing file is an empty set; a symbolic link, a named pipe or anything
// else that is not a regular file is an error.
func (s *Store) Ignored() (map[string]bool, error) {
	f, fi, err := OpenRegular(filepath.Join(s.Root, ignoreFileName), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := readAll(f, fi)
	f.Close()
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for line := range bytes.Lines(bytes.TrimPrefix(data, []byte("\uFEFF"))) {
		if name := strings.TrimSpace(string(line)); name != "" {
			set[name] = true
		}
	}
	return set, nil
}

// readShared reads the whole file at path under a shared lock, as
// openLockedContext takes it; a missing file reads as nothing.
func readShared(ctx context.Context, path string) ([]byte, error) {
	f, fi, err := openLockedContext(ctx, path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, fi)
}

// readAll reads r, opened as the file fi describes, to its end in one
// buffer sized to fit.
func readAll(r io.Reader, fi fs.FileInfo) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// tempPrefix starts the names of the temporary files of writeFileAtomic;
// os.CreateTemp ends them with a decimal number.
const tempPrefix = ".tmp-"

// isTempName reports whether name is one writeFileAtomic can give a
// temporary file. A mailbox's name ends in ".jsonl", so that of an agent
// named ".tmp-1" is never one.
func isTempName(name string) bool {
	digits, ok := strings.CutPrefix(name, tempPrefix)
	if !ok || digits == "" {
		return false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// writeFileAtomic replaces target with data through a temporary file in
// target's directory and a rename, so that a reader sees the old or the
// new content, never part of it. With durable, for mail, the file is
// synced before the rename and the directory after it, so that a crash of
// the machine leaves one or the other too. The new file keeps the
// permissions of old, the file it replaces as its caller opened it (nil
// when there is none), and its owner and group (see keepOwner): a cleanup
// or status change run with sudo must not lock the agents out of their own
// files.
func writeFileAtomic(target string, data []byte, old fs.FileInfo, durable bool) (err error) {
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if old != nil {
		if err = tmp.Chmod(old.Mode().Perm()); err == nil {
			err = keepOwner(tmp, old)
		}
		if err != nil {
			tmp.Close()
			return err
		}
	}
	_, err = tmp.Write(data)
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	return syncDir(dir)
}

// syncDir makes the entries of directory dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
