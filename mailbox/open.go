package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// NotRegularError reports a file of agentmail's that is something other than
// a regular file: a symbolic link, a named pipe, a device, a socket or a
// directory. agentmail neither follows nor waits on such a file, and never
// writes through it.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type bits of what Path names
}

func (e *NotRegularError) Error() string {
	var what string
	switch t := e.Mode.Type(); {
	case t&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case t&fs.ModeSocket != 0:
		what = "a socket"
	case t&fs.ModeCharDevice != 0:
		what = "a character device"
	case t&fs.ModeDevice != 0:
		what = "a device"
	case t&fs.ModeDir != 0:
		what = "a directory"
	default:
		return fmt.Sprintf("%s is not a regular file (mode %v); remove it", e.Path, e.Mode)
	}
	return fmt.Sprintf("%s is %s, not a regular file; remove it", e.Path, what)
}

// OpenRegular opens path as os.OpenFile does, but only when it names a
// regular file, and returns the file's FileInfo. It is how every file under
// .agentmail (and .agentmailignore) is opened. A symbolic link as the last
// element of path is not followed, and a named pipe or a device is opened
// without waiting for it (O_NONBLOCK, cleared again once the file is known
// to be regular); anything that is not a regular file is refused with a
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

// OpenOwn is OpenRegular for a file that agentmail overwrites in place (a
// read cursor, the mailman's PID file): the file must also have no other
// hard link, since writing it would change whatever else the link names.
func OpenOwn(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, fi, err := OpenRegular(path, flag, perm)
	if err != nil {
		return nil, nil, err
	}
	if n := links(fi); n > 1 {
		f.Close()
		return nil, nil, fmt.Errorf("%s has %d hard links, so writing it would change another file too; remove it", path, n)
	}
	return f, fi, nil
}

// lockedOpen is OpenRegular through lockedfile: the file is locked (an
// exclusive lock for a write flag, a shared one otherwise) before it is
// checked. A lock on a named pipe or a device does not wait unless another
// process holds one on the same file, and it is dropped at once.
func lockedOpen(path string, flag int, perm fs.FileMode) (*lockedfile.File, fs.FileInfo, error) {
	f, err := lockedfile.OpenFile(path, flag|openFlags, perm)
	if err != nil {
		return nil, nil, openError(path, err)
	}
	fi, err := regular(f.File, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// regular returns the FileInfo of f, opened from path with openFlags, when
// it is a regular file, and puts f back into blocking mode.
func regular(f *os.File, path string) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	if err := setBlocking(f); err != nil {
		return nil, err
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
