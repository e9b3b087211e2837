package tools

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// levenshtein is the full table, for checking distanceAtMost.
func levenshtein(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestDistanceAtMost checks the banded distance against the full table on
// short strings of a small alphabet, where every kind of edit turns up.
func TestDistanceAtMost(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() []rune {
		w := make([]rune, r.IntN(8))
		for i := range w {
			w[i] = rune('a' + r.IntN(3))
		}
		return w
	}
	for range 50000 {
		a, b := word(), word()
		for limit := range 4 {
			want := min(levenshtein(a, b), limit+1)
			if got := distanceAtMost(a, b, limit); got != want {
				t.Fatalf("distanceAtMost(%q, %q, %d) = %d, want %d", string(a), string(b), limit, got, want)
			}
		}
	}
}

// TestClosestLongNames checks suggestions for long names: a typo in a
// name of 60,000 characters is still found, and nothing is suggested for
// a name far from every window's.
func TestClosestLongNames(t *testing.T) {
	long := strings.Repeat("agent", 12000)
	typo := long[:30000] + "x" + long[30001:]
	if got := closest(typo, []string{"alice", long}); got != long {
		t.Errorf("closest(a typo of a long name) = %.20q…, want the long name", got)
	}
	if got := closest(strings.Repeat("z", 64000), []string{"alice", long, strings.Repeat("y", 240)}); got != "" {
		t.Errorf("closest(a name like none) = %.20q…, want none", got)
	}
}
