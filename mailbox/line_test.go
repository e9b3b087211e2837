package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// parseLine decodes a complete mailbox line as a receive reads it. flagOff
// is the offset of the "false" of an unread line, 0 for a read one.
func parseLine(line []byte) (m Message, flagOff int, err error) {
	kind, m, off, err := classifyLine(line)
	switch kind {
	case lineUnread:
		return m, off, nil
	case lineRead:
		err := json.Unmarshal(line, &m)
		return m, 0, err
	case lineBlank:
		return Message{}, 0, errors.New("blank line")
	}
	return Message{}, 0, err
}

func TestClassifyLine(t *testing.T) {
	tests := []struct {
		line string
		kind lineKind
		want string // an unread line with its flag marked as "<>"
	}{
		{`{"read_flag":false}`, lineUnread, `{"read_flag":<>}`},
		{` { "read_flag" : false } `, lineUnread, ` { "read_flag" : <> } `},
		{`{"message":"\"read_flag\":true","read_flag":false}`, lineUnread, `{"message":"\"read_flag\":true","read_flag":<>}`},
		{`{"read_flag":true,"read_flag":false}`, lineUnread, `{"read_flag":true,"read_flag":<>}`},
		{`{"read_flag":true,"READ_FLAG":false}`, lineUnread, `{"read_flag":true,"READ_FLAG":<>}`},
		{`{"read\u005fflag":false}`, lineUnread, `{"read\u005fflag":<>}`},
		{`{"x":{"read_flag":true},"y":["read_flag",true],"read_flag":false}`, lineUnread, `{"x":{"read_flag":true},"y":["read_flag",true],"read_flag":<>}`},
		{`{"x":"}\\","read_flag":false}`, lineUnread, `{"x":"}\\","read_flag":<>}`},
		{`{"x":"\"read_flag\":false","read_flag":true }`, lineRead, ""},
		{`{"read_flag":false,"read_flag":true}`, lineRead, ""},
		{` `, lineBlank, ""},
		{``, lineBlank, ""},
		{`{"readflag":false}`, lineMalformed, ""},
		{`{"read_flag":"false"}`, lineMalformed, ""},
		{`{"read_flag":null}`, lineMalformed, ""},
		{`{"read_flag":false,"read_flag":null}`, lineMalformed, ""},
		{`{"read_flag":false,"read_flag":0}`, lineMalformed, ""},
		{`{"read_flag":falsey}`, lineMalformed, ""},
		{`{"read_flag":false`, lineMalformed, ""},
		{`{"read_flag":false}x`, lineMalformed, ""},
		{`{"read_flag":false,"id":7}`, lineMalformed, ""},
		{`[{"read_flag":false}]`, lineMalformed, ""},
		{`null`, lineMalformed, ""},
		{`{}`, lineMalformed, ""},
		{"\v", lineMalformed, ""},
	}
	for _, tt := range tests {
		kind, _, off, err := classifyLine([]byte(tt.line))
		if kind != tt.kind {
			t.Errorf("classifyLine(%s) = kind %d (%v); want %d", tt.line, kind, err, tt.kind)
			continue
		}
		if (err != nil) != (kind == lineMalformed) {
			t.Errorf("classifyLine(%s) = kind %d with error %v", tt.line, kind, err)
		}
		if kind == lineUnread {
			if got := tt.line[:off] + "<>" + tt.line[off+len("false"):]; got != tt.want {
				t.Errorf("classifyLine(%s) found %s; want %s", tt.line, got, tt.want)
			}
		}
	}
}

// TestReadFlagKeyFolding checks that the key whose value a receive
// overwrites is the one encoding/json reads, for every non-ASCII rune whose
// case folding reaches an ASCII letter (such as the Kelvin sign and the
// long s), in every position of the key, and for upper-case ASCII.
func TestReadFlagKeyFolding(t *testing.T) {
	const key = "read_flag"
	var runes []rune
	for r := rune('A'); r <= 'Z'; r++ {
		runes = append(runes, r)
	}
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < utf8.RuneSelf {
				runes = append(runes, r)
				break
			}
		}
	}
	if len(runes) < 26+2 {
		t.Fatalf("only %d runes to try", len(runes))
	}
	for _, r := range runes {
		for i := range len(key) {
			k := key[:i] + string(r) + key[i+1:]
			line := []byte(`{"read_flag":true,"` + k + `":false}`)
			var m Message
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			kind, _, off, err := classifyLine(line)
			switch {
			case !m.ReadFlag && (kind != lineUnread || off != len(line)-len("false}")):
				t.Errorf("key %q: encoding/json reads it, classifyLine finds kind %d at %d (%v)", k, kind, off, err)
			case m.ReadFlag && kind != lineRead:
				t.Errorf("key %q: encoding/json ignores it, classifyLine finds kind %d (%v)", k, kind, err)
			}
		}
	}
}

// FuzzParseLine checks classifyLine against encoding/json alone: what it
// delivers is what encoding/json decodes, and flipping the flag it found
// turns exactly that message read and changes nothing else.
func FuzzParseLine(f *testing.F) {
	seeds := []string{
		`{"id":"0195f0c4-0000-7000-8000-000000000000","from":"a","to":"b","message":"hi","read_flag":false,"created_at":"2026-01-01T00:00:00.123456789+05:00"}`,
		`{"id":"aB3dE6gH","from":"alice","to":"bob","message":"first \u003cunread\u003e","read_flag":false}`,
		`{"id":"x","message":"\"read_flag\":false","read_flag":true }`,
		`{"read_flag":false,"READ_FLAG":false,"Read_Flag":true}`,
		`{"read\u005fflag":false,"x":[{"read_flag":false}]}`,
		`{"id":"x","read_flag":false,"created_at":"0001-01-01T00:00:00Z","extra":{"a":[1,2,"]"]}}`,
		`{"id":"x","read_flag":null}`,
		`{"id":"x","read_flag":"false"}`,
		`{"id":"torn","message":"cut`,
		"",
		"null",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		kind, m, off, _ := classifyLine(line)
		om, unread, valid := oracleLine(line)
		switch {
		case valid && unread && kind != lineUnread:
			t.Fatalf("classifyLine(%q) = kind %d; encoding/json reads an unread message", line, kind)
		case valid && !unread && kind != lineRead:
			t.Fatalf("classifyLine(%q) = kind %d; encoding/json reads a read message", line, kind)
		case !valid && kind == lineUnread:
			t.Fatalf("classifyLine takes %q, which does not decode, for unread mail", line)
		}
		if kind != lineUnread {
			return
		}
		if m.ID != om.ID || m.From != om.From || m.To != om.To || m.Message != om.Message || !m.CreatedAt.Equal(om.CreatedAt) {
			t.Fatalf("classifyLine(%q) = %+v; encoding/json reads %+v", line, m, om)
		}
		if string(line[off:off+len("false")]) != "false" {
			t.Fatalf("offset %d of %q does not hold false", off, line)
		}
		flipped := bytes.Clone(line)
		copy(flipped[off:], flipTrue)
		if !json.Valid(flipped) {
			t.Fatalf("flipping %q gave invalid JSON %q", line, flipped)
		}
		var m2 Message
		if err := json.Unmarshal(flipped, &m2); err != nil {
			t.Fatalf("flipped line %q: %v", flipped, err)
		}
		want := m
		want.ReadFlag = true
		if !reflect.DeepEqual(m2, want) {
			t.Fatalf("flipping %q changed the message:\n got %+v\nwant %+v", line, m2, want)
		}
		if kind, _, _, err := classifyLine(flipped); kind != lineRead {
			t.Fatalf("flipped line %q is kind %d, not read: %v", flipped, kind, err)
		}
		// No other key changes, whatever its name.
		var a, b map[string]any
		if json.Unmarshal(line, &a) == nil && json.Unmarshal(flipped, &b) == nil {
			for k, v := range a {
				if !strings.EqualFold(k, "read_flag") && !reflect.DeepEqual(v, b[k]) {
					t.Fatalf("flipping %q changed key %q", line, k)
				}
			}
		}
	})
}
