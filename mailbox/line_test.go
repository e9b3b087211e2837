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

func TestLocateReadFlag(t *testing.T) {
	tests := []struct {
		line    string
		want    string // the line with its flag marked as "<>"; "" for an error
		wantVal bool
	}{
		{`{"read_flag":false}`, `{"read_flag":<>}`, false},
		{` { "read_flag" : true } `, ` { "read_flag" : <> } `, true},
		{`{"message":"\"read_flag\":false","read_flag":true}`, `{"message":"\"read_flag\":false","read_flag":<>}`, true},
		{`{"read_flag":false,"read_flag":true}`, `{"read_flag":false,"read_flag":<>}`, true},
		{`{"read_flag":true,"READ_FLAG":false}`, `{"read_flag":true,"READ_FLAG":<>}`, false},
		{`{"read\u005fflag":false}`, `{"read\u005fflag":<>}`, false},
		{`{"x":{"read_flag":true},"y":["read_flag",false],"read_flag":false}`, `{"x":{"read_flag":true},"y":["read_flag",false],"read_flag":<>}`, false},
		{`{"x":"}\\","read_flag":false}`, `{"x":"}\\","read_flag":<>}`, false},
		{`{"read_flag":true }`, `{"read_flag":<> }`, true},
		{`{"readflag":false}`, "", false},
		{`{"read_flag":"false"}`, "", false},
		{`{"read_flag":null}`, "", false},
		{`{"read_flag":false,"read_flag":0}`, "", false},
		{`{"read_flag":falsey}`, "", false},
		{`{"read_flag":false`, "", false},
		{`{"read_flag":false}x`, "", false},
		{`[{"read_flag":false}]`, "", false},
		{`{}`, "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		off, val, err := locateReadFlag([]byte(tt.line))
		if tt.want == "" {
			if err == nil {
				t.Errorf("locateReadFlag(%s) = %d, %v; want an error", tt.line, off, val)
			}
			continue
		}
		if err != nil {
			t.Errorf("locateReadFlag(%s): %v", tt.line, err)
			continue
		}
		n := len("false")
		if val {
			n = len("true")
		}
		if got := tt.line[:off] + "<>" + tt.line[off+n:]; got != tt.want || val != tt.wantVal {
			t.Errorf("locateReadFlag(%s) found %s (%v); want %s (%v)", tt.line, got, val, tt.want, tt.wantVal)
		}
	}
}

// TestReadFlagKeyFolding checks our key matching against encoding/json for
// every non-ASCII rune whose case folding reaches an ASCII letter (such as
// the Kelvin sign and the long s), in every position of the key, and for
// upper-case ASCII.
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
			line := []byte(`{"` + k + `":true}`)
			var m Message
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			_, val, err := locateReadFlag(line)
			if found := err == nil && val; found != m.ReadFlag {
				t.Errorf("key %q: encoding/json sets read_flag %v, locateReadFlag finds %v", k, m.ReadFlag, found)
			}
		}
	}
}

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
		off, val, lerr := locateReadFlag(line)
		kind, cm, coff, _ := classifyLine(line)
		m, flagOff, err := parseLine(line)
		if err != nil {
			if errors.Is(err, errAmbiguousFlag) {
				t.Fatalf("locateReadFlag disagrees with encoding/json on %q", line)
			}
			if kind == lineUnread {
				t.Fatalf("classifyLine takes %q, which does not decode, for unread mail", line)
			}
			return
		}
		// classifyLine may skip a read line without decoding it, but what it
		// delivers must be exactly what parseLine decodes.
		switch {
		case m.ReadFlag && kind != lineRead:
			t.Fatalf("classifyLine(%q) = kind %d, want read", line, kind)
		case !m.ReadFlag && (kind != lineUnread || coff != flagOff || cm.ID != m.ID || cm.Message != m.Message):
			t.Fatalf("classifyLine(%q) = kind %d at %d, want unread at %d", line, kind, coff, flagOff)
		}
		if lerr != nil || flagOff != off || val != m.ReadFlag {
			t.Fatalf("parseLine and locateReadFlag disagree on %q", line)
		}
		lit := "false"
		if val {
			lit = "true"
		}
		if string(line[off:off+len(lit)]) != lit {
			t.Fatalf("offset %d of %q does not hold %s", off, line, lit)
		}
		if val {
			return
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
		if _, v, err := locateReadFlag(flipped); err != nil || !v {
			t.Fatalf("flipped line %q is not read: %v", flipped, err)
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
