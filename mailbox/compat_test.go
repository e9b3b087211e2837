package mailbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oldState is the earlier tool's recipients.jsonl entry.
type oldState struct {
	Recipient  string    `json:"recipient"`
	Status     string    `json:"status"`
	UpdatedAt  time.Time `json:"updated_at"`
	NotifiedAt time.Time `json:"notified_at,omitempty"`
	LastReadAt int64     `json:"last_read_at,omitempty"`
}

// installFixture copies a file of testdata into the store.
func installFixture(t *testing.T, fixture, dst string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestOldToolMailbox(t *testing.T) {
	s, w := newStore(t)
	path := s.MailboxPath("bob")
	orig := installFixture(t, "old-mailbox-bob.jsonl", path)

	wantUnread(t, s, "bob", 4)
	want := []Message{
		{ID: "Xy9Zk2Lm", From: "alice", To: "bob", Message: "first <unread> & legacy, no created_at"},
		{ID: "Qw8Er7Ty", From: "carol", To: "bob", Message: "zero time written by a rewrite\nsecond line"},
		{ID: "Pq1Rs2Tu", From: "alice", To: "bob", Message: "local offset and an unknown key",
			CreatedAt: time.Date(2026, 11, 21, 21, 31, 9, 725466693, time.UTC)},
		{ID: "Zz0Yy9Xx", From: "", To: "bob", Message: `empty sender, "read_flag":false inside`,
			CreatedAt: time.Date(2026, 11, 21, 21, 26, 23, 116269185, time.UTC)},
	}
	wantDelivered(t, s, "bob", want)
	wantNoWarnings(t, w)

	// Only the flags changed, byte for byte, and the earlier tool still
	// reads every line.
	after := readFile(t, path)
	if strings.Replace(after, `"read_flag":true `, `"read_flag":false`, -1) != orig {
		t.Errorf("file changed beyond the flags:\n%s", after)
	}
	for i, l := range lines(after) {
		var m oldMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil || !m.ReadFlag {
			t.Errorf("line %d no longer reads as a read message: %v", i, err)
		}
	}
	if !strings.Contains(after, `"priority":"high"`) {
		t.Error("an unknown key was lost")
	}

	// New messages land after the old ones, in our format.
	mustAppend(t, s, "alice", "bob", "new")
	if got := mustReceive(t, s, "bob"); got.Message != "new" {
		t.Errorf("got %q", got.Message)
	}
}

func TestOldToolStates(t *testing.T) {
	s, w := newStore(t)
	path := s.StatesPath()
	orig := lines(installFixture(t, "old-recipients.jsonl", path))

	states, err := s.States(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 {
		t.Fatalf("States() = %+v; want 3 entries", states)
	}
	a := states[0]
	if a.Recipient != "agent2" || a.Status != "ready" || a.LastReadAt != 1795296384732 || !a.NotifiedAt.IsZero() ||
		!a.UpdatedAt.Equal(time.Date(2026, 11, 21, 21, 26, 24, 732505896, time.UTC)) || a.Pane != "" {
		t.Errorf("agent2 = %+v", a)
	}
	if b := states[1]; b.Recipient != "bob" || !b.NotifiedAt.Equal(time.Date(2026, 11, 21, 21, 27, 0, 5e8, time.UTC)) {
		t.Errorf("bob = %+v", b)
	}

	if err := s.SetStatus(context.Background(), "bob", "work", "%7"); err != nil {
		t.Fatal(err)
	}
	got := lines(readFile(t, path))
	if len(got) != 3 || got[0] != orig[0] || got[2] != orig[2] {
		t.Errorf("other entries changed:\n%s", strings.Join(got, "\n"))
	}
	for _, key := range []string{`"notified":false`, `"x_tool":{"a":[1,2],"b":"\u003cx\u003e"}`, `"pane":"%7"`, `"status":"work"`, `"notified_at":"0001-01-01T00:00:00Z"`} {
		if !strings.Contains(got[1], key) {
			t.Errorf("rewritten entry %s lacks %s", got[1], key)
		}
	}
	if !strings.HasPrefix(got[1], `{"recipient":"bob","status":"work","updated_at":"`) {
		t.Errorf("key order: %s", got[1])
	}
	for i, l := range got {
		var st oldState
		if err := json.Unmarshal([]byte(l), &st); err != nil {
			t.Errorf("line %d does not decode for the earlier tool: %v", i, err)
		}
	}
	wantNoWarnings(t, w)
}
