//go:build unix

package mailbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// special is something other than a regular file, put where a file of
// agentmail's belongs.
type special struct {
	name string
	make func(t *testing.T, path string)
	what string // how NotRegularError describes it
}

// specials returns a symbolic link to target, a dangling link to dangling,
// a named pipe and a directory.
func specials(target, dangling string) []special {
	link := func(to string) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			t.Helper()
			if err := os.Symlink(to, path); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []special{
		{"symlink", link(target), "a symbolic link"},
		{"dangling-symlink", link(dangling), "a symbolic link"},
		{"fifo", func(t *testing.T, path string) {
			t.Helper()
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "a named pipe"},
		{"directory", func(t *testing.T, path string) {
			t.Helper()
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "a directory"},
	}
}

// wantNotRegular checks that err is a *NotRegularError for path that says
// what it found.
func wantNotRegular(t *testing.T, op string, err error, path, what string) {
	t.Helper()
	var nr *NotRegularError
	wantRefused(t, op, err, errors.As(err, &nr) && nr.Path == path, path+" is "+what+", not a regular file; remove it")
}

// wantRefused checks that err is of the expected type (typed) and says want.
func wantRefused(t *testing.T, op string, err error, typed bool, want string) {
	t.Helper()
	if !typed {
		t.Errorf("%s: err = %v; want an error saying %q", op, err, want)
	} else if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %q; want it to contain %q", op, err, want)
	}
}

// wantUnchanged checks that path still holds content; an empty content
// means that path must not exist.
func wantUnchanged(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	switch {
	case content == "" && !errors.Is(err, os.ErrNotExist):
		t.Errorf("%s was created: %q, %v", path, b, err)
	case content != "" && string(b) != content:
		t.Errorf("%s changed: %q, %v; want %q", path, b, err, content)
	}
}

// TestMailboxNotRegular: a mailbox that is a symbolic link (to another
// agent's mailbox, or to a file outside .agentmail), a named pipe or a
// directory is refused by every operation, at once, with an error that
// names it; nothing is written through it.
func TestMailboxNotRegular(t *testing.T) {
	for _, sp := range specials("alice.jsonl", "../../outside/new") {
		t.Run(sp.name, func(t *testing.T) {
			s, w := newStore(t)
			mustAppend(t, s, "bob", "alice", "for alice")
			alice := readFile(t, s.MailboxPath("alice"))
			outside := filepath.Join(s.Root, "outside")
			if err := os.Mkdir(outside, 0o700); err != nil {
				t.Fatal(err)
			}
			path := s.MailboxPath("bob")
			sp.make(t, path)

			within(t, "Append", func() {
				_, err := s.Append(context.Background(), "alice", "bob", "for bob")
				wantNotRegular(t, "Append", err, path, sp.what)
			})
			within(t, "Receive", func() {
				m, err := s.Receive(context.Background(), "bob", nil)
				if m != nil {
					t.Errorf("Receive = %+v", *m)
				}
				wantNotRegular(t, "Receive", err, path, sp.what)
			})
			within(t, "Unread", func() {
				_, err := s.Unread(context.Background(), "bob")
				wantNotRegular(t, "Unread", err, path, sp.what)
			})
			wantUnchanged(t, s.MailboxPath("alice"), alice)
			wantUnchanged(t, filepath.Join(outside, "new"), "")
			if _, err := os.Stat(s.cursorPath("bob")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a cursor was written for bob: %v", err)
			}
			wantNoWarnings(t, w)
		})
	}
}

// TestStatesNotRegular: recipients.jsonl or recipients.lock in the form of
// a symbolic link, a named pipe or a directory makes state reads and writes
// and cleanup fail at once with an error that names the file; the file a
// link points to is neither written nor created.
func TestStatesNotRegular(t *testing.T) {
	for _, file := range []string{statesFile, statesLockFile} {
		for _, sp := range specials("mailboxes/alice.jsonl", "../outside") {
			t.Run(file+"/"+sp.name, func(t *testing.T) {
				s, _ := newStore(t)
				mustAppend(t, s, "bob", "alice", "for alice")
				alice := readFile(t, s.MailboxPath("alice"))
				if file == statesLockFile {
					if err := s.SetStatus(context.Background(), "alice", StatusReady, ""); err != nil {
						t.Fatal(err)
					}
				}
				path := filepath.Join(s.Dir(), file)
				os.Remove(path)
				sp.make(t, path)

				within(t, "SetStatus", func() {
					wantNotRegular(t, "SetStatus", s.SetStatus(context.Background(), "bob", StatusWork, ""), path, sp.what)
				})
				within(t, "Cleanup", func() {
					_, err := s.Cleanup(CleanupOptions{StaleAfter: time.Hour, DeliveredAfter: time.Hour})
					wantNotRegular(t, "Cleanup", err, path, sp.what)
				})
				if file == statesFile {
					within(t, "States", func() {
						_, err := s.States(context.Background())
						wantNotRegular(t, "States", err, path, sp.what)
					})
				}
				wantUnchanged(t, s.MailboxPath("alice"), alice)
				wantUnchanged(t, filepath.Join(s.Root, "outside"), "")
			})
		}
	}
}

// TestIgnoredNotRegular: a .agentmailignore that is a symbolic link or a
// named pipe is an error, returned at once.
func TestIgnoredNotRegular(t *testing.T) {
	for _, sp := range specials("names", "nowhere") {
		t.Run(sp.name, func(t *testing.T) {
			s, _ := newStore(t)
			if err := os.WriteFile(filepath.Join(s.Root, "names"), []byte("bob\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(s.Root, ignoreFileName)
			sp.make(t, path)
			within(t, "Ignored", func() {
				set, err := s.Ignored()
				if set != nil {
					t.Errorf("Ignored = %v", set)
				}
				wantNotRegular(t, "Ignored", err, path, sp.what)
			})
		})
	}
}

// TestLinkedDirectory: .agentmail itself may be a symbolic link; only the
// files in it are checked.
func TestLinkedDirectory(t *testing.T) {
	s, w := newStore(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, s.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root, ignoreFileName), []byte("carol\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := mustAppend(t, s, "alice", "bob", "through the link")
	wantUnread(t, s, "bob", 1)
	if got := mustReceive(t, s, "bob"); got.ID != m.ID {
		t.Errorf("received %+v; want %+v", *got, m)
	}
	if err := s.SetStatus(context.Background(), "bob", StatusReady, ""); err != nil {
		t.Fatal(err)
	}
	if sts, err := s.States(context.Background()); err != nil || len(sts) != 1 || sts[0].Recipient != "bob" {
		t.Errorf("States = %+v, %v", sts, err)
	}
	if set, err := s.Ignored(); err != nil || !set["carol"] {
		t.Errorf("Ignored = %v, %v", set, err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, mailboxesDir, "bob"+mailboxExt)); err != nil {
		t.Error(err)
	}
	wantNoWarnings(t, w)
}

// cursorFixture returns a store in which bob has sent alice a message and
// has two messages of his own, with the warnings it reports, alice's
// mailbox as written, bob's messages, and the path of bob's cursor: its
// directory exists, and nothing is there yet.
func cursorFixture(t *testing.T) (s *Store, w *warnings, alice string, ms []Message, path string) {
	t.Helper()
	s, w = newStore(t)
	mustAppend(t, s, "bob", "alice", "for alice")
	alice = readFile(t, s.MailboxPath("alice"))
	ms = appendN(t, s, "bob", 2)
	if err := os.MkdirAll(s.cursorDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	return s, w, alice, ms, s.cursorPath("bob")
}

// wantDeliveredWarned receives every message of ms from name's mailbox, in
// order, and then finds none left, checking each as wantDelivered does.
// After each of those receives, the last one included, the store must have
// warned exactly once, with want.
func wantDeliveredWarned(t *testing.T, s *Store, w *warnings, name string, ms []Message, want string) {
	t.Helper()
	for i := 0; i <= len(ms); i++ {
		within(t, "Receive", func() {
			t.Helper()
			if i == len(ms) {
				wantNoMessage(t, s, name)
			} else {
				wantMessage(t, i, mustReceive(t, s, name), name, ms[i])
			}
		})
		if msgs := w.take(); len(msgs) != 1 || msgs[0] != want {
			t.Errorf("receive %d: warnings %q; want one: %q", i+1, msgs, want)
		}
	}
}

// TestCursorNotRegular: a cursor file that is a symbolic link (to another
// agent's mailbox, or out of .agentmail), a named pipe or a directory does
// not stop mail. A receive ignores it with one warning and scans from the
// start, never writes through it or replaces it; Unread ignores it silently.
func TestCursorNotRegular(t *testing.T) {
	for _, sp := range specials("../mailboxes/alice.jsonl", "../../outside") {
		t.Run(sp.name, func(t *testing.T) {
			s, w, alice, ms, path := cursorFixture(t)
			sp.make(t, path)
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}

			within(t, "Unread", func() { wantUnread(t, s, "bob", 2) })
			wantNoWarnings(t, w)
			want := "ignoring the read cursor of " + s.MailboxPath("bob") + ": " + path + " is " + sp.what + ", not a regular file; remove it"
			wantDeliveredWarned(t, s, w, "bob", ms, want)
			wantUnchanged(t, s.MailboxPath("alice"), alice)
			wantUnchanged(t, filepath.Join(s.Root, "outside"), "")
			if after, err := os.Lstat(path); err != nil || after.Mode().Type() != before.Mode().Type() {
				t.Errorf("the cursor's place now holds %v, %v; want the %s left alone", after, err, sp.name)
			}
		})
	}
}

// readOnly makes paths impossible to open for writing, root or not: mode
// 0400 (0500 for a directory) and, for root, the immutable attribute. The
// test is skipped when that cannot be done here.
func readOnly(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		mode := fi.Mode().Perm()
		ro := os.FileMode(0o400)
		if fi.IsDir() {
			ro = 0o500
		}
		if err := os.Chmod(p, ro); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, mode) })
		if os.Geteuid() != 0 {
			continue
		}
		if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
			t.Skipf("cannot make %s immutable: %v: %s", p, err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
	}
	f, err := os.OpenFile(paths[0], os.O_RDWR, 0)
	if err == nil {
		f.Close()
		t.Skipf("%s can still be opened for writing", paths[0])
	}
}

// TestCleanupDryRunReadOnly: a dry run only reads, so it works on
// mailboxes, recipients.jsonl and an .agentmail directory it may not
// write, and reports what a real run would remove.
func TestCleanupDryRunReadOnly(t *testing.T) {
	s := cleanupFixture(t)
	names, err := s.Mailboxes()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, name := range names {
		paths = append(paths, s.MailboxPath(name))
	}
	paths = append(paths, s.StatesPath(), s.MailboxDir(), s.cursorDir(), s.Dir())
	before := snapshot(t, s.Root)
	readOnly(t, paths...)

	opt := CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: liveWindows, DryRun: true}
	want := CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 4, Mailboxes: 3}
	if got, err := s.Cleanup(opt); err != nil || got != want {
		t.Errorf("dry run on read-only files = %+v, %v; want %+v", got, err, want)
	}
	if after := snapshot(t, s.Root); !reflect.DeepEqual(before, after) {
		t.Errorf("the dry run changed files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestCursorHardLink: a cursor file that is another name of alice's
// mailbox is ignored by bob's receive, with one warning each time, and
// alice's mailbox keeps her mail.
func TestCursorHardLink(t *testing.T) {
	s, w, alice, ms, path := cursorFixture(t)
	if err := os.Link(s.MailboxPath("alice"), path); err != nil {
		t.Fatal(err)
	}
	wantUnread(t, s, "bob", 2)
	wantNoWarnings(t, w)
	// Two messages and the receive that finds none: three warnings.
	want := "ignoring the read cursor of " + s.MailboxPath("bob") + ": " + path + " has 2 hard links, so writing it would change another file too; remove it"
	wantDeliveredWarned(t, s, w, "bob", ms, want)
	wantUnchanged(t, s.MailboxPath("alice"), alice)
	// alice's mailbox has another name now, so it is refused too, until
	// the link is gone.
	_, err := s.Receive(context.Background(), "alice", nil)
	wantHardLink(t, "Receive(alice) with a second name", err, s.MailboxPath("alice"))
	wantUnchanged(t, s.MailboxPath("alice"), alice)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := mustReceive(t, s, "alice"); got.Message != "for alice" {
		t.Errorf("alice received %+v", *got)
	}
}

// wantHardLink checks that err is a *HardLinkError for path, a file with
// two names, that says so.
func wantHardLink(t *testing.T, op string, err error, path string) {
	t.Helper()
	var hl *HardLinkError
	wantRefused(t, op, err, errors.As(err, &hl) && hl.Path == path && hl.Links == 2,
		path+" has 2 hard links, so writing it would change another file too; remove it")
}

// linkOut gives the file at path a second name out of the store's root,
// and returns a check that the file still holds, byte for byte, what it
// holds now.
func linkOut(t *testing.T, path string) (unchanged func()) {
	t.Helper()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Link(path, outside); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, outside)
	return func() {
		t.Helper()
		if after := readFile(t, outside); after != before {
			t.Errorf("%s changed: %q; want %q", outside, after, before)
		}
	}
}

// TestMailboxHardLink: a mailbox that is another name of a file out of
// .agentmail, or of another agent's mailbox, is refused by every operation
// on it, at once, with an error that names it; the views of every mailbox
// and cleanup pass it by, as they pass a symbolic link by. The file, which
// holds an unread message for bob, stays byte for byte as it was.
func TestMailboxHardLink(t *testing.T) {
	planted := `{"id":"x1","from":"mallory","to":"bob","message":"planted","read_flag":false}` + "\n"
	for _, tc := range []struct {
		name   string
		target func(t *testing.T, s *Store) string
	}{
		{"outside", func(t *testing.T, s *Store) string {
			path := filepath.Join(t.TempDir(), "outside.jsonl")
			if err := os.WriteFile(path, []byte(planted), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"mailbox", func(t *testing.T, s *Store) string {
			return writeMailbox(t, s, "carol", planted)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, w := newStore(t)
			ctx := context.Background()
			mustAppend(t, s, "bob", "alice", "for alice")
			alice := readFile(t, s.MailboxPath("alice"))
			target := tc.target(t, s)
			path := s.MailboxPath("bob")
			if err := os.Link(target, path); err != nil {
				t.Fatal(err)
			}

			within(t, "Append", func() {
				_, err := s.Append(ctx, "alice", "bob", "through the link")
				wantHardLink(t, "Append", err, path)
			})
			within(t, "Receive", func() {
				m, err := s.Receive(ctx, "bob", nil)
				if m != nil {
					t.Errorf("Receive = %+v", *m)
				}
				wantHardLink(t, "Receive", err, path)
			})
			within(t, "Unread", func() {
				_, err := s.Unread(ctx, "bob")
				wantHardLink(t, "Unread", err, path)
			})
			within(t, "HasUnread", func() {
				_, err := s.HasUnread(ctx, "bob")
				wantHardLink(t, "HasUnread", err, path)
			})
			within(t, "Recent", func() {
				_, err := s.Recent(ctx, "bob", 10, nil)
				wantHardLink(t, "Recent", err, path)
			})
			within(t, "Messages", func() {
				err := s.Messages(ctx, "bob", func(*Message) bool { return true })
				wantHardLink(t, "Messages", err, path)
			})
			if names, err := s.Mailboxes(); err != nil || !reflect.DeepEqual(names, []string{"alice"}) {
				t.Errorf("Mailboxes = %q, %v; want only alice, without the linked ones", names, err)
			}
			for _, dry := range []bool{true, false} {
				rep, err := s.Cleanup(CleanupOptions{StaleAfter: time.Hour, DeliveredAfter: time.Nanosecond, DryRun: dry})
				if err != nil || rep.Mailboxes != 0 || rep.Messages != 0 {
					t.Errorf("Cleanup (dry run %v) = %+v, %v; want the linked mailbox passed by", dry, rep, err)
				}
			}

			wantUnchanged(t, target, planted)
			wantUnchanged(t, s.MailboxPath("alice"), alice)
			if fi, err := os.Lstat(path); err != nil || links(fi) != 2 {
				t.Errorf("bob's mailbox is now %v, %v; want the link left alone", fi, err)
			}
			if _, err := os.Stat(s.cursorPath("bob")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a cursor was written for bob: %v", err)
			}
			wantNoWarnings(t, w)
		})
	}
}

// TestStatesHardLink: recipients.jsonl or recipients.lock with a second
// name out of .agentmail makes state reads and writes and cleanup fail at
// once with an error that names it, and the file is not written.
func TestStatesHardLink(t *testing.T) {
	for _, file := range []string{statesFile, statesLockFile} {
		t.Run(file, func(t *testing.T) {
			s, _ := newStore(t)
			ctx := context.Background()
			if err := s.SetStatus(ctx, "alice", StatusReady, ""); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(s.Dir(), file)
			unchanged := linkOut(t, path)

			within(t, "SetStatus", func() {
				wantHardLink(t, "SetStatus", s.SetStatus(ctx, "bob", StatusWork, ""), path)
			})
			within(t, "Cleanup", func() {
				_, err := s.Cleanup(CleanupOptions{StaleAfter: time.Hour, DeliveredAfter: time.Hour})
				wantHardLink(t, "Cleanup", err, path)
			})
			if file == statesFile {
				within(t, "States", func() {
					_, err := s.States(ctx)
					wantHardLink(t, "States", err, path)
				})
			}
			unchanged()
		})
	}
}

// TestRecordsHardLink: the record of announced mail and the delivery
// record, each with a second name out of .agentmail, are neither read nor
// written nor replaced.
func TestRecordsHardLink(t *testing.T) {
	ctx := context.Background()
	t.Run("announced", func(t *testing.T) {
		s, _ := newStore(t)
		mustAppend(t, s, "alice", "bob", "one")
		if got, err := s.Announce(ctx, "bob", 10); err != nil || len(got) != 1 {
			t.Fatalf("Announce = %v, %v; want one message", got, err)
		}
		path := s.announcedPath("bob")
		unchanged := linkOut(t, path)
		mustAppend(t, s, "alice", "bob", "two")
		got, err := s.Announce(ctx, "bob", 10)
		if got != nil {
			t.Errorf("Announce = %v", got)
		}
		wantHardLink(t, "Announce", err, path)
		unchanged()
		if fi, err := os.Lstat(path); err != nil || links(fi) != 2 {
			t.Errorf("the record is now %v, %v; want the link left alone", fi, err)
		}
	})
	t.Run("delivery", func(t *testing.T) {
		s, _ := newStore(t)
		if err := s.RecordDelivery(DeliveryEvent{ID: "x1", To: "bob", State: Notified, By: "hook"}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(s.Dir(), deliveryFile)
		unchanged := linkOut(t, path)
		wantHardLink(t, "RecordDelivery", s.RecordDelivery(DeliveryEvent{ID: "x1", To: "bob", State: Read}), path)
		ds, err := s.Deliveries()
		if ds != nil {
			t.Errorf("Deliveries = %v", ds)
		}
		wantHardLink(t, "Deliveries", err, path)
		unchanged()
	})
}

// wantNotDir checks that err is a *NotDirError for path that says what it
// found.
func wantNotDir(t *testing.T, op string, err error, path, what string) {
	t.Helper()
	var nd *NotDirError
	wantRefused(t, op, err, errors.As(err, &nd) && nd.Path == path, path+" is "+what+", not a directory; remove it")
}

// TestMailboxDirLinked: a mailboxes directory that is a symbolic link, to
// a directory of mailboxes out of .agentmail or to nowhere, makes send,
// receive, unread, the listing and cleanup (a dry run too) fail with an
// error that names it; nothing is written, created or removed where the
// link points.
func TestMailboxDirLinked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target func(elsewhere string) string
	}{
		{"symlink", func(elsewhere string) string { return elsewhere }},
		{"dangling-symlink", func(elsewhere string) string { return filepath.Join(elsewhere, "new") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, w := newStore(t)
			// Mailboxes worth writing to: bob's holds a read message and an
			// unread one, carol's only a read one, so a cleanup would
			// rewrite the one and remove the other.
			mustAppend(t, s, "alice", "bob", "read")
			mustAppend(t, s, "alice", "bob", "unread")
			mustAppend(t, s, "alice", "carol", "read")
			mustReceive(t, s, "bob")
			mustReceive(t, s, "carol")
			elsewhere := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.Rename(s.MailboxDir(), elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(s.cursorDir()); err != nil {
				t.Fatal(err)
			}
			path := s.MailboxDir()
			if err := os.Symlink(tc.target(elsewhere), path); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, elsewhere)
			const what = "a symbolic link"

			_, err := s.Append(context.Background(), "alice", "bob", "for bob")
			wantNotDir(t, "Append", err, path, what)
			_, err = s.Append(context.Background(), "alice", "dave", "for dave")
			wantNotDir(t, "Append to a new mailbox", err, path, what)
			m, err := s.Receive(context.Background(), "bob", nil)
			if m != nil {
				t.Errorf("Receive = %+v", *m)
			}
			wantNotDir(t, "Receive", err, path, what)
			_, err = s.Unread(context.Background(), "bob")
			wantNotDir(t, "Unread", err, path, what)
			_, err = s.HasUnread(context.Background(), "bob")
			wantNotDir(t, "HasUnread", err, path, what)
			_, err = s.Mailboxes()
			wantNotDir(t, "Mailboxes", err, path, what)
			for _, dry := range []bool{true, false} {
				_, err = s.Cleanup(CleanupOptions{StaleAfter: time.Hour, DeliveredAfter: time.Nanosecond, DryRun: dry})
				wantNotDir(t, fmt.Sprintf("Cleanup (dry run %v)", dry), err, path, what)
			}

			if after := snapshot(t, elsewhere); !reflect.DeepEqual(before, after) {
				t.Errorf("files at the link's target changed:\nbefore %v\nafter  %v", before, after)
			}
			if _, err := os.Lstat(s.cursorDir()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a cursors directory was created: %v", err)
			}
			wantNoWarnings(t, w)
		})
	}
}

// TestCursorDirLinked: a cursors directory that is a symbolic link to the
// mailboxes directory would make the cursor of a window named carol.jsonl
// the mailbox of carol. It is ignored instead: that window's receive
// delivers with one warning, its unread count needs no cursor, cleanup
// leaves the cursor alone with a warning, and carol keeps her mail.
func TestCursorDirLinked(t *testing.T) {
	s, w := newStore(t)
	mustAppend(t, s, "bob", "carol", "for carol")
	carol := readFile(t, s.MailboxPath("carol"))
	ms := appendN(t, s, "carol.jsonl", 2)
	path := s.cursorDir()
	if err := os.Symlink(mailboxesDir, path); err != nil {
		t.Fatal(err)
	}
	box := s.MailboxPath("carol.jsonl")
	dirErr := path + " is a symbolic link, not a directory; remove it"

	wantUnread(t, s, "carol.jsonl", 2)
	wantNoWarnings(t, w)
	wantDeliveredWarned(t, s, w, "carol.jsonl", ms, "ignoring the read cursor of "+box+": "+dirErr)
	wantUnchanged(t, s.MailboxPath("carol"), carol)

	// Every message of carol.jsonl is read now, so cleanup removes that
	// mailbox, and would remove its cursor with it.
	rep, err := s.Cleanup(CleanupOptions{StaleAfter: time.Hour, DeliveredAfter: time.Nanosecond})
	if err != nil || rep.Mailboxes != 1 {
		t.Errorf("Cleanup = %+v, %v; want carol.jsonl's mailbox removed", rep, err)
	}
	want := "not removing the read cursor of " + box + ": " + dirErr
	if msgs := w.take(); len(msgs) != 1 || msgs[0] != want {
		t.Errorf("warnings %q; want one: %q", msgs, want)
	}
	wantUnchanged(t, s.MailboxPath("carol"), carol)
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the cursors link now is %v, %v; want it left alone", fi, err)
	}
}

// TestMailboxDirRegularFile: a regular file where the mailboxes directory
// belongs is refused by name and kind.
func TestMailboxDirRegularFile(t *testing.T) {
	s, _ := newStore(t)
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.MailboxDir(), []byte("not a directory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Append(context.Background(), "alice", "bob", "hi")
	wantNotDir(t, "Append", err, s.MailboxDir(), "a regular file")
	_, err = s.Receive(context.Background(), "bob", nil)
	wantNotDir(t, "Receive", err, s.MailboxDir(), "a regular file")
}
