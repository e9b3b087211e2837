//go:build !unix

package mailbox

import (
	"io/fs"
	"os"
)

// openFlags is empty: these systems have no O_NOFOLLOW, and their opens do
// not wait on pipes. A non-regular file is still refused after the open.
const openFlags = 0

// fileID returns 0: the cursor then relies on its line fingerprint alone.
func fileID(fs.FileInfo) uint64 { return 0 }

// links returns 1: hard links are not counted here.
func links(fs.FileInfo) uint64 { return 1 }

// keepOwner does nothing: these systems have no Unix owners to keep.
func keepOwner(*os.File, fs.FileInfo) error { return nil }

// lockedByOther reports false: these systems are not asked.
func lockedByOther(*os.File) (bool, error) { return false, nil }
