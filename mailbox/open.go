package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// NotRegularError reports a file of agentmail's that is something other than
// a regular file: a symbolic link, a named pipe, a device, a socket or a
// directory. agentmail neither follows nor waits on such a file, and never
// writes through it.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type bits of what Path names
}

func (e *NotRegularError) Error() string { return notA(e.Path, e.Mode, "a regular file") }

// NotDirError reports a directory of agentmail's inside .agentmail
// (mailboxes, cursors) that is something other than a directory, most
// likely a symbolic link: agentmail never reads, writes or lists files
// through it, so that no link can send a write to another agent's mailbox
// or out of .agentmail.
type NotDirError struct {
	Path string
	Mode fs.FileMode // the type bits of what Path names
}

func (e *NotDirError) Error() string { return notA(e.Path, e.Mode, "a directory") }

// HardLinkError reports a file of agentmail's inside .agentmail that has
// another hard link: a second name, in .agentmail or out of it, for the
// same file. Writing it would change that other file too, and reading it
// would read whatever was put there under the other name, so agentmail
// does neither, as for a symbolic link.
type HardLinkError struct {
	Path  string
	Links uint64 // the file's link count, more than one
}

func (e *HardLinkError) Error() string {
	return fmt.Sprintf("%s has %d hard links, so writing it would change another file too; remove it", e.Path, e.Links)
}

// oneLink returns a *HardLinkError for path when fi, the file opened from
// path, has more than one hard link.
func oneLink(fi fs.FileInfo, path string) error {
	if n := links(fi); n > 1 {
		return &HardLinkError{Path: path, Links: n}
	}
	return nil
}

// notA says that path, of the given type bits, is not what it should be.
func notA(path string, mode fs.FileMode, want string) string {
	what := describe(mode)
	if what == "" {
		return fmt.Sprintf("%s is not %s (mode %v); remove it", path, want, mode)
	}
	return fmt.Sprintf("%s is %s, not %s; remove it", path, what, want)
}

// describe names the kind of file that the type bits of mode stand for,
// or returns "" for an unknown type.
func describe(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t == 0:
		return "a regular file"
	}
	return ""
}

// realDir checks, with os.Lstat, that path is a directory itself and not a
// symbolic link to one, and otherwise returns a *NotDirError. It guards
// every open, create, rename, remove and listing in a directory inside
// .agentmail: OpenRegular refuses a link only as the last element of a
// path. A missing directory is an error satisfying errors.Is(err,
// fs.ErrNotExist), unless create is set: then it is created, 0700, with
// its parents, and checked again.
func realDir(path string, create bool) error {
	fi, err := os.Lstat(path)
	if create && errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return err
		}
		fi, err = os.Lstat(path)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &NotDirError{Path: path, Mode: fi.Mode().Type()}
	}
	return nil
}

// OpenRegular opens path as os.OpenFile does, but only when it names a
// regular file, and returns the file's FileInfo. It is how every file under
// .agentmail (and .agentmailignore) is opened. A symbolic link as the last
// element of path is not followed, and a named pipe or a device is opened
// without waiting for it (O_NONBLOCK, which reads and writes of a regular
// file ignore, so it stays set); anything that is not a regular file is refused with a
// *NotRegularError. A link in an earlier element, such as a linked
// .agentmail directory, is followed as usual.
func OpenRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|openFlags, perm)
	if err != nil {
		return nil, nil, openError(path, err)
	}
	fi, err := regular(f, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// OpenOwn is OpenRegular for a file of agentmail's inside .agentmail (a
// read cursor, the delivery record, the mailman's PID file and log),
// whether it is to be written or only read: the file must also have no
// other hard link, or it is refused with a *HardLinkError, since writing
// it would change whatever else the link names.
func OpenOwn(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, fi, err := OpenRegular(path, flag, perm)
	if err != nil {
		return nil, nil, err
	}
	if err := oneLink(fi, path); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// regular returns the FileInfo of f, opened from path with openFlags, when
// it is a regular file.
func regular(f *os.File, path string) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	return fi, nil
}

// openError explains a failed open with openFlags: a symbolic link fails
// with ELOOP, a named pipe opened for writing with no reader with ENXIO, a
// directory opened for writing with EISDIR. When path names something other
// than a regular file, the error says what it is.
func openError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	return err
}
