package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanID feeds line to a fresh idScanner in pieces of n bytes.
func scanID(line []byte, n int) json.RawMessage {
	var s idScanner
	for len(line) > 0 {
		k := min(n, len(line))
		s.feed(line[:k])
		line = line[k:]
	}
	return s.result()
}

func TestIDScanner(t *testing.T) {
	pad := strings.Repeat("x", 100)
	tests := []struct {
		line string
		want string // "" means no readable id
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `1`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"message":"` + pad + `"},"id":42}`, `42`},
		{`{"id":"a\"b\\","method":"m"}`, `"a\"b\\"`},
		{`{"method":"m","id":"7"}`, `"7"`},
		{` { "id" : -1.5e3 , "method" : "m" } ` + "\r\n", `-1.5e3`},
		{`{"id":9007199254740993}`, `9007199254740993`},
		{`{"\u0069d":3}`, `3`},
		{`{"\u0069\u0064":4}`, `4`},
		{`{"params":{"id":1},"id":2}`, `2`},
		{`{"params":[{"id":1}],"x":"\"id\":9"}`, ``},
		{`{"params":{"id":1}}`, ``},
		{`{"id":1,"id":2}`, ``},
		{`{"id":null}`, ``},
		{`{"id":{"x":1}}`, ``},
		{`{"id":[1]}`, ``},
		{`{"id":true}`, ``},
		{`{"id":"` + strings.Repeat("i", maxIDLen-2) + `"}`, `"` + strings.Repeat("i", maxIDLen-2) + `"`},
		{`{"id":"` + strings.Repeat("i", maxIDLen-1) + `"}`, ``},
		{`{"id":"\u00e9\ud800"}`, `"\u00e9\ud800"`},
		{"{\"id\":\"\xff\"}", ``},
		{`{"id":"a` + "\x01" + `"}`, ``},
		{`{"id":01}`, ``},
		{`{"id":-}`, ``},
		{`[{"id":1}]`, ``},
		{`"id"`, ``},
		{`{"id":1}x`, ``},
		{`{"id":1}}`, ``},
		{`{"id":1`, ``},
		{`{"id":"1`, ``},
		{`{"id":1,"params":{"s":"` + pad, ``},
		{`{1:2,"id":1}`, ``},
		{`{"id" 1,"x":5}`, ``},
		{``, ``},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 3, len(tt.line) + 1} {
			got := scanID([]byte(tt.line), n)
			if string(got) != tt.want {
				t.Errorf("%.60q in pieces of %d: got %q, want %q", tt.line, n, got, tt.want)
			}
		}
	}
}

// referenceID is the id an oversized line should have echoed, for a line
// that is valid JSON: the value of its only top-level "id" member when
// that is a string or a number of at most maxIDLen bytes in valid UTF-8.
func referenceID(line []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	n := 0
	for dec.More() {
		t, _ := dec.Token()
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil
		}
		if t == "id" {
			id = v
			n++
		}
	}
	if n != 1 || len(id) > maxIDLen || !utf8.Valid(id) {
		return nil
	}
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return id
	}
	return nil
}

// checkScannedID checks the id scanned from line: on valid JSON it is
// exactly referenceID's; on anything else it is nil or a valid id, since the
// scanner follows the structure of the line without validating it.
func checkScannedID(t *testing.T, line []byte, got json.RawMessage) {
	t.Helper()
	if json.Valid(line) {
		if want := referenceID(line); !bytes.Equal(got, want) {
			t.Fatalf("%.80q: scanned id %q, want %q", line, got, want)
		}
		return
	}
	if got == nil {
		return
	}
	if len(got) > maxIDLen || !json.Valid(got) || !utf8.Valid(got) || got[0] != '"' && got[0] != '-' && (got[0] < '0' || got[0] > '9') {
		t.Fatalf("%.80q: scanned id %q is not an id", line, got)
	}
}

// FuzzIDScanner checks the scanner against referenceID, whatever pieces
// the line arrives in.
func FuzzIDScanner(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s), uint8(0))
	}
	f.Add([]byte(`{"method":"m","params":{"a":["}",{"id":1}]},"id":"x"}`), uint8(5))
	f.Add([]byte(`{"\u0069\u0064":4,"id":5}`), uint8(2))
	f.Fuzz(func(t *testing.T, line []byte, chunk uint8) {
		whole := scanID(line, len(line)+1)
		checkScannedID(t, line, whole)
		if chunk > 0 {
			if got := scanID(line, int(chunk)); !bytes.Equal(got, whole) {
				t.Fatalf("%.80q: in pieces of %d the id is %q, whole it is %q", line, chunk, got, whole)
			}
		}
	})
}
