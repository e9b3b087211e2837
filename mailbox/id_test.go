package mailbox

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestNewIDIsUUIDv7(t *testing.T) {
	before := time.Now().UnixMilli()
	s := newID()
	after := time.Now().UnixMilli()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	if len(s) != 36 || id.String() != s {
		t.Errorf("%q is not in the canonical text form %q", s, id.String())
	}
	if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
		t.Errorf("%q: version %d, variant %v; want 7, RFC 4122", s, id.Version(), id.Variant())
	}
	// The clock may have been moved on by ids made before, in the same
	// millisecond, by at most a few steps.
	if ms := time.Unix(id.Time().UnixTime()).UnixMilli(); ms < before || ms > after+1 {
		t.Errorf("%q holds the time %d ms, want %d to %d", s, ms, before, after)
	}
}

func TestNewIDRandomBits(t *testing.T) {
	// Two ids share their time fields at most by chance; their last 62
	// bits are random, so 1,000 ids have 1,000 different tails.
	seen := map[string]bool{}
	for range 1000 {
		tail := newID()[19:]
		if seen[tail] {
			t.Fatalf("tail %s twice in 1,000 ids", tail)
		}
		seen[tail] = true
	}
}

func TestNewIDIncreases(t *testing.T) {
	// Ids made by many goroutines at once, compared as text (the hex of a
	// UUIDv7 sorts as its time fields), are all different and each
	// goroutine's are in increasing order.
	const workers, each = 8, 2000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], newID())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, list := range ids {
		for i, id := range list {
			if i > 0 && id[:18] <= list[i-1][:18] {
				t.Fatalf("%s after %s: time fields not increasing", id, list[i-1])
			}
			if seen[id] {
				t.Fatalf("%s twice", id)
			}
			seen[id] = true
		}
	}
}
