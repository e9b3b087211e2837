package jsonrpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Decode parses one frame that holds a single JSON object and reports one of
// three outcomes:
//
//   - a request or notification: req is non-nil and err is nil;
//   - a response from the peer (an object with "result" or "error" and no
//     "method"): isResponse is true, req and err are nil, and the frame must
//     be ignored, never answered;
//   - an invalid message: err is a *Error with CodeParseError when the frame
//     is not JSON (or not UTF-8) and CodeInvalidRequest when it is JSON but
//     not a valid request object. An array is invalid here too: batches
//     are split by Conn, which decodes each element the same way. Conn
//     answers none of these for a notification whose only fault is its
//     "params" (see decodeObject).
//
// id is the id to echo in an answer: the exact bytes received when the id was
// present and valid (a string or a number), nil otherwise, which is sent as
// null. req.ID and id never alias frame, which may be reused by the caller.
//
// Member names are matched exactly, unlike encoding/json's case-insensitive
// struct matching, and a repeated member makes the request invalid, because
// which copy wins is not something sender and receiver are guaranteed to
// agree on.
func Decode(frame []byte) (req *Request, id json.RawMessage, isResponse bool, err *Error) {
	if perr := checkJSON(frame); perr != nil {
		return nil, nil, false, perr
	}
	req = new(Request)
	id, isResponse, err = decodeObject(req, frame, false)
	if err != nil || isResponse {
		return nil, id, isResponse, err
	}
	return req, id, false, nil
}

// checkJSON reports a frame that is not one well-formed UTF-8 JSON value.
// Everything after it may assume well-formed input. UTF-8 is checked
// separately because json.Valid accepts invalid bytes in strings, and an id
// holding them would be echoed into an answer that is itself not valid
// JSON text.
func checkJSON(b []byte) *Error {
	if !json.Valid(b) {
		// encoding/json says what is wrong, as clients of other servers
		// are used to reading it.
		msg := "invalid JSON"
		if err := json.Unmarshal(b, new(json.RawMessage)); err != nil {
			msg = err.Error()
		}
		return &Error{Code: CodeParseError, Message: "Parse error: " + msg}
	}
	if !utf8.Valid(b) {
		return &Error{Code: CodeParseError, Message: "Parse error: invalid UTF-8"}
	}
	return nil
}

// Indexes of the members a message may have, used as bit positions.
const (
	memberJSONRPC = iota
	memberID
	memberMethod
	memberParams
	memberResult
	memberError
	numMembers
)

var memberNames = [numMembers]string{"jsonrpc", "id", "method", "params", "result", "error"}

// decodeObject decodes the message in b, which checkJSON has accepted, into
// req. It returns the id to echo and whether b is a response from the peer,
// as Decode describes. A notification whose only fault is its "params"
// gets errNotificationParams, with req.Method set for the log: it is a
// notification all the same, so it must not be answered.
func decodeObject(req *Request, b []byte, batch bool) (id json.RawMessage, isResponse bool, err *Error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false, invalidRequest("expected a JSON object")
	}

	var vals [numMembers][]byte
	var seen, repeated uint
	var members [8]Member
	for _, m := range AppendMembers(members[:0], b) {
		if k := memberIndex(m.Name); k >= 0 {
			bit := uint(1) << k
			repeated |= seen & bit
			seen |= bit
			vals[k] = m.Value
		}
	}
	has := func(k int) bool { return seen&(1<<k) != 0 }

	if !has(memberMethod) && (has(memberResult) || has(memberError)) {
		return nil, true, nil
	}
	var rawID []byte
	if has(memberID) {
		if repeated&(1<<memberID) != 0 {
			return nil, false, invalidRequest(`repeated member "id"`)
		}
		switch rawID = vals[memberID]; rawID[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return nil, false, invalidRequest(`"id" must be a string or a number`)
		}
	}
	if repeated != 0 {
		for k := range numMembers {
			if repeated&(1<<k) != 0 {
				return bytes.Clone(rawID), false, invalidRequest(`repeated member "` + memberNames[k] + `"`)
			}
		}
	}
	if !has(memberJSONRPC) {
		return bytes.Clone(rawID), false, invalidRequest(`missing "jsonrpc"`)
	}
	if v := vals[memberJSONRPC]; string(v) != `"2.0"` {
		if s, ok := StringValue(v); !ok || s != "2.0" {
			return bytes.Clone(rawID), false, invalidRequest(`"jsonrpc" must be "2.0"`)
		}
	}
	if !has(memberMethod) {
		return bytes.Clone(rawID), false, invalidRequest(`missing "method"`)
	}
	method, ok := StringValue(vals[memberMethod])
	if !ok {
		return bytes.Clone(rawID), false, invalidRequest(`"method" must be a string`)
	}
	params := vals[memberParams]
	if has(memberParams) && params[0] != '{' && params[0] != '[' {
		if !has(memberID) {
			req.Method = method
			return nil, false, errNotificationParams
		}
		return bytes.Clone(rawID), false, errParamsType
	}

	// Copy the id and params out of b in one allocation, since b is the
	// reader's buffer and will be overwritten by the next line.
	buf := make([]byte, len(rawID)+len(params))
	n := copy(buf, rawID)
	copy(buf[n:], params)
	if has(memberID) {
		req.ID = buf[:n:n]
	}
	if has(memberParams) {
		req.Params = buf[n:]
	}
	req.Method = method
	req.Batch = batch
	return req.ID, false, nil
}

// The errors of "params" that is neither an object nor an array: in a
// request, and in a notification, which is never answered.
var (
	errParamsType         = invalidRequest(`"params" must be an object or an array`)
	errNotificationParams = invalidRequest(`"params" must be an object or an array`)
)

// invalidRequest returns a CodeInvalidRequest error with the standard prefix.
func invalidRequest(msg string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + msg}
}

// memberIndex returns which member the name, unescaped, stands for, or -1.
// An escaped key such as "\u0069d" still names "id".
func memberIndex(name []byte) int {
	switch string(name) {
	case "jsonrpc":
		return memberJSONRPC
	case "id":
		return memberID
	case "method":
		return memberMethod
	case "params":
		return memberParams
	case "result":
		return memberResult
	case "error":
		return memberError
	}
	return -1
}

// StringValue returns the string a JSON value holds, or false when the value
// is not a string.
func StringValue(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// LoneSurrogate reports whether the JSON string v holds a \u escape of a
// UTF-16 surrogate that is not half of a pair. Such a string stands for no
// valid text: StringValue, as encoding/json does, decodes the escape as
// U+FFFD, which changes the text. v must be valid JSON.
func LoneSurrogate(v []byte) bool {
	// Most strings have no escape at all: find the first one fast.
	start := bytes.IndexByte(v, '\\')
	if start < 0 {
		return false
	}
	for i := start; i < len(v)-1; i++ {
		if v[i] != '\\' {
			continue
		}
		i++ // at the escaped character
		if v[i] != 'u' {
			continue
		}
		r := hex4(v[i+1 : i+5])
		i += 4 // at the escape's last digit
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			// A high surrogate must be followed at once by an escaped low one.
			if i+6 >= len(v) || v[i+1] != '\\' || v[i+2] != 'u' {
				return true
			}
			if lo := hex4(v[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 returns the value of four hexadecimal digits, which valid JSON
// guarantees after \u.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Member is one member of a JSON object: its name, unescaped, and its raw
// value.
type Member struct {
	Name  []byte
	Value json.RawMessage
}

// AppendMembers appends the members of the JSON object in b to ms, in order,
// repeated names included. b must be valid JSON, as the Params of every
// Request is; the names and values alias b unless a name had to be
// unescaped. Callers can pass a small array's slice to avoid allocating.
func AppendMembers(ms []Member, b []byte) []Member {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ms
	}
	for i = skipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		end := skipString(b, i)
		name := b[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if s, ok := StringValue(b[i:end]); ok {
				name = []byte(s)
			}
		}
		i = skipSpace(b, end) // at ':'
		i = skipSpace(b, i+1) // at the value
		vend := skipValue(b, i)
		ms = append(ms, Member{Name: name, Value: b[i:vend]})
		i = skipSpace(b, vend) // at ',' or '}'
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return ms
}

// LastMember returns the value of the last member named name, which is the
// one encoding/json would decode (FuzzAppendMembers checks that).
func LastMember(ms []Member, name string) (json.RawMessage, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].Name) == name {
			return ms[i].Value, true
		}
	}
	return nil, false
}

// splitArray returns the elements of the JSON array in b, which checkJSON has
// accepted.
func splitArray(b []byte) [][]byte {
	var elems [][]byte
	i := skipSpace(b, 0)
	i = skipSpace(b, i+1) // past '['
	for i < len(b) && b[i] != ']' {
		end := skipValue(b, i)
		elems = append(elems, b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return elems
}

// The scanning helpers below walk JSON that json.Valid has accepted, so they
// only find where things end; they check nothing. Each returns an index no
// greater than len(b), so slicing with it cannot panic even on bad input.

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value that starts at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default: // a number, true, false or null
		for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}
