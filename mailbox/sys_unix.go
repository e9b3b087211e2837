//go:build unix

package mailbox

import (
	"io/fs"
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
