package tools

import (
	"testing"

	"agentmail/mailbox"
)

// foldSet answers as comparing with every name by mailbox.SameMailbox
// does, for ASCII and other names alike.
func TestFoldSet(t *testing.T) {
	names := []string{"Bob", "k", "\u212a", "straße", "É", "ǅ", "alice.2", "ſ"}
	probes := append([]string{"bob", "BOB", "K", "STRASSE", "é", "ǆ", "Ǆ", "carol", "s", "S", "Alice.2", ""}, names...)
	for i := range names {
		set := newFoldSet(0)
		for _, n := range names[:i+1] {
			set.add(n)
		}
		for _, p := range probes {
			want := false
			for _, n := range names[:i+1] {
				want = want || mailbox.SameMailbox(n, p)
			}
			if got := set.has(p); got != want {
				t.Errorf("set of %q: has(%q) = %v, want %v", names[:i+1], p, got, want)
			}
		}
	}
}
