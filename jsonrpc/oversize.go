package jsonrpc

import (
	"encoding/json"
	"io"
	"unicode/utf8"
)

// maxIDLen bounds the id that an oversized line may have echoed, in bytes
// as written. Real clients use small integers or UUIDs; a longer id is not
// kept, so that scanning a line never holds more than a few small buffers.
const maxIDLen = 256

// maxKeyLen bounds the member names kept while scanning an oversized line,
// quotes included. The longest spelling of "id", "\u0069\u0064", is 14
// bytes; a longer name cannot be it.
const maxKeyLen = 14

// idScanner reads the top-level "id" member of one line fed to it in
// pieces, without keeping the line. It exists so that an answer to a line
// longer than MaxFrame can still carry the request's id: a client matches
// answers to calls by id, and an error with id null leaves the call waiting
// for its timeout or, in some clients, ends the session. Clients commonly
// write "id" after "params", so the whole line has to be scanned.
//
// It follows only the structure of the line: strings and their escapes,
// the depth of nesting, and at depth 1 which member a value belongs to. It
// does not validate the line as JSON; a line it cannot follow to the end of
// one object has no readable id.
type idScanner struct {
	bad     bool // the line is not one object, or the id cannot be echoed
	started bool // the opening '{' was seen
	closed  bool // the top-level object ended
	depth   int  // open arrays and objects

	inString bool // inside a string
	escape   bool // the previous byte in the string was a backslash

	// At depth 1 a member name is expected after '{' and ',', and a value
	// after ':'.
	wantKey   bool
	wantValue bool
	inKey     bool   // the string being read is a top-level member name
	key       []byte // the raw name so far, up to maxKeyLen+1 bytes
	valueIsID bool   // the value after the current ':' is the id

	capturing bool   // the id's bytes are being kept
	id        []byte // the raw id, up to maxIDLen+1 bytes
	ids       int    // how many top-level "id" members were seen
}

// feed scans the next piece of the line.
func (s *idScanner) feed(b []byte) {
	for _, c := range b {
		if s.bad {
			return
		}
		s.step(c)
	}
}

func (s *idScanner) step(c byte) {
	if s.capturing && !s.inString {
		// A number ends at the first byte that cannot be part of one,
		// which is then read as usual.
		if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || '0' <= c && c <= '9' {
			s.keep(c)
			return
		}
		s.capturing = false
	}
	switch {
	case s.inString:
		s.stepString(c)
	case isSpace(c):
	case s.closed:
		s.bad = true // something follows the object
	case !s.started:
		if c != '{' {
			s.bad = true // not an object
			return
		}
		s.started, s.depth, s.wantKey = true, 1, true
	case s.depth == 1 && s.wantKey:
		s.stepKey(c)
	default:
		if s.depth == 1 && s.wantValue {
			s.startValue(c)
		}
		s.stepStructure(c)
	}
}

// stepString reads c inside a string: a member name, the id, or any other.
func (s *idScanner) stepString(c byte) {
	if s.capturing {
		s.keep(c)
	}
	if s.inKey && len(s.key) <= maxKeyLen {
		s.key = append(s.key, c)
	}
	switch {
	case s.escape:
		s.escape = false
	case c == '\\':
		s.escape = true
	case c == '"':
		s.inString = false
		s.capturing = false
		if s.inKey {
			s.inKey = false
			s.valueIsID = isIDName(s.key)
		}
	}
}

// stepKey reads the first byte after '{' or ',' at the top level: a
// member name starts, or the object ends.
func (s *idScanner) stepKey(c byte) {
	s.wantKey = false
	switch c {
	case '"':
		s.inString, s.inKey, s.key = true, true, s.key[:0]
		s.key = append(s.key, c)
	case '}':
		s.depth, s.closed = 0, true
	default:
		s.bad = true
	}
}

// startValue reads the first byte of a top-level member's value, and
// starts keeping it when the member is the id.
func (s *idScanner) startValue(c byte) {
	s.wantValue = false
	if !s.valueIsID {
		return
	}
	s.valueIsID = false
	s.ids++
	if c == '"' || c == '-' || '0' <= c && c <= '9' {
		s.capturing, s.id = true, s.id[:0]
		s.keep(c)
	} else {
		s.bad = true // an id must be a string or a number
	}
}

// stepStructure follows strings, nesting and the top level's separators.
func (s *idScanner) stepStructure(c byte) {
	switch c {
	case '"':
		s.inString = true
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
		if s.depth == 0 {
			s.closed = true
		} else if s.depth < 0 {
			s.bad = true
		}
	case ':':
		if s.depth == 1 {
			s.wantValue = true
		}
	case ',':
		if s.depth == 1 {
			s.wantKey = true
		}
	}
}

// keep adds c to the id, up to one byte more than maxIDLen so that a long
// id is known to be too long.
func (s *idScanner) keep(c byte) {
	if len(s.id) <= maxIDLen {
		s.id = append(s.id, c)
	}
}

// isIDName reports whether the raw member name, quotes included, is "id",
// however it is escaped.
func isIDName(raw []byte) bool {
	if string(raw) == `"id"` {
		return true
	}
	if len(raw) > maxKeyLen || raw[len(raw)-1] != '"' {
		return false
	}
	s, ok := StringValue(raw)
	return ok && s == "id"
}

// result returns a copy of the id to echo, or nil when the line had no
// readable id: it was not one object, it had no "id" member or more than
// one, or the id was too long or not a valid string or number.
func (s *idScanner) result() json.RawMessage {
	if s.bad || !s.closed || s.ids != 1 || len(s.id) == 0 || len(s.id) > maxIDLen {
		return nil
	}
	if !json.Valid(s.id) || !utf8.Valid(s.id) {
		return nil
	}
	return append(json.RawMessage(nil), s.id...)
}

// reset makes s ready for another line, keeping its buffers.
func (s *idScanner) reset() {
	*s = idScanner{key: s.key[:0], id: s.id[:0]}
}

// ScanID reads r to its end and returns the top-level "id" of the one JSON
// object it holds, read as an oversized line's is, without keeping the
// text: for a transport that refuses a message too large to read whole
// and still answers it with its id. nil when no id can be read.
func ScanID(r io.Reader) json.RawMessage {
	var s idScanner
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		s.feed(buf[:n])
		if err != nil {
			break
		}
	}
	return s.result()
}
