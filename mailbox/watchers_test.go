package mailbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWatcherReplaced checks that a new watcher for an agent takes the
// place of the one waiting, which is told at once, and that Watching says
// whether one waits.
func TestWatcherReplaced(t *testing.T) {
	s, _ := newStore(t)
	if s.Watching("bob") {
		t.Fatal("Watching before any watcher started")
	}
	first, err := s.StartWatcher("bob")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if first.Replaced() || !s.Watching("bob") || s.Watching("alice") {
		t.Fatalf("after one start: Replaced %v, Watching bob %v, alice %v; want false, true, false",
			first.Replaced(), s.Watching("bob"), s.Watching("alice"))
	}
	data, err := os.ReadFile(s.watcherPath("bob"))
	if err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("watcher file holds %q, %v; want this PID", data, err)
	}
	if fi, err := os.Stat(s.watcherPath("bob")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("watcher file mode %v, %v; want 0600", fi.Mode(), err)
	}

	second, err := s.StartWatcher("bob")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Changes():
	case <-time.After(5 * time.Second):
		t.Fatal("the first watcher was not told of the second")
	}
	if !first.Replaced() || second.Replaced() || !s.Watching("bob") {
		t.Fatalf("after a second start: first replaced %v, second %v, Watching %v; want true, false, true",
			first.Replaced(), second.Replaced(), s.Watching("bob"))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if !s.Watching("bob") || second.Replaced() {
		t.Error("closing the replaced watcher ended the new one's place")
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Watching("bob") {
		t.Error("Watching after the last watcher closed")
	}
	entries, err := os.ReadDir(s.watchersDir())
	if err != nil || len(entries) != 1 || entries[0].Name() != "bob" {
		t.Errorf("watchers directory holds %v, %v; want bob only", entries, err)
	}

	// The file gone (with .agentmail, say) ends a watcher too.
	third, err := s.StartWatcher("bob")
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if err := os.Remove(s.watcherPath("bob")); err != nil {
		t.Fatal(err)
	}
	if !third.Replaced() {
		t.Error("a watcher whose file was removed is not replaced")
	}
}

// TestWatcherLinks checks that a link in a watcher's place is replaced,
// never written through, and that Watching does not take a lock on the
// file a link names as a waiting watcher.
func TestWatcherLinks(t *testing.T) {
	s, _ := newStore(t)
	w, err := s.StartWatcher("bob")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// carol's file is a symbolic link to bob's locked file, dave's a hard
	// link to it: neither says that a watcher waits for them.
	if err := os.Symlink(s.watcherPath("bob"), s.watcherPath("carol")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(s.watcherPath("bob"), s.watcherPath("dave")); err != nil {
		t.Fatal(err)
	}
	if s.Watching("carol") || s.Watching("dave") {
		t.Errorf("Watching through links: carol %v, dave %v; want false", s.Watching("carol"), s.Watching("dave"))
	}
	if err := os.Remove(s.watcherPath("carol")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, s.watcherPath("carol")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"carol", "dave"} {
		v, err := s.StartWatcher(name)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(s.watcherPath(name))
		if err != nil || !fi.Mode().IsRegular() || links(fi) != 1 {
			t.Errorf("%s's file after a start: %v, %v; want a regular file of one link", name, fi, err)
		}
		if !s.Watching(name) {
			t.Errorf("not Watching %s after its start", name)
		}
		v.Close()
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "keep\n" {
		t.Errorf("the file a link named holds %q, %v", data, err)
	}
	if w.Replaced() {
		t.Error("bob's watcher was replaced by another agent's start")
	}

	// A watchers directory that is a symbolic link is refused.
	s2, _ := newStore(t)
	if err := os.MkdirAll(s2.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), s2.watchersDir()); err != nil {
		t.Fatal(err)
	}
	var nd *NotDirError
	if _, err := s2.StartWatcher("bob"); !errors.As(err, &nd) {
		t.Errorf("StartWatcher through a linked directory = %v, want a *NotDirError", err)
	}
	if s2.Watching("bob") {
		t.Error("Watching through a linked directory")
	}
}
