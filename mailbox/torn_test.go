package mailbox

import (
	"strings"
	"testing"
)

// TestWholeLineWithoutNewline covers a writer that died after writing a
// whole message line but before its newline. While it is the last line it
// is torn: never delivered, and reported. Once Append ends it, it is a
// message like any other and is delivered once, before the new one.
func TestWholeLineWithoutNewline(t *testing.T) {
	s, w := newStore(t)
	first := mustAppend(t, s, "alice", "bob", "first")
	path := s.MailboxPath("bob")
	whole := `{"id":"0195f0c4-0000-7000-8000-0000000000aa","from":"carol","to":"bob","message":"no newline","read_flag":false}`
	appendRaw(t, path, whole)

	wantUnread(t, s, "bob", 1)
	if got := mustReceive(t, s, "bob"); got.ID != first.ID {
		t.Fatalf("got %+v; want the first message", got)
	}
	wantNoMessage(t, s, "bob")
	if msgs := w.take(); len(msgs) != 1 || !strings.HasPrefix(msgs[0], "skipping torn last line at byte ") {
		t.Errorf("warnings %q; want one about the torn last line", msgs)
	}

	next := mustAppend(t, s, "alice", "bob", "next")
	if got := lines(readFile(t, path)); len(got) != 3 || got[1] != whole {
		t.Fatalf("lines %q; want the whole line ended, then the new one", got)
	}
	wantUnread(t, s, "bob", 2)
	if got := mustReceive(t, s, "bob"); got.ID != "0195f0c4-0000-7000-8000-0000000000aa" || got.Message != "no newline" {
		t.Errorf("got %+v; want the line that lacked its newline", got)
	}
	if got := mustReceive(t, s, "bob"); got.ID != next.ID {
		t.Errorf("got %+v; want the new message", got)
	}
	wantNoMessage(t, s, "bob")
	wantNoWarnings(t, w)
}
