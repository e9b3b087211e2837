package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Message is one line of a mailbox.
type Message struct {
	ID       string `json:"id"`
	From     string `json:"from"`
	To       string `json:"to"`
	Message  string `json:"message"`
	ReadFlag bool   `json:"read_flag"`
	// CreatedAt is zero for lines written without created_at, and for lines
	// where the earlier tool wrote "0001-01-01T00:00:00Z" in its place.
	CreatedAt time.Time `json:"created_at"`
	// ReplyTo is the id of the message this one answers; empty for a
	// message that starts a thread.
	ReplyTo string `json:"reply_to,omitempty"`
	// ThreadID is the id of the first message of the thread, which is the
	// message's own id when it starts one. Lines written without it (older
	// mail, and the earlier tool's) are threads of one: see Thread.
	ThreadID string `json:"thread_id,omitempty"`
}

// Thread is the id of the thread m belongs to.
func (m *Message) Thread() string {
	if m.ThreadID != "" {
		return m.ThreadID
	}
	return m.ID
}

// flipTrue replaces the five bytes "false" of a read_flag value. The trailing
// space is JSON whitespace, so the line keeps its length and stays valid.
var flipTrue = []byte("true ")

// lineKind classifies a mailbox line.
type lineKind int

const (
	lineBlank lineKind = iota
	lineRead
	lineUnread
	lineMalformed
)

// classifyLine tells what a mailbox line (without its newline) holds, as
// encoding/json reads it: a line is malformed when it does not decode into a
// Message or has no boolean read_flag. For an unread line it also returns
// the decoded message and the offset of the "false" to overwrite. A line
// marked read is only decoded as far as its read_flag, so skipping read
// lines stays cheap.
func classifyLine(line []byte) (lineKind, Message, int, error) {
	if isBlank(line) {
		return lineBlank, Message{}, 0, nil
	}
	var flag struct {
		ReadFlag *bool `json:"read_flag"`
	}
	if err := json.Unmarshal(line, &flag); err != nil {
		return lineMalformed, Message{}, 0, err
	}
	if flag.ReadFlag == nil {
		return lineMalformed, Message{}, 0, errors.New("no boolean read_flag")
	}
	if *flag.ReadFlag {
		return lineRead, Message{}, 0, nil
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return lineMalformed, Message{}, 0, err
	}
	off, err := flagOffset(line)
	if err != nil {
		return lineMalformed, Message{}, 0, err
	}
	return lineUnread, m, off, nil
}

// flagOffset returns the offset of the literal false of the top-level
// read_flag member of line, a JSON object that encoding/json decodes with
// read_flag false. Keys are matched as encoding/json matches them to a
// field: unescaped, case-insensitively, the last one winning. The same text
// inside a string or a nested value is never taken for the member, so a
// receive overwrites exactly the value that encoding/json reads.
func flagOffset(line []byte) (int, error) {
	off, val := -1, ""
	err := eachMember(line, func(key string, value json.RawMessage, at int) {
		if strings.EqualFold(key, "read_flag") {
			off, val = at, string(value)
		}
	})
	if err != nil {
		return 0, err
	}
	if val != "false" {
		// Unreachable while encoding/json decoded read_flag false; refuse
		// rather than overwrite the wrong bytes.
		return 0, errors.New("read_flag not found where encoding/json reads it")
	}
	return off, nil
}

// eachMember calls fn with each top-level member of the JSON object b, in
// order: its key, unescaped, its value as written and the value's offset in
// b. The caller has decoded b with json.Unmarshal already, so it is valid
// JSON; anything but an object is an error.
func eachMember(b []byte, fn func(key string, value json.RawMessage, at int)) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		// The decoder stands just past the value, which it copied whole.
		fn(key.(string), value, int(dec.InputOffset())-len(value))
	}
	return nil
}

// isBlank reports whether b holds only JSON whitespace.
func isBlank(b []byte) bool {
	return len(bytes.Trim(b, " \t\r\n")) == 0
}
