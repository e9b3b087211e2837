package mailbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// oldMessage is the earlier tool's message type; it rewrites mailboxes by
// decoding into it and encoding every line again.
type oldMessage struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Message   string    `json:"message"`
	ReadFlag  bool      `json:"read_flag"`
	CreatedAt time.Time `json:"created_at,omitempty"`
}

// oldTool mimics the earlier tool's mark-as-read: decode every line, flip
// the first line with the id, truncate the file and write every line again,
// in place.
func oldToolMarkRead(t *testing.T, path, id string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := oldToolRewrite(f, func(msgs []oldMessage) int {
		return slices.IndexFunc(msgs, func(m oldMessage) bool { return m.ID == id })
	}); err != nil {
		t.Fatal(err)
	}
}

func appendN(t *testing.T, s *Store, name string, n int) []Message {
	t.Helper()
	var ms []Message
	for i := range n {
		ms = append(ms, mustAppend(t, s, "alice", name, fmt.Sprintf("message %d", i)))
	}
	return ms
}

func TestCursorIsSavedAndUsed(t *testing.T) {
	s, _ := newStore(t)
	ms := appendN(t, s, "bob", 5)
	mustReceive(t, s, "bob")
	mustReceive(t, s, "bob")

	content := readFile(t, s.MailboxPath("bob"))
	ls := lines(content)
	end := int64(len(ls[0]) + len(ls[1]) + 2)
	data, err := os.ReadFile(s.cursorPath("bob"))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := decodeCursor(data)
	if !ok || c.Off != end || c.LastLen != int64(len(ls[1])+1) || c.LastSum != lineSum([]byte(ls[1]+"\n")) {
		t.Fatalf("cursor %q (ok %v); want offset %d after the second line", data, ok, end)
	}
	wantUnread(t, s, "bob", 3)

	// A valid cursor is trusted: a cursor saying the first three lines are
	// done makes the fourth line the next one, even though the third is
	// unread. (Only a cursor we wrote ourselves can say that.)
	third := []byte(ls[2] + "\n")
	c3 := cursor{Ino: c.Ino, Off: end + int64(len(third)), LastLen: int64(len(third)), LastSum: lineSum(third)}
	if err := s.saveCursor("bob", c3); err != nil {
		t.Fatal(err)
	}
	if got := mustReceive(t, s, "bob"); got.ID != ms[3].ID {
		t.Errorf("with a cursor past line 3, got %q; want %q", got.Message, ms[3].Message)
	}
}

func TestCursorFallbacks(t *testing.T) {
	tests := []struct {
		name   string
		cursor func(c cursor, size int64) string
	}{
		{"garbage", func(cursor, int64) string { return "garbage\x00\xff" }},
		{"empty", func(cursor, int64) string { return "" }},
		{"truncated", func(c cursor, _ int64) string { return strings.TrimSuffix(string(c.encode()), "\n")[:30] }},
		{"beyond EOF", func(c cursor, size int64) string {
			c.Off, c.LastLen = size+100, 10
			return string(c.encode())
		}},
		{"wrong hash", func(c cursor, _ int64) string {
			c.LastSum++
			return string(c.encode())
		}},
		{"wrong length", func(c cursor, _ int64) string {
			c.LastLen--
			return string(c.encode())
		}},
		{"other inode", func(c cursor, _ int64) string {
			c.Ino++
			return string(c.encode())
		}},
		{"not at a line end", func(c cursor, _ int64) string {
			c.Off -= 3
			return string(c.encode())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newStore(t)
			ms := appendN(t, s, "bob", 4)
			path := s.MailboxPath("bob")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// A cursor that would skip the first two (unread) lines, were
			// it trusted.
			ls := lines(readFile(t, path))
			second := []byte(ls[1] + "\n")
			good := cursor{Ino: fileID(fi), Off: int64(len(ls[0]) + len(second) + 1), LastLen: int64(len(second)), LastSum: lineSum(second)}
			if err := os.MkdirAll(s.cursorDir(), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.cursorPath("bob"), []byte(tt.cursor(good, fi.Size())), 0o600); err != nil {
				t.Fatal(err)
			}
			wantUnread(t, s, "bob", 4)
			for i, want := range ms {
				if got := mustReceive(t, s, "bob"); got.ID != want.ID {
					t.Fatalf("receive %d = %q; want %q", i, got.Message, want.Message)
				}
			}
			wantNoMessage(t, s, "bob")
		})
	}
}

func TestCursorAfterOldToolRewrite(t *testing.T) {
	s, _ := newStore(t)
	ms := appendN(t, s, "bob", 6)
	mustReceive(t, s, "bob")
	mustReceive(t, s, "bob")
	path := s.MailboxPath("bob")

	// The earlier tool receives message 2 (the third) and rewrites the file
	// in place: our "true " flips become "true", every offset moves.
	oldToolMarkRead(t, path, ms[2].ID)
	wantUnread(t, s, "bob", 3)
	if got := mustReceive(t, s, "bob"); got.ID != ms[3].ID {
		t.Fatalf("after the rewrite got %q; want %q", got.Message, ms[3].Message)
	}

	// Its cleanup drops the read lines: the file shrinks below the cursor.
	var kept []string
	for _, l := range lines(readFile(t, path)) {
		if !strings.Contains(l, `"read_flag":true`) {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantUnread(t, s, "bob", 2)
	for _, want := range ms[4:] {
		if got := mustReceive(t, s, "bob"); got.ID != want.ID {
			t.Fatalf("got %q; want %q", got.Message, want.Message)
		}
	}
	wantNoMessage(t, s, "bob")
}

// TestCursorNotOnBlankLine checks that the cursor never takes a blank
// line for its fingerprint: a file rewritten in place (the same inode)
// with a line break at the same offset would match it, and the unread
// message before that offset would never be received.
func TestCursorNotOnBlankLine(t *testing.T) {
	s, _ := newStore(t)
	read := `{"id":"r1","from":"alice","to":"bob","message":"old","read_flag":true}`
	path := writeMailbox(t, s, "bob", read+"\n\n")
	wantNoMessage(t, s, "bob") // saves a cursor
	// Rewritten in place, as the earlier tool rewrites: one unread message,
	// padded so that it ends where the blank line ended.
	unread := `{"id":"u1","from":"alice","to":"bob","message":"new","read_flag":false}`
	unread = strings.Replace(unread, `"new"`, `"new`+strings.Repeat(".", len(read)+1-len(unread))+`"`, 1)
	if len(unread)+1 != len(read)+2 {
		t.Fatalf("padding: %d bytes, want %d", len(unread)+1, len(read)+2)
	}
	if err := os.WriteFile(path, []byte(unread+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantUnread(t, s, "bob", 1)
	if got := mustReceive(t, s, "bob"); got == nil || got.ID != "u1" {
		t.Fatalf("Receive = %v, want u1", got)
	}
}

func TestTornLastLine(t *testing.T) {
	s, w := newStore(t)
	ms := appendN(t, s, "bob", 2)
	path := s.MailboxPath("bob")
	torn := `{"id":"torn1234","from":"alice","to":"bob","message":"cut sh`
	appendRaw(t, path, torn)

	wantUnread(t, s, "bob", 2)
	for _, want := range ms {
		if got := mustReceive(t, s, "bob"); got.ID != want.ID {
			t.Fatalf("got %q; want %q", got.Message, want.Message)
		}
	}
	wantNoMessage(t, s, "bob")
	if c, ok := decodeCursor([]byte(readFile(t, s.cursorPath("bob")))); !ok || c.Off != int64(len(readFile(t, path))-len(torn)) {
		t.Errorf("cursor %+v moved into the torn line", c)
	}
	if msgs := w.take(); len(msgs) != 1 || !strings.Contains(msgs[0], "skipping torn last line at byte") {
		t.Errorf("warnings %q; want one about the torn line, from the receive that reached it", msgs)
	}

	// The next append ends the torn fragment first, and is delivered.
	next := mustAppend(t, s, "carol", "bob", "after the crash")
	ls := lines(readFile(t, path))
	if len(ls) != 4 || ls[2] != torn {
		t.Fatalf("file lines %q; want the torn fragment kept on a line of its own", ls)
	}
	if got := mustReceive(t, s, "bob"); got.ID != next.ID {
		t.Errorf("got %+v; want the message appended after the torn line", got)
	}
	if msgs := w.take(); len(msgs) != 1 || !strings.Contains(msgs[0], "skipping malformed line at byte") {
		t.Errorf("warnings %q; want one about the torn line", msgs)
	}
	if got := lines(readFile(t, path))[2]; got != torn {
		t.Errorf("torn line rewritten to %q", got)
	}
}

func TestMalformedLinesAreSkippedAndKept(t *testing.T) {
	s, w := newStore(t)
	good1 := mustAppend(t, s, "alice", "bob", "first")
	bad := []string{
		`{"id":"m1","from":"alice"`,
		`{"id":"m2","from":"alice","to":"bob","message":"no flag"}`,
		`{"id":"m3","from":"alice","to":"bob","message":"string flag","read_flag":"false"}`,
		`{"id":"m4","from":"alice","to":"bob","message":"null flag","read_flag":null}`,
		`["read_flag",false]`,
		`{"id":5,"from":"alice","to":"bob","message":"number id","read_flag":false}`,
		`{"id":"m6","from":"alice","to":"bob","message":"bad time","read_flag":false,"created_at":"yesterday"}`,
		`not json at all`,
	}
	path := s.MailboxPath("bob")
	appendRaw(t, path, strings.Join(bad, "\n")+"\n\n   \n")
	good2 := mustAppend(t, s, "alice", "bob", "second")
	before := readFile(t, path)

	wantUnread(t, s, "bob", 2)
	if got := mustReceive(t, s, "bob"); got.ID != good1.ID {
		t.Fatalf("got %q; want first", got.Message)
	}
	if msgs := w.take(); len(msgs) != 0 {
		t.Errorf("warnings before reaching the bad lines: %q", msgs)
	}
	if got := mustReceive(t, s, "bob"); got.ID != good2.ID {
		t.Fatalf("got %q; want second", got.Message)
	}
	if msgs := w.take(); len(msgs) != len(bad) {
		t.Errorf("got %d warnings, want one for each of the %d bad lines: %q", len(msgs), len(bad), msgs)
	} else {
		for _, m := range msgs {
			if !strings.HasPrefix(m, "skipping malformed line at byte ") || !strings.Contains(m, path) {
				t.Errorf("warning %q", m)
			}
		}
	}
	wantNoMessage(t, s, "bob")
	if msgs := w.take(); len(msgs) != 0 {
		t.Errorf("bad lines behind the cursor warned again: %q", msgs)
	}
	// A bad line after the last message is warned about once too, and
	// blank lines after it are no trouble.
	appendRaw(t, path, bad[0]+"\n\n")
	wantNoMessage(t, s, "bob")
	wantNoMessage(t, s, "bob")
	if msgs := w.take(); len(msgs) != 1 {
		t.Errorf("a bad last line: %d warnings over two receives, want 1: %q", len(msgs), msgs)
	}
	before = readFile(t, path)
	after := readFile(t, path)
	for _, b := range bad {
		if !strings.Contains(after, "\n"+b+"\n") {
			t.Errorf("malformed line %q was changed", b)
		}
	}
	if len(after) != len(before) {
		t.Errorf("file size changed from %d to %d", len(before), len(after))
	}
}

func TestDuplicateIDsDeliveredOnceEach(t *testing.T) {
	s, _ := newStore(t)
	line := `{"id":"dupdupdu","from":"alice","to":"bob","message":"twin","read_flag":false}` + "\n"
	writeMailbox(t, s, "bob", line+line+line)
	for i := range 3 {
		if got := mustReceive(t, s, "bob"); got.ID != "dupdupdu" {
			t.Fatalf("receive %d = %+v", i, got)
		}
	}
	wantNoMessage(t, s, "bob")
	// Also when the cursor is lost: the flags on disk are what counts.
	if err := os.Remove(s.cursorPath("bob")); err != nil {
		t.Fatal(err)
	}
	wantNoMessage(t, s, "bob")
	wantUnread(t, s, "bob", 0)
}

func TestReceiveSkipsReadLinesWithoutDecoding(t *testing.T) {
	s, w := newStore(t)
	// A line already marked read is skipped on its flag alone, even when
	// the rest of it would not decode.
	writeMailbox(t, s, "bob", `{"id":1,"read_flag":true}`+"\n"+`{"id":"ok","from":"a","to":"bob","message":"m","read_flag":false}`+"\n")
	if got := mustReceive(t, s, "bob"); got.ID != "ok" {
		t.Errorf("got %+v", got)
	}
	wantNoWarnings(t, w)
}

// TestUnreadHint checks that counting unread mail where no cursor file is
// valid remembers, in memory, where the unread mail starts, uses that the
// next time, and drops it when the file no longer fits it.
func TestUnreadHint(t *testing.T) {
	s, _ := newStore(t)
	var read strings.Builder
	for i := range 100 {
		fmt.Fprintf(&read, `{"id":"r%d","from":"alice","to":"bob","message":"old","read_flag":true}`+"\n", i)
	}
	unread := `{"id":"u1","from":"alice","to":"bob","message":"new","read_flag":false}` + "\n"
	path := writeMailbox(t, s, "bob", read.String()+"\n"+unread)
	for range 2 {
		if ok, err := s.HasUnread(context.Background(), "bob"); !ok || err != nil {
			t.Fatalf("HasUnread = %v, %v; want true", ok, err)
		}
	}
	if h := s.hints["bob"]; h.Off != int64(read.Len()) {
		t.Errorf("hint at %d, want %d, the end of the last read line", h.Off, read.Len())
	}
	if _, err := os.Stat(s.cursorPath("bob")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cursor file was written: %v", err)
	}
	// Rewritten in place with one unread message before the hint's offset.
	if err := os.WriteFile(path, []byte(unread+read.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	wantUnread(t, s, "bob", 1)
	if got := mustReceive(t, s, "bob"); got == nil || got.ID != "u1" {
		t.Fatalf("Receive = %v, want u1", got)
	}
}
