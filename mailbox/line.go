package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
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
}

// errAmbiguousFlag reports a line where our scanner and encoding/json
// disagree on the read_flag value; FuzzParseLine checks it never happens.
var errAmbiguousFlag = errors.New("ambiguous read_flag")

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

// classifyLine tells what a mailbox line (without its newline) holds. For an
// unread line it also returns the decoded message and the offset of the
// "false" to overwrite. A line marked read is recognised by its read_flag
// alone and is not decoded, so skipping read lines stays cheap.
func classifyLine(line []byte) (lineKind, Message, int, error) {
	if isBlank(line) {
		return lineBlank, Message{}, 0, nil
	}
	off, read, err := locateReadFlag(line)
	if err != nil {
		return lineMalformed, Message{}, 0, err
	}
	if read {
		return lineRead, Message{}, 0, nil
	}
	m, err := decodeLine(line, false)
	if err != nil {
		return lineMalformed, Message{}, 0, err
	}
	return lineUnread, m, off, nil
}

// parseLine decodes a mailbox line with encoding/json, exactly as the earlier
// tool does, and locates its top-level read_flag value. It returns the offset
// of that value's literal ("true" or "false"), which agrees with m.ReadFlag.
// A line that does not decode, or whose read_flag is missing or not a
// boolean, is an error.
func parseLine(line []byte) (m Message, flagOff int, err error) {
	off, read, err := locateReadFlag(line)
	if err != nil {
		return Message{}, 0, err
	}
	m, err = decodeLine(line, read)
	return m, off, err
}

// decodeLine decodes a mailbox line whose read_flag locateReadFlag found to
// be read, the value encoding/json must find too.
func decodeLine(line []byte, read bool) (m Message, err error) {
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, err
	}
	if m.ReadFlag != read {
		// Unreachable when locateReadFlag follows encoding/json's key
		// matching; refuse rather than flip the wrong bytes.
		return Message{}, errAmbiguousFlag
	}
	return m, nil
}

// locateReadFlag finds the value of the top-level read_flag key of the JSON
// object in b and returns its offset and whether it is true. Keys are
// matched like encoding/json matches them to a struct field: after
// unescaping, case-insensitively, and the last matching key wins. Strings
// and nested values are skipped whole, so the same text inside a message
// body is never mistaken for the key. The scanner is lenient about JSON it
// does not need to understand; callers that deliver a message also decode
// the line with encoding/json.
func locateReadFlag(b []byte) (off int, val bool, err error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, false, errors.New("not a JSON object")
	}
	i = skipSpace(b, i+1)
	off = -1
	nonBool := false
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, false, fmt.Errorf("expected a key at offset %d", i)
			}
			keyEnd, err := skipString(b, i)
			if err != nil {
				return 0, false, err
			}
			key := b[i:keyEnd]
			i = skipSpace(b, keyEnd)
			if i >= len(b) || b[i] != ':' {
				return 0, false, fmt.Errorf("expected ':' at offset %d", i)
			}
			i = skipSpace(b, i+1)
			valEnd, err := skipValue(b, i)
			if err != nil {
				return 0, false, err
			}
			if isReadFlagKey(key) {
				switch string(b[i:valEnd]) {
				case "true":
					off, val, nonBool = i, true, false
				case "false":
					off, val, nonBool = i, false, false
				default:
					off, nonBool = -1, true
				}
			}
			i = skipSpace(b, valEnd)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return 0, false, fmt.Errorf("expected ',' or '}' at offset %d", i)
		}
	}
	if skipSpace(b, i) != len(b) {
		return 0, false, fmt.Errorf("unexpected data after the object at offset %d", i)
	}
	if nonBool {
		return 0, false, errors.New("read_flag is not a boolean")
	}
	if off < 0 {
		return 0, false, errors.New("no read_flag key")
	}
	return off, val, nil
}

// isReadFlagKey reports whether the quoted JSON string key names read_flag
// for encoding/json, which unescapes keys and falls back to a
// case-insensitive (Unicode simple folding) match.
func isReadFlagKey(quoted []byte) bool {
	inner := quoted[1 : len(quoted)-1]
	if len(inner) == len("read_flag") && string(inner) == "read_flag" {
		return true
	}
	for _, c := range inner {
		if c == '\\' {
			var s string
			if json.Unmarshal(quoted, &s) != nil {
				return false
			}
			return strings.EqualFold(s, "read_flag")
		}
	}
	return strings.EqualFold(string(inner), "read_flag")
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the JSON string starting at b[i].
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

// skipValue returns the index just past the JSON value starting at b[i].
// Objects and arrays are skipped by bracket depth, minding strings; scalars
// run to the next delimiter.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("missing value")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("unterminated object or array")
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n', '"', '{', '[', ':':
			if j == i {
				return 0, fmt.Errorf("unexpected %q at offset %d", b[j], j)
			}
			return j, nil
		}
		j++
	}
	if j == i {
		return 0, errors.New("missing value")
	}
	return j, nil
}

// isBlank reports whether b holds only JSON whitespace.
func isBlank(b []byte) bool {
	return skipSpace(b, 0) == len(b)
}
