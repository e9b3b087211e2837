//go:build linux

package mailbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The environment of TestShortWriteChild: the store's root and the file
// size limit to append under.
const (
	shortRootEnv  = "MAILBOX_TEST_SHORT_ROOT"
	shortLimitEnv = "MAILBOX_TEST_SHORT_LIMIT"
)

// TestAppendUndoesAShortWrite appends in a process whose file size limit
// (RLIMIT_FSIZE) ends the write part of the way through the line, as a full
// disk or a quota would. Append must fail and leave the mailbox exactly as
// it was, so the next message starts on a line of its own and nothing torn
// is delivered or warned about.
func TestAppendUndoesAShortWrite(t *testing.T) {
	s, w := newStore(t)
	first, err := s.Append(context.Background(), "alice", "bob", "first")
	if err != nil {
		t.Fatal(err)
	}
	path := s.MailboxPath("bob")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The limit lets the next line start but not end.
	limit := len(before) + 40
	cmd := exec.Command(os.Args[0], "-test.run=^TestShortWriteChild$")
	cmd.Env = append(os.Environ(), shortRootEnv+"="+s.Root, shortLimitEnv+"="+strconv.Itoa(limit))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "append failed: ") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("child's Append did not fail on the size limit:\n%s", out)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatalf("mailbox changed by a failed append:\nbefore %q\nafter  %q", before, after)
	}
	second, err := s.Append(context.Background(), "alice", "bob", "second")
	if err != nil {
		t.Fatal(err)
	}
	wantDelivered(t, s, "bob", []Message{first, second})
	wantNoWarnings(t, w)
}

// TestShortWriteChild is the process of TestAppendUndoesAShortWrite that
// appends under the file size limit. It reports on stdout and exits 0 when
// it could run the append at all.
func TestShortWriteChild(t *testing.T) {
	root := os.Getenv(shortRootEnv)
	if root == "" {
		t.Skip("a helper process of TestAppendUndoesAShortWrite")
	}
	limit, err := strconv.ParseUint(os.Getenv(shortLimitEnv), 10, 64)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	// A write past the limit raises SIGXFSZ, which would end the process;
	// ignored, the write fails with EFBIG instead.
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_, err = New(root).Append(context.Background(), "alice", "bob", strings.Repeat("x", 200))
	if err == nil {
		fmt.Println("append succeeded under the limit")
	} else {
		fmt.Println("append failed:", err)
	}
	os.Exit(0)
}
