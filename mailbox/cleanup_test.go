package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
)

var cleanupNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func msgLine(t *testing.T, id string, read bool, created time.Time) string {
	t.Helper()
	b, err := json.Marshal(Message{ID: id, From: "alice", To: "x", Message: "body " + id, ReadFlag: read, CreatedAt: created})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func stateLineOf(name string, updated time.Time) string {
	return stateLineWith(name, StatusReady, updated)
}

func stateLineWith(name, status string, updated time.Time) string {
	st := State{Recipient: name, Status: status, UpdatedAt: updated}
	b, _ := st.marshal()
	return string(b) + "\n"
}

// liveWindows are the windows of cleanupFixture's tmux.
var liveWindows = []string{"alice", "old", "bob", "busy", "away", "rung"}

// cleanupFixture builds a root with offline and stale entries (one both),
// old work and offline entries of live windows,
// mailboxes that lose some messages, one that loses all of them, an empty
// one, a blank one and one holding only a torn line.
func cleanupFixture(t *testing.T) *Store {
	s, _ := newStore(t)
	s.Now = func() time.Time { return cleanupNow }
	recent := cleanupNow.Add(-10 * time.Minute)
	old := cleanupNow.Add(-3 * time.Hour)
	ancient := cleanupNow.Add(-72 * time.Hour)

	states := stateLineOf("alice", recent) + // live, fresh: kept
		stateLineOf("gone1", recent) + // offline
		stateLineOf("gone2", ancient) + // offline and stale: counted once, as offline
		stateLineOf("old", ancient) + // stale
		stateLineWith("busy", StatusWork, ancient) + // as old, but work: kept while its window may be there
		stateLineWith("away", StatusOffline, ancient) + // as old, but offline: kept while its window may be there
		`{"recipient":"rung","status":"ready","updated_at":"` + ancient.Format(time.RFC3339Nano) + `","notified_at":"` + recent.Format(time.RFC3339Nano) + `"}` + "\n" + // as old, but rung lately: kept
		`{"recipient":"broken"` + "\n" + // malformed: kept
		stateLineOf("bob", cleanupNow.Add(-47*time.Hour)) // just inside 48h: kept
	if err := os.MkdirAll(s.MailboxDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.StatesPath(), []byte(states), 0o600); err != nil {
		t.Fatal(err)
	}

	writeMailbox(t, s, "bob",
		msgLine(t, "readold1", true, old)+ // removed
			msgLine(t, "readnew1", true, recent)+ // kept: too recent
			msgLine(t, "unreadol", false, ancient)+ // kept: unread
			`{"id":"nodate01","from":"a","to":"bob","message":"m","read_flag":true}`+"\n"+ // kept: no created_at
			msgLine(t, "zerodate", true, time.Time{})+ // kept: zero created_at
			`{"id":"broken"`+"\n"+ // kept: malformed
			msgLine(t, "readold2", true, old)) // removed
	writeMailbox(t, s, "carol", msgLine(t, "c1", true, old)+msgLine(t, "c2", true, ancient)) // emptied: removed
	writeMailbox(t, s, "empty", "")                                                          // removed
	writeMailbox(t, s, "blank", "\n  \n")                                                    // removed
	writeMailbox(t, s, "dave", `{"id":"torn","read_flag":tr`)                                // kept: torn line
	if err := s.saveCursor("carol", cursor{Off: 1, LastLen: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.saveCursor("bob", cursor{Off: 1, LastLen: 1}); err != nil {
		t.Fatal(err)
	}
	return s
}

// snapshot returns every file under root with its content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = readFile(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestCleanupDryRunEqualsRealRun(t *testing.T) {
	s := cleanupFixture(t)
	opt := CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: liveWindows}
	want := CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 4, Mailboxes: 3}

	before := snapshot(t, s.Root)
	dry := opt
	dry.DryRun = true
	got, err := s.Cleanup(dry)
	if err != nil || got != want {
		t.Fatalf("dry run = %+v, %v; want %+v", got, err, want)
	}
	if after := snapshot(t, s.Root); !reflect.DeepEqual(before, after) {
		t.Errorf("the dry run changed files:\nbefore %v\nafter  %v", before, after)
	}

	got, err = s.Cleanup(opt)
	if err != nil || got != want {
		t.Fatalf("real run = %+v, %v; want %+v (what the dry run said)", got, err, want)
	}
	names, _ := s.Mailboxes()
	if !reflect.DeepEqual(names, []string{"bob", "dave"}) {
		t.Errorf("mailboxes left: %q", names)
	}
	var ids []string
	for _, l := range lines(readFile(t, s.MailboxPath("bob"))) {
		var m Message
		if json.Unmarshal([]byte(l), &m) == nil {
			ids = append(ids, m.ID)
		} else {
			ids = append(ids, l)
		}
	}
	if want := []string{"readnew1", "unreadol", "nodate01", "zerodate", `{"id":"broken"`}; !reflect.DeepEqual(ids, want) {
		t.Errorf("bob keeps %q; want %q", ids, want)
	}
	if got := readFile(t, s.MailboxPath("dave")); got != `{"id":"torn","read_flag":tr` {
		t.Errorf("torn mailbox changed: %q", got)
	}
	for _, name := range []string{"bob", "carol"} {
		if _, err := os.Stat(s.cursorPath(name)); !os.IsNotExist(err) {
			t.Errorf("the cursor of the rewritten or removed mailbox %s is still there (%v)", name, err)
		}
	}
	var recips []string
	for _, l := range lines(readFile(t, s.StatesPath())) {
		var st State
		if json.Unmarshal([]byte(l), &st) == nil {
			recips = append(recips, st.Recipient)
		} else {
			recips = append(recips, l)
		}
	}
	if want := []string{"alice", "busy", "away", "rung", `{"recipient":"broken"`, "bob"}; !reflect.DeepEqual(recips, want) {
		t.Errorf("states left: %q; want %q", recips, want)
	}
	if fi, err := os.Stat(s.MailboxPath("bob")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten mailbox: %v, %v", fi.Mode(), err)
	}

	// Everything left is to be kept.
	got, err = s.Cleanup(opt)
	if err != nil || got != (CleanupReport{}) {
		t.Errorf("second run = %+v, %v; want nothing", got, err)
	}
	// The rewritten mailbox still works.
	if m := mustReceive(t, s, "bob"); m.ID != "unreadol" {
		t.Errorf("got %+v", m)
	}
}

func TestCleanupUnknownWindowsSkipsOffline(t *testing.T) {
	s := cleanupFixture(t)
	got, err := s.Cleanup(CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, DryRun: true})
	want := CleanupReport{StaleRecipients: 2, Messages: 4, Mailboxes: 3} // gone2 and old are stale.
	if err != nil || got != want {
		t.Errorf("Cleanup = %+v, %v; want %+v", got, err, want)
	}
	// No windows at all (known, but none) makes every entry offline.
	got, err = s.Cleanup(CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: []string{}, DryRun: true})
	if want := 8; err != nil || got.OfflineRecipients != want || got.StaleRecipients != 0 {
		t.Errorf("Cleanup with no windows = %+v, %v; want %d offline", got, err, want)
	}
}

func TestCleanupRefusesNonPositiveThresholds(t *testing.T) {
	s := cleanupFixture(t)
	before := snapshot(t, s.Root)
	for _, opt := range []CleanupOptions{
		{StaleAfter: 0, DeliveredAfter: time.Hour},
		{StaleAfter: -time.Hour, DeliveredAfter: time.Hour},
		{StaleAfter: time.Hour, DeliveredAfter: 0},
		{StaleAfter: time.Hour, DeliveredAfter: -1},
	} {
		if rep, err := s.Cleanup(opt); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("Cleanup(%+v) = %+v, %v; want an error", opt, rep, err)
		}
	}
	if after := snapshot(t, s.Root); !reflect.DeepEqual(before, after) {
		t.Error("a refused cleanup changed files")
	}
}

func TestCleanupWithoutAgentmailDir(t *testing.T) {
	s, _ := newStore(t)
	got, err := s.Cleanup(CleanupOptions{StaleAfter: time.Hour, DeliveredAfter: time.Hour, Windows: []string{"a"}})
	if err != nil || got != (CleanupReport{}) {
		t.Errorf("Cleanup = %+v, %v", got, err)
	}
	if entries, _ := os.ReadDir(s.Root); len(entries) != 0 {
		t.Errorf("cleanup created %v", entries)
	}
}

// TestCleanupSkipsLockedFiles checks that a file whose lock another process
// holds for longer than LockWait is left untouched with one warning, in a
// dry run as in a real one, and that the other files are cleaned.
func TestCleanupSkipsLockedFiles(t *testing.T) {
	for _, held := range []string{"mailbox", "states"} {
		t.Run(held, func(t *testing.T) {
			s := cleanupFixture(t)
			w := &warnings{}
			s.Warnf = w.warnf
			path := s.MailboxPath("bob")
			// bob loses two messages; the states lose three entries.
			want := CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 2, Mailboxes: 3, Skipped: 1}
			if held == "states" {
				path = s.StatesPath()
				want = CleanupReport{Messages: 4, Mailboxes: 3, Skipped: 1}
			}
			holder, err := lockedfile.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			before := readFile(t, path)
			opt := CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: liveWindows, LockWait: 100 * time.Millisecond}
			for _, dry := range []bool{true, false} {
				opt.DryRun = dry
				var got CleanupReport
				within(t, fmt.Sprintf("Cleanup (dry run %v) with a lock held", dry), func() { got, err = s.Cleanup(opt) })
				if err != nil || got != want {
					t.Errorf("Cleanup (dry run %v) = %+v, %v; want %+v", dry, got, err, want)
				}
				msgs := w.take()
				if len(msgs) != 1 || !strings.Contains(msgs[0], path+" is locked by another process: left untouched") {
					t.Errorf("Cleanup (dry run %v) warned %q; want one line about %s", dry, msgs, path)
				}
			}
			if after := readFile(t, path); after != before {
				t.Errorf("the held file changed:\nbefore %q\nafter  %q", before, after)
			}
			if _, err := os.Stat(s.MailboxPath("carol")); !os.IsNotExist(err) {
				t.Errorf("carol's mailbox, which nobody held, is still there (%v)", err)
			}
		})
	}
}

// TestCleanupNamesTheHeldLock holds recipients.lock, which a cleanup that
// writes takes before recipients.jsonl: the warning names the file whose
// lock was held, not only the one left untouched.
func TestCleanupNamesTheHeldLock(t *testing.T) {
	s := cleanupFixture(t)
	w := &warnings{}
	s.Warnf = w.warnf
	holder, err := lockedfile.OpenFile(s.statesLockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	opt := CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, LockWait: 100 * time.Millisecond}
	var got CleanupReport
	within(t, "Cleanup with recipients.lock held", func() { got, err = s.Cleanup(opt) })
	if err != nil || got.Skipped != 1 {
		t.Errorf("Cleanup = %+v, %v; want one file skipped", got, err)
	}
	want := s.statesLockPath() + " is locked by another process: " + s.StatesPath() + " left untouched"
	if msgs := w.take(); len(msgs) != 1 || !strings.Contains(msgs[0], want) {
		t.Errorf("Cleanup warned %q; want one line with %q", msgs, want)
	}
}

// TestCleanupKeepsGoingWithoutRemovingACursor checks that a read cursor
// that cannot be removed after its mailbox was rewritten (here a directory
// with a file in it) fails nothing: the cursor would be rejected anyway, so
// cleanup warns and goes on.
func TestCleanupKeepsGoingWithoutRemovingACursor(t *testing.T) {
	s := cleanupFixture(t)
	w := &warnings{}
	s.Warnf = w.warnf
	cur := s.cursorPath("bob")
	if err := os.Remove(cur); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cur, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := s.Cleanup(CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: liveWindows})
	want := CleanupReport{OfflineRecipients: 2, StaleRecipients: 1, Messages: 4, Mailboxes: 3}
	if err != nil || got != want {
		t.Errorf("Cleanup = %+v, %v; want %+v", got, err, want)
	}
	msgs := w.take()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "not removing the read cursor of "+s.MailboxPath("bob")) {
		t.Errorf("Cleanup warned %q; want one line about bob's cursor", msgs)
	}
	if strings.Contains(readFile(t, s.MailboxPath("bob")), "readold1") {
		t.Error("bob's mailbox was not cleaned")
	}
}

// TestCleanupRemovesLeftoverTempFiles checks that cleanup removes the
// temporary files of rewrites that a crash left an hour ago or more, and
// keeps a newer one, which a rewrite may still be using, a directory that
// only looks like one, and the mailboxes of agents whose names start like
// one; a dry run counts the same and removes nothing.
func TestCleanupRemovesLeftoverTempFiles(t *testing.T) {
	s := cleanupFixture(t)
	for _, name := range []string{".tmp-x", ".tmp-123"} {
		if _, err := s.Append(context.Background(), "bob", name, "unread mail of "+name); err != nil {
			t.Fatal(err)
		}
		old := cleanupNow.Add(-3 * time.Hour)
		if err := os.Chtimes(s.MailboxPath(name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	for path, age := range map[string]time.Duration{
		filepath.Join(s.Dir(), ".tmp-4002311187"):           61 * time.Minute,
		filepath.Join(s.MailboxDir(), ".tmp-17"):            3 * time.Hour,
		filepath.Join(s.MailboxDir(), ".tmp-99"):            10 * time.Minute,
		filepath.Join(s.MailboxDir(), ".tmp-1234", "x"):     3 * time.Hour,
		filepath.Join(s.MailboxDir(), ".tmp-mailbox"):       3 * time.Hour,
		filepath.Join(s.MailboxDir(), ".tmp-"):              3 * time.Hour,
		filepath.Join(s.MailboxDir(), ".tmp-12.jsonl.lock"): 3 * time.Hour,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, filepath.Dir(path)} {
			if err := os.Chtimes(p, cleanupNow.Add(-age), cleanupNow.Add(-age)); err != nil {
				t.Fatal(err)
			}
		}
	}
	opt := CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: liveWindows}
	for _, dry := range []bool{true, false} {
		opt.DryRun = dry
		got, err := s.Cleanup(opt)
		if err != nil || got.TempFiles != 2 {
			t.Fatalf("dry run %v: %+v, %v; want 2 temporary files", dry, got, err)
		}
	}
	for path, wantKept := range map[string]bool{
		filepath.Join(s.Dir(), ".tmp-4002311187"):           false,
		filepath.Join(s.MailboxDir(), ".tmp-17"):            false,
		filepath.Join(s.MailboxDir(), ".tmp-99"):            true,
		filepath.Join(s.MailboxDir(), ".tmp-1234", "x"):     true,
		filepath.Join(s.MailboxDir(), ".tmp-mailbox"):       true,
		filepath.Join(s.MailboxDir(), ".tmp-"):              true,
		filepath.Join(s.MailboxDir(), ".tmp-12.jsonl.lock"): true,
		s.MailboxPath(".tmp-x"):                             true,
		s.MailboxPath(".tmp-123"):                           true,
	} {
		if _, err := os.Stat(path); (err == nil) != wantKept {
			t.Errorf("%s: kept = %v, want %v", path, err == nil, wantKept)
		}
	}
	if got, err := s.Cleanup(opt); err != nil || got.TempFiles != 0 {
		t.Errorf("second run: %+v, %v; want no temporary files", got, err)
	}
}

// TestCleanupStateEntriesByTheirTurn checks two rules of cleanup for state
// entries. An entry of a window not listed, but updated after the
// listing, is kept: its window may have opened since. And only a name's
// first entry counts, for us and the earlier tool: later ones are removed,
// so that removing the first never leaves an old duplicate in its place.
func TestCleanupStateEntriesByTheirTurn(t *testing.T) {
	s, _ := newStore(t)
	s.Now = func() time.Time { return cleanupNow }
	listed := cleanupNow.Add(-time.Second)
	states := stateLineWith("alice", StatusReady, cleanupNow.Add(-time.Minute)) +
		stateLineWith("carol", StatusWork, cleanupNow.Add(-time.Minute)) + // gone at the listing: removed
		stateLineWith("dave", StatusWork, cleanupNow.Add(-time.Millisecond)) + // after the listing: kept
		stateLineWith("bob", StatusReady, cleanupNow.Add(-72*time.Hour)) + // stale
		stateLineWith("bob", StatusWork, cleanupNow.Add(-72*time.Hour)) + // hidden: removed with it
		stateLineWith("alice", StatusOffline, cleanupNow.Add(-time.Minute)) // hidden: removed
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.StatesPath(), []byte(states), 0o600); err != nil {
		t.Fatal(err)
	}
	opt := CleanupOptions{StaleAfter: 48 * time.Hour, DeliveredAfter: 2 * time.Hour, Windows: []string{"alice", "bob"}, WindowsListedAt: listed}
	rep, err := s.Cleanup(opt)
	if err != nil || rep.OfflineRecipients != 1 || rep.StaleRecipients != 3 {
		t.Fatalf("Cleanup = %+v, %v; want 1 offline and 3 stale", rep, err)
	}
	got, err := s.States(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range got {
		names = append(names, st.Recipient+" "+st.Status)
	}
	if want := []string{"alice ready", "dave work"}; !slices.Equal(names, want) {
		t.Errorf("entries %q after cleanup, want %q", names, want)
	}
}
