//go:build !unix

package mailbox

import "io/fs"

// fileID returns 0: the cursor then relies on its line fingerprint alone.
func fileID(fs.FileInfo) uint64 { return 0 }
