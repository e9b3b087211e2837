//go:build unix

package main

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports whether fi's file belongs to this process's user, and
// its owner's uid.
func ownedByMe(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	return int(st.Uid), int(st.Uid) == os.Geteuid()
}

// hardLinks returns the number of hard links of fi's file.
func hardLinks(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// writable reports whether this process may create files in the
// directory at path: access(2) answers for this user, groups and ACLs
// included, without writing anything.
func writable(path string) bool {
	const wOK = 2
	return syscall.Access(path, wOK) == nil
}
