//go:build unix

package mailbox

import (
	"context"
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

	"agentmail/internal/nobody"
)

// cleanupAsEnv, when set in the environment of this test binary, makes
// TestCleanupGoesOnPastFileItMayNotChange the child that cleans the store
// at the root it names as nobody, and prints what Cleanup returned.
const cleanupAsEnv = "AGENTMAIL_TEST_CLEANUP_AS_NOBODY"

// cleanupOutcome is what the child reports of one Cleanup.
type cleanupOutcome struct {
	Report   CleanupReport
	Err      string
	Warnings []string
}

// TestCleanupGoesOnPastFileItMayNotChange makes files that cleanup may not
// read (a mailbox, the states) or write (the states, through their
// directory), as files another user owns, and checks that cleanup names
// each in its error, changes none of them, counts nothing it did not do,
// and cleans every other file all the same, in a dry run as in a real one.
func TestCleanupGoesOnPastFileItMayNotChange(t *testing.T) {
	if root := os.Getenv(cleanupAsEnv); root != "" {
		cleanupAsNobody(t, root)
		return
	}
	all := CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 4, Mailboxes: 3}
	noStates := CleanupReport{Messages: 4, Mailboxes: 3}
	for _, tc := range []struct {
		name string
		// deny takes away what cleanup needs of the file it returns.
		deny func(t *testing.T, s *Store) []string
		// the reports of a dry run and a real one, and whether the dry
		// run fails too.
		wantDry, want CleanupReport
		dryFails      bool
	}{
		{
			name:    "mailbox unreadable",
			deny:    func(t *testing.T, s *Store) []string { return chmod(t, 0, s.MailboxPath("bob")) },
			wantDry: CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 2, Mailboxes: 3}, dryFails: true,
			want: CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 2, Mailboxes: 3},
		},
		{
			name:    "states unreadable",
			deny:    func(t *testing.T, s *Store) []string { return chmod(t, 0, s.StatesPath()) },
			wantDry: noStates, dryFails: true,
			want: noStates,
		},
		{
			name: "states and mailbox unreadable",
			deny: func(t *testing.T, s *Store) []string {
				return append(chmod(t, 0, s.StatesPath()), chmod(t, 0, s.MailboxPath("bob"))...)
			},
			wantDry: CleanupReport{Messages: 2, Mailboxes: 3}, dryFails: true,
			want: CleanupReport{Messages: 2, Mailboxes: 3},
		},
		{
			// The states' lock is there, so the states are read, planned
			// and counted; only their replacement fails. A dry run writes
			// nothing, so it sees nothing wrong.
			name: "states unwritable",
			deny: func(t *testing.T, s *Store) []string {
				if err := os.WriteFile(s.statesLockPath(), nil, 0o600); err != nil {
					t.Fatal(err)
				}
				chmod(t, 0o555, filepath.Dir(s.StatesPath()))
				return []string{s.StatesPath()}
			},
			wantDry: all,
			want:    noStates,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cleanupFixture(t)
			paths := tc.deny(t, s)
			before := map[string]string{}
			for _, p := range paths {
				before[p] = readAsRoot(t, p)
			}
			for _, dry := range []bool{true, false} {
				got := cleanupAs(t, s, dry)
				want, fails := tc.want, true
				if dry {
					want, fails = tc.wantDry, tc.dryFails
				}
				if got.Report != want {
					t.Errorf("Cleanup (dry run %v) reported %+v; want %+v", dry, got.Report, want)
				}
				var wantErr []string
				if fails {
					for _, p := range paths {
						wantErr = append(wantErr, "cleaning "+p+": ")
					}
				}
				if errs := splitErr(got.Err); len(errs) != len(wantErr) {
					t.Errorf("Cleanup (dry run %v) error = %q; want one about each of %q", dry, got.Err, paths)
				} else {
					for i, e := range errs {
						if !strings.HasPrefix(e, wantErr[i]) || !strings.HasSuffix(e, "permission denied") {
							t.Errorf("Cleanup (dry run %v) error %d = %q; want %q… permission denied", dry, i, e, wantErr[i])
						}
					}
				}
				if len(got.Warnings) != 0 {
					t.Errorf("Cleanup (dry run %v) warned %q", dry, got.Warnings)
				}
			}
			for _, p := range paths {
				if after := readAsRoot(t, p); after != before[p] {
					t.Errorf("%s changed:\nbefore %q\nafter  %q", p, before[p], after)
				}
			}
			if _, err := os.Stat(s.MailboxPath("carol")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("carol's mailbox is still there (%v)", err)
			}
		})
	}
}

// splitErr splits the text of an errors.Join into its errors.
func splitErr(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// chmod sets the mode of path for the rest of the test, and returns path
// (for a file) in a slice.
func chmod(t *testing.T, mode fs.FileMode, path string) []string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	// The temporary directory's removal needs its directories writable.
	t.Cleanup(func() { os.Chmod(path, fi.Mode().Perm()) })
	return []string{path}
}

// readAsRoot reads path, which the test may have made unreadable.
func readAsRoot(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(path, fi.Mode().Perm())
	return readFile(t, path)
}

// cleanupAs runs the cleanup of the fixture's options on s: in this process
// for a user other than root, and as root in a child that runs as nobody.
func cleanupAs(t *testing.T, s *Store, dry bool) cleanupOutcome {
	t.Helper()
	if !nobody.Needed() {
		return cleanupOf(s, dry)
	}
	undo, err := nobody.Hand(s.Root)
	t.Cleanup(undo)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCleanupGoesOnPastFileItMayNotChange$", "-test.count=1")
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
	if err := nobody.Become(); err != nil {
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
	rep, err := s.Cleanup(CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: liveWindows, DryRun: dry})
	o := cleanupOutcome{Report: rep, Warnings: w.take()}
	if err != nil {
		o.Err = err.Error()
	}
	return o
}

// TestRewriteKeepsOwnerAndMode checks that a file replaced by rename keeps
// the permissions of the one it replaces, and, for root, its owner and
// group: a status change or cleanup run with sudo must not lock the agents
// out of their files.
func TestRewriteKeepsOwnerAndMode(t *testing.T) {
	s, _ := newStore(t)
	if err := s.SetStatus(context.Background(), "bob", StatusWork, "%1"); err != nil {
		t.Fatal(err)
	}
	path := s.StatesPath()
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	owner := os.Getuid()
	if owner == 0 {
		owner = 65534
		if err := os.Chown(path, owner, owner); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("not root: the owner is not changed")
	}
	if err := s.SetStatus(context.Background(), "bob", StatusReady, "%1"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v after the rewrite, want 0640", fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != owner || (owner == 65534 && st.Gid != 65534)) {
		t.Errorf("owner %d:%d after the rewrite, want %d", st.Uid, st.Gid, owner)
	}
	if got := stateOf(t, s, "bob"); got.Status != StatusReady {
		t.Errorf("status %q, want ready", got.Status)
	}
}
