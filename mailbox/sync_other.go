//go:build !linux

package mailbox

import "os"

// fdatasync flushes f to the disk; outside Linux it is a full fsync.
func fdatasync(f *os.File) error {
	return f.Sync()
}
