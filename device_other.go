//go:build !unix

package main

import "io/fs"

// deviceOf returns the device number of a character device, which only
// Unix systems tell.
func deviceOf(fs.FileInfo) (uint64, bool) { return 0, false }
