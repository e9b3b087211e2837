//go:build unix

package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cleanupAsEnv, when set in the environment of this test binary, makes
// TestCleanupGoesOnPastUnreadableFile the child that cleans the store at the
// root it names as the user nobody, and prints what Cleanup returned.
const cleanupAsEnv = "AGENTMAIL_TEST_CLEANUP_AS_NOBODY"

// nobody is the user and group the child runs as.
const nobody = 65534

// cleanupOutcome is what the child reports of one Cleanup.
type cleanupOutcome struct {
	Report   CleanupReport
	Err      string
	Warnings []string
}

// TestCleanupGoesOnPastUnreadableFile makes one file unreadable (a mailbox,
// or the states) and checks that cleanup reports it in its error, leaves it
// as it was, and cleans every other file all the same, in a dry run as in a
// real one. Such a file is one that another user owns, as after a command
// run once with sudo. Root may read any file, so as root the cleanup runs in
// a child process as nobody.
func TestCleanupGoesOnPastUnreadableFile(t *testing.T) {
	if root := os.Getenv(cleanupAsEnv); root != "" {
		cleanupAsNobody(t, root)
		return
	}
	for _, bad := range []string{"mailbox", "states"} {
		t.Run(bad, func(t *testing.T) {
			s := cleanupFixture(t)
			path := s.MailboxPath("bob")
			// bob's mailbox would lose two messages; the states, three entries.
			want := CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 2, Mailboxes: 3}
			if bad == "states" {
				path = s.StatesPath()
				want = CleanupReport{Messages: 4, Mailboxes: 3}
			}
			before := readFile(t, path)
			unreadable(t, s.Root, path)
			for _, dry := range []bool{true, false} {
				got := cleanupAs(t, s, dry)
				if got.Report != want {
					t.Errorf("Cleanup (dry run %v) reported %+v; want %+v", dry, got.Report, want)
				}
				if !strings.HasPrefix(got.Err, "cleaning "+path+": ") || !strings.Contains(got.Err, "permission denied") || strings.Contains(got.Err, "\n") {
					t.Errorf("Cleanup (dry run %v) error = %q; want one line about %s", dry, got.Err, path)
				}
				if len(got.Warnings) != 0 {
					t.Errorf("Cleanup (dry run %v) warned %q", dry, got.Warnings)
				}
			}
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
			if after := readFile(t, path); after != before {
				t.Errorf("the unreadable file changed:\nbefore %q\nafter  %q", before, after)
			}
			if _, err := os.Stat(s.MailboxPath("carol")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("carol's mailbox, after the unreadable file, is still there (%v)", err)
			}
		})
	}
}

// unreadable makes path, under root, a file that the cleanup of
// cleanupAs may not read: mode 0 for a user other than root; as root, the
// files are given to nobody, who runs the cleanup, but for path.
func unreadable(t *testing.T, root, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		return
	}
	// nobody must reach root through the test's temporary directories.
	for dir := filepath.Dir(root); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(dir, fi.Mode().Perm()|0o001); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// cleanupAs runs the cleanup of the fixture's options on s: in this process
// for a user other than root, in a child as nobody for root.
func cleanupAs(t *testing.T, s *Store, dry bool) cleanupOutcome {
	t.Helper()
	if os.Geteuid() != 0 {
		return cleanupOf(s, dry)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCleanupGoesOnPastUnreadableFile$", "-test.count=1")
	cmd.Env = append(os.Environ(), cleanupAsEnv+"="+s.Root, fmt.Sprintf("%s_DRY=%v", cleanupAsEnv, dry))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cleanup as nobody: %v\n%s", err, out)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	var o cleanupOutcome
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		t.Fatalf("cleanup as nobody printed %q: %v", out, err)
	}
	return o
}

// cleanupAsNobody is the child: it becomes nobody, cleans the store at root
// and prints the outcome as the first line of its output.
func cleanupAsNobody(t *testing.T, root string) {
	if err := syscall.Setgroups(nil); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setgid(nobody); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setuid(nobody); err != nil {
		t.Fatal(err)
	}
	s := New(root)
	s.Now = func() time.Time { return cleanupNow }
	b, err := json.Marshal(cleanupOf(s, os.Getenv(cleanupAsEnv+"_DRY") == "true"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s\n", b)
}

// cleanupOf runs the cleanup of the fixture's options on s.
func cleanupOf(s *Store, dry bool) cleanupOutcome {
	w := &warnings{}
	s.Warnf = w.warnf
	rep, err := s.Cleanup(CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: []string{"alice", "old", "bob"}, DryRun: dry})
	o := cleanupOutcome{Report: rep, Warnings: w.take()}
	if err != nil {
		o.Err = err.Error()
	}
	return o
}
