//go:build unix

package mailbox

import (
	"io/fs"
	"syscall"
)

// fileID returns the inode number of fi.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
