package mailbox

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// cursor is the read cursor of a mailbox: every line before Off is read or
// malformed. It is a hint, trusted only while the mailbox is still the same
// inode and the line ending at Off still has the recorded length and hash.
type cursor struct {
	Ino     uint64 // identity of the mailbox file
	Off     int64  // end of the fully read prefix
	LastLen int64  // length of the line ending at Off, newline included
	LastSum uint64 // FNV-64a hash of that line
}

// cursorMagic starts every cursor file, so that anything else is ignored.
const cursorMagic = "agentmail-cursor-v1"

// advance returns the cursor moved past line, which starts at offset at.
func (c cursor) advance(line []byte, at int64) cursor {
	return cursor{Ino: c.Ino, Off: at + int64(len(line)), LastLen: int64(len(line)), LastSum: lineSum(line)}
}

func lineSum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// encode formats c with fixed-width fields, so that every cursor file has
// the same length and can be overwritten in place.
func (c cursor) encode() []byte {
	return fmt.Appendf(nil, "%s %020d %020d %020d %016x\n", cursorMagic, c.Ino, c.Off, c.LastLen, c.LastSum)
}

func decodeCursor(b []byte) (cursor, bool) {
	line, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return cursor{}, false
	}
	f := strings.Split(line, " ")
	if len(f) != 5 || f[0] != cursorMagic {
		return cursor{}, false
	}
	ino, err1 := strconv.ParseUint(f[1], 10, 64)
	off, err2 := strconv.ParseInt(f[2], 10, 64)
	n, err3 := strconv.ParseInt(f[3], 10, 64)
	sum, err4 := strconv.ParseUint(f[4], 16, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil || off <= 0 || n <= 0 || n > off {
		return cursor{}, false
	}
	return cursor{Ino: ino, Off: off, LastLen: n, LastSum: sum}, true
}

// cursorFile is the cursor file of one mailbox, opened once per operation
// under the mailbox's lock: one open serves both the read and the update.
type cursorFile struct {
	s    *Store
	name string
	f    *os.File // nil while the file does not exist, or when err is set
	size int      // bytes the file holds, -1 when unknown
	// err is why an existing cursor file could not be opened: it is not a
	// regular file (a symbolic link, say), it has another hard link, it
	// cannot be read, or the cursors directory is not a directory. Such a
	// file is ignored, never written or replaced.
	err error
}

// openCursor opens name's cursor file, for reading and, with write, for
// writing. A missing file is created by the first save.
func (s *Store) openCursor(name string, write bool) *cursorFile {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	cf := &cursorFile{s: s, name: name, size: -1}
	err := realDir(s.cursorDir(), false)
	if err == nil {
		cf.f, _, err = OpenOwn(s.cursorPath(name), flag, 0)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		cf.err = err
	}
	return cf
}

func (cf *cursorFile) close() {
	if cf.f != nil {
		cf.f.Close()
	}
}

// load returns the saved cursor when it is still valid for the mailbox mb
// (whose FileInfo is fi), and otherwise a cursor at offset 0.
func (cf *cursorFile) load(mb *os.File, fi fs.FileInfo) cursor {
	zero := cursor{Ino: fileID(fi)}
	if cf.f == nil {
		return zero
	}
	var buf [128]byte // Longer than any cursor: a longer file is not one.
	n, err := cf.f.ReadAt(buf[:], 0)
	if err != nil && err != io.EOF {
		return zero
	}
	cf.size = n
	c, ok := decodeCursor(buf[:n])
	if !ok || !c.fits(mb, fi) {
		return zero
	}
	return c
}

// fits reports whether c is still valid for the mailbox mb, whose FileInfo
// is fi: the same inode, and the line ending at c.Off as it was.
func (c cursor) fits(mb *os.File, fi fs.FileInfo) bool {
	if c.Ino != fileID(fi) || c.Off > fi.Size() || c.LastLen <= 0 || c.LastLen > c.Off {
		return false
	}
	last := make([]byte, c.LastLen)
	if _, err := mb.ReadAt(last, c.Off-c.LastLen); err != nil {
		return false
	}
	return last[len(last)-1] == '\n' && lineSum(last) == c.LastSum
}

// save records c. The caller holds the exclusive lock of the mailbox, so no
// other writer can interleave. The file is overwritten in place rather than
// truncated and rewritten: cursors all have the same length, and on ext4 a
// truncate-then-write costs a flush at close. A torn cursor fails to decode
// and only costs a full scan, so there is no fsync.
func (cf *cursorFile) save(c cursor) error {
	if cf.err != nil {
		return nil // Ignored, and reported, already.
	}
	if cf.f == nil {
		if err := realDir(cf.s.cursorDir(), true); err != nil {
			return err
		}
		f, _, err := OpenOwn(cf.s.cursorPath(cf.name), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		cf.f = f
	}
	data := c.encode()
	if _, err := cf.f.WriteAt(data, 0); err != nil {
		return err
	}
	if cf.size != len(data) {
		if err := cf.f.Truncate(int64(len(data))); err != nil {
			return err
		}
	}
	cf.size = len(data)
	return nil
}

// removeCursor deletes the cursor of name's mailbox, if any. A cursors
// directory that is not a directory is left alone, with a *NotDirError:
// what a link there points to is not agentmail's to remove.
func (s *Store) removeCursor(name string) error {
	err := realDir(s.cursorDir(), false)
	if err == nil {
		err = os.Remove(s.cursorPath(name))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
