package jsonrpc

import "time"

// SetReplyWait shortens Reply's wait for a test and returns the undo.
func SetReplyWait(d time.Duration) (undo func()) {
	old := replyWait
	replyWait = d
	return func() { replyWait = old }
}
