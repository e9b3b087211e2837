package mailbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestPeople(t *testing.T) {
	s := New(t.TempDir())
	if got, err := s.People(); err != nil || got != nil {
		t.Fatalf("People of a new store = %v, %v; want none", got, err)
	}
	for _, name := range []string{"human", "ann", "human"} {
		if err := s.AddPerson(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddPerson("a/b"); err == nil {
		t.Error("AddPerson(a/b) succeeded")
	}
	got, err := s.People()
	if err != nil || !slices.Equal(got, []string{"ann", "human"}) {
		t.Errorf("People = %v, %v; want [ann human]", got, err)
	}
}

// TestRecentBefore pages through a mailbox backwards: each page starts
// where the one before ended, and the pages together are the whole
// mailbox, newest first.
func TestRecentBefore(t *testing.T) {
	s := New(t.TempDir())
	ctx := context.Background()
	var want []string
	for i := range 7 {
		m, err := s.Append(ctx, "alice", "bob", string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{m.ID}, want...)
	}
	var got []string
	before := int64(-1)
	for {
		ms, offs, err := s.RecentBefore(ctx, "bob", before, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			got = append(got, m.ID)
		}
		before = offs[len(offs)-1]
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages = %v\nwant %v", got, want)
	}
	// An offset inside a line reads from the end again.
	if ms, _, _ := s.RecentBefore(ctx, "bob", 5, 1, nil); len(ms) != 1 || ms[0].ID != want[0] {
		t.Errorf("RecentBefore(5) = %v; want the newest message", ms)
	}
}

func TestWatchProject(t *testing.T) {
	s := New(t.TempDir())
	changes, stop, err := s.WatchProject()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := s.Append(context.Background(), "alice", "bob", "hi"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported for a new message")
	}
}

// TestDeliveriesOf reads the record as Deliveries does, again after lines
// are appended and after the record is replaced.
func TestDeliveriesOf(t *testing.T) {
	s := New(t.TempDir())
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.RecordDelivery(DeliveryEvent{ID: "a", To: "bob", State: Notified, At: at, By: "hook"})
	got, err := s.DeliveriesOf([]string{"a", "b"})
	if err != nil || len(got) != 1 || got["a"].NotifiedBy != "hook" {
		t.Fatalf("DeliveriesOf = %v, %v", got, err)
	}
	s.RecordDelivery(DeliveryEvent{ID: "a", To: "bob", State: Read, At: at})
	s.RecordDelivery(DeliveryEvent{ID: "b", To: "bob", State: Read, At: at})
	got, _ = s.DeliveriesOf([]string{"a", "b"})
	all, _ := s.Deliveries()
	if len(got) != 2 || got["a"] != all["a"] || got["b"] != all["b"] || got["a"].ReadAt.IsZero() {
		t.Errorf("after appends: %v, want %v", got, all)
	}
	os.Remove(filepath.Join(s.Root, dirName, deliveryFile))
	s.RecordDelivery(DeliveryEvent{ID: "c", To: "bob", State: Read, At: at})
	if got, _ := s.DeliveriesOf([]string{"a", "c"}); len(got) != 1 || got["c"].ReadAt.IsZero() {
		t.Errorf("after a new record: %v", got)
	}
}
