package mailbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestRecent checks that Recent returns the newest messages, newest first,
// across the chunks it reads backwards, skipping malformed and torn lines,
// and that Messages returns them all, oldest first.
func TestRecent(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	// Long bodies make the file span several chunks.
	body := strings.Repeat("x", 3000)
	for i := range 60 {
		mustAppend(t, s, "alice", "bob", fmt.Sprintf("%d %s", i, body))
		if i == 55 {
			appendRaw(t, s.MailboxPath("bob"), "not json\n")
		}
	}
	mustReceive(t, s, "bob")
	appendRaw(t, s.MailboxPath("bob"), `{"id":"torn","from":"alice"`)

	for _, n := range []int{1, 5, 20, 60, 100} {
		got, err := s.Recent(ctx, "bob", n, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := min(n, 60)
		if len(got) != want {
			t.Fatalf("Recent(%d) = %d messages, want %d", n, len(got), want)
		}
		for i, m := range got {
			if !strings.HasPrefix(m.Message, fmt.Sprintf("%d ", 59-i)) {
				t.Fatalf("Recent(%d)[%d] = %.10q, want message %d", n, i, m.Message, 59-i)
			}
		}
		if n == 100 && !got[59].ReadFlag {
			t.Error("the message received first is not marked read")
		}
	}
	odd, err := s.Recent(ctx, "bob", 5, func(m *Message) bool { return m.Message[1] == ' ' && (m.Message[0]-'0')%2 == 1 })
	if err != nil || len(odd) != 5 || odd[0].Message[:2] != "9 " || odd[4].Message[:2] != "1 " {
		t.Errorf("Recent with a filter = %d messages, %v", len(odd), err)
	}
	var all []string
	if err := s.Messages(ctx, "bob", func(m *Message) bool {
		all = append(all, m.Message[:2])
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(all) != 60 || all[0] != "0 " {
		t.Errorf("Messages gave %d messages starting %q", len(all), all[0])
	}
	if got, err := s.Recent(ctx, "nobody", 20, nil); err != nil || len(got) != 0 {
		t.Errorf("Recent of a missing mailbox = %v, %v", got, err)
	}
}
