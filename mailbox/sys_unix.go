//go:build unix

package mailbox

import (
	"io/fs"
	"os"
	"syscall"
)

// openFlags are added to every open of a file of agentmail's: never follow
// a symbolic link in the last element, never wait on a named pipe or device.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// setBlocking clears the O_NONBLOCK of openFlags on f, a regular file.
func setBlocking(f *os.File) error {
	return syscall.SetNonblock(int(f.Fd()), false)
}

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
