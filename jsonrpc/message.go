package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Request is a call, which has an id and is answered, or a notification,
// which has none and never is.
type Request struct {
	ID     json.RawMessage `json:"id,omitempty"` // the exact bytes received; nil for a notification
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"` // nil when absent
	// Batch is true when the request arrived inside a batch array.
	Batch bool `json:"-"`
}

// IsCall reports whether r has an id, and so must be answered.
func (r *Request) IsCall() bool { return r.ID != nil }

// Response answers one call: with a result, or with an error.
type Response struct {
	ID     json.RawMessage // nil is sent as null
	Result json.RawMessage // a JSON object; unused when Error is set
	Error  *Error
}

// MarshalJSON writes the response's envelope, "jsonrpc" first.
func (r *Response) MarshalJSON() ([]byte, error) {
	w := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}{"2.0", r.ID, r.Result, r.Error}
	if w.ID == nil {
		w.ID = json.RawMessage("null")
	}
	if r.Error != nil {
		w.Result = nil
	}
	return Marshal(w)
}

// Notification is a notification sent to the peer.
type Notification struct {
	Method string
	Params any // omitted when nil
}

// MarshalJSON writes the notification's envelope, "jsonrpc" first.
func (n *Notification) MarshalJSON() ([]byte, error) {
	return Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", n.Method, n.Params})
}

// Item is one message of a frame: a request or notification, or an
// invalid message and the error that answers it.
//
// When Err is set and Request is nil, Err is answered with ID (null when
// nil). When both are set, the message was a notification whose only
// fault is its params: it is never answered (JSON-RPC 2.0 §4.1), and
// Request holds its method for the log.
type Item struct {
	*Request
	Err *Error
	ID  json.RawMessage
}

// Message is what one frame holds: a single item, or the items of a batch.
// Responses from the peer are left out, since they are never answered.
type Message struct {
	Items []Item
	Batch bool
}

// Errors found in frames.
var (
	errEmptyBatch = invalidRequest("empty batch")
	errTooLarge   = invalidRequest("message exceeds the " + maxFrameText + "-byte line limit; split it into several smaller messages")
	errParams     = invalidRequest(`"params" must be an object or an array`)
)

// TooLarge is the message for a frame that exceeded MaxFrame, whose id,
// when it could be read, is id.
func TooLarge(id json.RawMessage) Message {
	return Message{Items: []Item{{Err: errTooLarge, ID: id}}}
}

// Decode parses one frame. A frame that is not JSON, or not UTF-8, is one
// item with a CodeParseError error; an array is a batch, each element
// decoded on its own; an empty array is one CodeInvalidRequest item.
//
// Member names are matched exactly, unlike encoding/json's
// case-insensitive struct matching, and a repeated member makes the
// message invalid, because which copy wins is not something sender and
// receiver are guaranteed to agree on.
func Decode(frame []byte) Message {
	if err := checkJSON(frame); err != nil {
		return Message{Items: []Item{{Err: err}}}
	}
	frame = bytes.TrimLeft(frame, " \t\r\n")
	if frame[0] != '[' {
		return oneItem(frame)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(frame, &elems); err != nil || len(elems) == 0 {
		return Message{Items: []Item{{Err: errEmptyBatch}}}
	}
	m := Message{Batch: true, Items: make([]Item, 0, len(elems))}
	for _, e := range elems {
		if it, ok := decodeItem(e); ok {
			if it.Request != nil {
				it.Request.Batch = true
			}
			m.Items = append(m.Items, it)
		}
	}
	return m
}

func oneItem(frame []byte) Message {
	it, ok := decodeItem(frame)
	if !ok {
		return Message{}
	}
	return Message{Items: []Item{it}}
}

// checkJSON reports a frame that is not one well-formed UTF-8 JSON value.
// UTF-8 is checked separately because json.Valid accepts invalid bytes in
// strings, and an id holding them would be echoed into an answer that is
// itself not valid JSON text.
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

// decodeItem decodes one message, which checkJSON has accepted. It reports
// false for a response from the peer, which is ignored.
func decodeItem(b []byte) (Item, bool) {
	ms, repeated, err := Members(b)
	if err != nil {
		return Item{Err: invalidRequest("expected a JSON object")}, true
	}
	_, hasMethod := ms["method"]
	_, hasResult := ms["result"]
	_, hasError := ms["error"]
	if !hasMethod && (hasResult || hasError) {
		return Item{}, false
	}
	id, hasID := ms["id"]
	if hasID {
		if repeated == "id" {
			return Item{Err: invalidRequest(`repeated member "id"`)}, true
		}
		if !isIDValue(id) {
			return Item{Err: invalidRequest(`"id" must be a string or a number`)}, true
		}
	}
	fail := func(e *Error) (Item, bool) { return Item{Err: e, ID: id}, true }
	if repeated != "" {
		return fail(invalidRequest(`repeated member "` + repeated + `"`))
	}
	if v, ok := ms["jsonrpc"]; !ok {
		return fail(invalidRequest(`missing "jsonrpc"`))
	} else if s, ok := StringValue(v); !ok || s != "2.0" {
		return fail(invalidRequest(`"jsonrpc" must be "2.0"`))
	}
	if !hasMethod {
		return fail(invalidRequest(`missing "method"`))
	}
	method, ok := StringValue(ms["method"])
	if !ok {
		return fail(invalidRequest(`"method" must be a string`))
	}
	req := &Request{ID: id, Method: method, Params: ms["params"]}
	if p := req.Params; p != nil && p[0] != '{' && p[0] != '[' {
		if !hasID {
			return Item{Request: req, Err: errParams}, true
		}
		return fail(errParams)
	}
	return Item{Request: req}, true
}

// isIDValue reports whether v, valid JSON, is a string or a number.
func isIDValue(v json.RawMessage) bool {
	switch v[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// ErrNotObject is returned by Members for JSON that is not an object.
var ErrNotObject = errors.New("not a JSON object")

// Members returns the members of the JSON object b, which must be valid
// JSON, by their exact, unescaped names, each value as written. repeated
// is the first name given more than once, whose last copy is kept; "" when
// there is none.
func Members(b []byte) (ms map[string]json.RawMessage, repeated string, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", ErrNotObject
	}
	ms = make(map[string]json.RawMessage, 4)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", err
		}
		if _, dup := ms[name]; dup && repeated == "" {
			repeated = name
		}
		ms[name] = v
	}
	return ms, repeated, nil
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
// valid text: encoding/json decodes the escape as U+FFFD, which changes
// the text. v must be valid JSON.
func LoneSurrogate(v []byte) bool {
	for i := bytes.IndexByte(v, '\\'); i >= 0 && i < len(v)-1; i++ {
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

// Marshal encodes v as json.Marshal does, but leaves "<", ">" and "&" as
// they are: nothing here is embedded in HTML.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encode writes v to w as one line of JSON.
func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Result encodes a handler's result, which must be a JSON object. A nil
// result, or one that encodes as null, means "nothing to say" and is {}.
// A json.RawMessage holding an object is taken as it is, unchecked: it is
// for results encoded once and kept, and the encoder validates it again
// on its way out.
func Result(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	if raw, ok := v.(json.RawMessage); ok && len(raw) > 0 && raw[0] == '{' {
		return raw, nil
	}
	b, err := Marshal(v)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the result cannot be encoded: %w", err)
	case string(b) == "null":
		return json.RawMessage("{}"), nil
	case b[0] != '{':
		return nil, errors.New("the result is not a JSON object")
	}
	return b, nil
}
