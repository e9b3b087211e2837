//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// deviceOf returns the device number of a character device.
func deviceOf(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&fs.ModeCharDevice == 0 {
		return 0, false
	}
	return uint64(st.Rdev), true
}
