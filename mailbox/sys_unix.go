//go:build unix

package mailbox

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openFlags are added to every open of a file of agentmail's: never follow
// a symbolic link in the last element, never wait on a named pipe or device.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// fileID returns the inode number of fi.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// links returns the number of hard links of fi.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// keepOwner gives f, which is to replace the file fi describes, that
// file's owner and group. Only root can give a file away: for anyone else
// the owner stays theirs (the replaced file was theirs to write through
// its group or other permissions, which are kept), and the group is kept
// when they belong to it.
func keepOwner(f *os.File, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	err := f.Chown(int(st.Uid), int(st.Gid))
	if errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0 {
		f.Chown(-1, int(st.Gid))
		return nil
	}
	return err
}

// lockedByOther reports whether another open file holds a lock on f's
// file, by trying a shared flock without waiting; a lock it gets is
// dropped when f is closed. lockedfile, which takes every other lock of
// the package, has no way to try without waiting.
func lockedByOther(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return true, nil
		}
		return false, err
	}
}
