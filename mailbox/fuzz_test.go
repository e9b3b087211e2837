package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// oracleMessage decodes a line the way encoding/json sees it, with a
// pointer for read_flag so that a missing or null flag shows as nil.
type oracleMessage struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Message   string    `json:"message"`
	ReadFlag  *bool     `json:"read_flag"`
	CreatedAt time.Time `json:"created_at"`
}

// oracleLine tells, by encoding/json alone, whether a complete line (without
// its newline) is an unread message that a receive must deliver, or a valid
// message line of any kind.
func oracleLine(line []byte) (m oracleMessage, unread, valid bool) {
	if isBlank(line) || json.Unmarshal(line, &m) != nil || m.ReadFlag == nil {
		return m, false, false
	}
	return m, !*m.ReadFlag, true
}

// FuzzReceive writes arbitrary bytes as a mailbox and receives until
// nothing is left. The expectations come from encoding/json alone, not
// from the code that Receive uses to classify lines:
//
//   - the messages delivered are exactly the complete lines (ending with a
//     newline) that encoding/json decodes with read_flag false, in file
//     order, each once, even with duplicated ids; a last line without
//     newline is never delivered;
//   - Unread counts them beforehand and finds none afterwards, and a receive
//     without the cursor finds none either;
//   - the file keeps its length, and each delivered line differs only by
//     "false" becoming "true " and then decodes to the same message, read;
//     every other byte is unchanged;
//   - a line that decodes to a message with a boolean read_flag draws no
//     warning, and a torn last line draws exactly one when the scan reaches
//     it.
func FuzzReceive(f *testing.F) {
	msg := func(id, body string, read bool) string {
		b, _ := json.Marshal(Message{ID: id, From: "alice", To: "bob", Message: body, ReadFlag: read,
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)})
		return string(b) + "\n"
	}
	seeds := []string{
		"",
		"\n\n  \n",
		msg("a", "one", false) + msg("b", "two", true) + msg("c", "three", false),
		msg("dupdupdu", "twin", false) + msg("dupdupdu", "twin", false) + msg("dupdupdu", "twin", true),
		msg("a", "one", false) + `{"id":"torn","from":"alice","message":"cut sh`,
		msg("a", "one", false) + `{"id":"b","read_flag":false}`,
		msg("a", "one", false) + "not json\n" + `{"id":"m","read_flag":null}` + "\n" + msg("b", "two", false),
		`{"id":"x","message":"\"read_flag\":false","read_flag":false,"READ_FLAG":true}` + "\n",
		`{"id":"x","read_flag":true,"Read_Flag":false,"x":{"read_flag":true}}` + "\r\n",
		`{"id":"aB3dE6gH","from":"alice","to":"bob","message":"\u003cold\u003e","read_flag":false}` + "\n",
		`{"id":"x","read_flag":false,"created_at":"0001-01-01T00:00:00Z","priority":"high"}` + "\n",
		`{"id":1,"read_flag":true}` + "\n" + `{"id":1,"read_flag":false}` + "\n",
		msg("long", strings.Repeat("y", 20<<10), false) + msg("after", "short", false),
		"{}\n[]\nnull\n" + msg("z", "last", false),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, w := newStore(t)
		path := writeMailbox(t, s, "bob", string(data))

		// What encoding/json says about each line.
		type want struct {
			m       oracleMessage
			off     int // of the line
			content []byte
		}
		var unread []want
		var badLines int
		tornTail := false
		for off, rest := 0, data; len(rest) > 0; {
			line, after, complete := bytes.Cut(rest, []byte("\n"))
			if !complete {
				tornTail = !isBlank(line)
				break
			}
			m, isUnread, valid := oracleLine(line)
			switch {
			case isUnread:
				unread = append(unread, want{m: m, off: off, content: line})
			case !valid && !isBlank(line):
				badLines++
			}
			off += len(line) + 1
			rest = after
		}

		wantUnread(t, s, "bob", len(unread))
		w.take()
		for i, u := range unread {
			got, err := s.Receive(context.Background(), "bob", nil)
			if err != nil || got == nil {
				t.Fatalf("receive %d of %d = %+v, %v", i+1, len(unread), got, err)
			}
			if got.ID != u.m.ID || got.From != u.m.From || got.To != u.m.To || got.Message != u.m.Message ||
				!got.CreatedAt.Equal(u.m.CreatedAt) || !got.ReadFlag {
				t.Fatalf("receive %d = %+v; want the line %q", i+1, *got, u.content)
			}
		}
		wantNoMessage(t, s, "bob")
		var torn, malformed int
		for _, msg := range w.take() {
			switch {
			case strings.HasPrefix(msg, "skipping torn last line at byte "):
				torn++
			case strings.HasPrefix(msg, "skipping malformed line at byte "):
				malformed++
			default:
				t.Errorf("unexpected warning %q", msg)
			}
		}
		if wantTorn := map[bool]int{true: 1}[tornTail]; torn != wantTorn {
			t.Errorf("%d warnings about a torn last line; want %d", torn, wantTorn)
		}
		if malformed > badLines {
			t.Errorf("%d warnings about malformed lines, but only %d lines fail to decode", malformed, badLines)
		}

		after := []byte(readFile(t, path))
		if len(after) != len(data) {
			t.Fatalf("the file went from %d to %d bytes", len(data), len(after))
		}
		expect := bytes.Clone(data)
		for _, u := range unread {
			got := after[u.off : u.off+len(u.content)]
			i := 0
			for i < len(got) && got[i] == u.content[i] {
				i++
			}
			if i+5 > len(got) || string(u.content[i:i+5]) != "false" || string(got[i:i+5]) != string(flipTrue) {
				t.Fatalf("line %q became %q; want one false flipped to %q", u.content, got, flipTrue)
			}
			m, isUnread, valid := oracleLine(got)
			if !valid || isUnread || m.ID != u.m.ID || m.Message != u.m.Message || !m.CreatedAt.Equal(u.m.CreatedAt) {
				t.Fatalf("flipped line %q does not decode as the same message, read", got)
			}
			copy(expect[u.off+i:], flipTrue)
		}
		if !bytes.Equal(after, expect) {
			t.Fatalf("bytes other than the flipped flags changed:\nbefore %q\nafter  %q", data, after)
		}

		// The flags on disk are the truth: without the cursor, a full scan
		// finds nothing either.
		if err := s.removeCursor("bob"); err != nil {
			t.Fatal(err)
		}
		wantNoMessage(t, s, "bob")
		wantUnread(t, s, "bob", 0)
	})
}
