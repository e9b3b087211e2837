package mailbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAnnounce checks that each unread message is announced once, oldest
// first, that the record keeps only the ids still unread, and that a
// record that is a symbolic link is refused, never followed.
func TestAnnounce(t *testing.T) {
	s, w := newStore(t)
	ctx := context.Background()
	ids := func(ms []Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	var sent []string
	for _, body := range []string{"one", "two"} {
		m, err := s.Append(ctx, "alice", "bob", body)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m.ID)
	}
	got, err := s.Announce(ctx, "bob", 100)
	if err != nil || !slices.Equal(ids(got), sent) {
		t.Fatalf("Announce = %v, %v; want %v", ids(got), err, sent)
	}
	if got, err := s.Announce(ctx, "bob", 100); err != nil || len(got) != 0 {
		t.Fatalf("second Announce = %v, %v; want nothing", ids(got), err)
	}

	if _, err := s.Receive(ctx, "bob", nil); err != nil {
		t.Fatal(err)
	}
	three, err := s.Append(ctx, "alice", "bob", "three")
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.Announce(ctx, "bob", 100)
	if err != nil || !slices.Equal(ids(got), []string{three.ID}) {
		t.Fatalf("Announce after a receive = %v, %v; want [%s]", ids(got), err, three.ID)
	}
	record, err := os.ReadFile(s.announcedPath("bob"))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values([]string{sent[1], three.ID}))
	if got := strings.Fields(string(record)); !slices.Equal(got, want) {
		t.Errorf("record = %q, want the unread ids %q", got, want)
	}
	if fi, err := os.Stat(s.announcedPath("bob")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode = %v, %v; want 0600", fi.Mode(), err)
	}
	wantNoWarnings(t, w)

	// A record that is a symbolic link is neither followed nor replaced.
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, s.announcedPath("carol")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "alice", "carol", "hi"); err != nil {
		t.Fatal(err)
	}
	var nr *NotRegularError
	if _, err := s.Announce(ctx, "carol", 100); !errors.As(err, &nr) {
		t.Errorf("Announce through a symbolic link = %v, want a *NotRegularError", err)
	}
	if fi, err := os.Lstat(s.announcedPath("carol")); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
}
