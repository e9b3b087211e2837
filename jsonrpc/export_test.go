package jsonrpc

import "time"

// SetReplyWait shortens Reply's wait for a test and returns the undo.
func SetReplyWait(d time.Duration) (undo func()) {
	old := replyWait
	replyWait = d
	return func() { replyWait = old }
}

// SetCloseWait shortens Serve's wait for a blocked line and returns the undo.
func SetCloseWait(d time.Duration) (undo func()) {
	old := closeWait
	closeWait = d
	return func() { closeWait = old }
}
