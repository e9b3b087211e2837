package tools

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"agentmail/mailbox"
)

// TestLockError checks what an operation that gave up on a lock says: the
// file and the whole wait when the store names the file, the wait alone
// when the budget ran out in an earlier wait of the same operation (the
// store then had no file to name), and any other error unchanged.
func TestLockError(t *testing.T) {
	s := &Service{LockWait: 2 * time.Second}
	other := errors.New("disk full")
	for _, c := range []struct {
		err  error
		want string
	}{
		{&mailbox.BusyError{Path: "/p/.agentmail/recipients.jsonl"}, "/p/.agentmail/recipients.jsonl is locked by another process: gave up after waiting 2s"},
		{fmt.Errorf("cleaning: %w", context.DeadlineExceeded), "a file in .agentmail is locked by another process: gave up after waiting 2s"},
		{other, "disk full"},
		{context.Canceled, "context canceled"},
	} {
		if got := s.lockError(c.err); got == nil || got.Error() != c.want {
			t.Errorf("lockError(%v) = %v, want %q", c.err, got, c.want)
		}
	}
	if err := s.lockError(nil); err != nil {
		t.Errorf("lockError(nil) = %v", err)
	}
}
