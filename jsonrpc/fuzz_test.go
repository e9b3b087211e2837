package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReader checks the frame reader against a plain split on "\n". The
// fuzzer can also prepend pad bytes of 'a' to reach the frame limit, which
// small inputs never would, and choose how the input is cut into Reads.
func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n  \n\tc"), uint32(0), uint16(0), uint8(0))
	f.Add([]byte("\nnext\n"), uint32(MaxFrame), uint16(0), uint8(0))
	f.Add([]byte("\r\nnext"), uint32(MaxFrame), uint16(0), uint8(3))
	f.Add([]byte("\nnext\n"), uint32(MaxFrame+1), uint16(0), uint8(0))
	f.Add([]byte("\r\r\nnext"), uint32(MaxFrame-1), uint16(0), uint8(7))
	f.Add([]byte("x\ny\n"), uint32(200*1024), uint16(2), uint8(255))
	f.Add([]byte(`{"method":"m","params":{"s":""},"id":7}`+"\n"), uint32(MaxFrame), uint16(30), uint8(0))
	f.Add([]byte(`{"id":"x","params":{"s":""}}`+"\r\n{}"), uint32(MaxFrame), uint16(22), uint8(200))
	f.Add([]byte(""), uint32(0), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, pad uint32, at uint16, chunk uint8) {
		n := int(pad % (3 * MaxFrame))
		pos := int(at) % (len(data) + 1)
		stream := make([]byte, 0, len(data)+n)
		stream = append(stream, data[:pos]...)
		stream = append(stream, bytes.Repeat([]byte{'a'}, n)...)
		stream = append(stream, data[pos:]...)

		var in io.Reader = bytes.NewReader(stream)
		if chunk > 0 {
			in = &chunkReader{data: stream, n: int(chunk)}
		}
		want := referenceFrames(stream)
		r := NewReader(in)
		for i := 0; ; i++ {
			frame, err := r.Next()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("got %d frames, want %d", i, len(want))
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("frame %d: more frames than expected (err %v)", i, err)
			}
			if errors.Is(err, ErrFrameTooLarge) {
				if !want[i].tooLarge {
					t.Fatalf("frame %d: ErrFrameTooLarge, want a %d-byte frame", i, len(want[i].line))
				}
				var tl *TooLargeError
				if !errors.As(err, &tl) {
					t.Fatalf("frame %d: %T, want *TooLargeError", i, err)
				}
				checkScannedID(t, want[i].line, tl.ID)
				continue
			}
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if len(frame) > MaxFrame || bytes.IndexByte(frame, '\n') >= 0 {
				t.Fatalf("frame %d: %d bytes, newline at %d", i, len(frame), bytes.IndexByte(frame, '\n'))
			}
			if want[i].tooLarge || !bytes.Equal(frame, want[i].line) {
				t.Fatalf("frame %d: got %d bytes %.40q, want %d bytes %.40q (too large: %v)", i, len(frame), frame, len(want[i].line), want[i].line, want[i].tooLarge)
			}
		}
	})
}

// refFrame is one frame Reader should produce: a line, or the error for a
// line too large, whose id the error should carry.
type refFrame struct {
	line     []byte
	tooLarge bool
}

// referenceFrames is what Reader should produce.
func referenceFrames(b []byte) []refFrame {
	var out []refFrame
	lines := bytes.Split(b, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // nothing after the final newline
	}
	for _, l := range lines {
		l = bytes.TrimSuffix(l, []byte("\r"))
		switch {
		case len(l) > MaxFrame:
			out = append(out, refFrame{line: l, tooLarge: true})
		case len(bytes.TrimLeft(l, " \t\r")) == 0:
		default:
			out = append(out, refFrame{line: l})
		}
	}
	return out
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x","arguments":{"s":"}]"}}}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"m","params":[1,{"a":[]}]}`,
	`{"jsonrpc":"2.0","id":-1.5e3,"method":"m"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"1.0","id":5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
	`{"jsonrpc":"\u0032.0","\u0069d":"\u00e9","method":"\/m"}`,
	` { "jsonrpc" : "2.0" , "id" : 0 , "method" : "m" } `,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},1,[],"x"]`,
	`[]`,
	`{"jsonrpc":"2.0","id":1,`,
	`{}`,
	`5`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"m\"}",
}

// FuzzDecode checks that Decode never panics, agrees with encoding/json on
// what a frame holds, and that answering what it decoded yields valid JSON
// with the same id bytes.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, id, isResponse, derr := Decode(frame)
		wellFormed := json.Valid(frame) && utf8.Valid(frame)

		switch {
		case derr != nil:
			if req != nil || isResponse {
				t.Fatalf("error %v came with req %v, isResponse %v", derr, req, isResponse)
			}
			if !wellFormed {
				if derr.Code != CodeParseError || id != nil {
					t.Fatalf("malformed frame: code %d id %q, want %d and no id", derr.Code, id, CodeParseError)
				}
				return
			}
			if derr.Code != CodeInvalidRequest {
				t.Fatalf("well-formed frame: code %d, want %d", derr.Code, CodeInvalidRequest)
			}
			checkAnswer(t, id, nil, derr)
		case isResponse:
			if req != nil || id != nil {
				t.Fatalf("response came with req %v id %q", req, id)
			}
		default:
			if req == nil || !bytes.Equal(id, req.ID) {
				t.Fatalf("Decode = %v, id %q", req, id)
			}
			checkAnswer(t, req.ID, req.Params, nil)
		}
		if !wellFormed {
			return
		}

		// Cross-check single objects against encoding/json's reading.
		var m map[string]json.RawMessage
		if json.Unmarshal(frame, &m) == nil {
			want := referenceDecode(m)
			switch {
			case isResponse:
				if want != "response" {
					t.Fatalf("Decode says response, reference says %s", want)
				}
			case req != nil:
				if want != "request" {
					t.Fatalf("Decode says request, reference says %s", want)
				}
				var method string
				json.Unmarshal(m["method"], &method)
				if method != req.Method || !bytes.Equal(m["id"], req.ID) || !bytes.Equal(m["params"], req.Params) {
					t.Fatalf("Decode = {%q %q %q}, encoding/json reads {%q %q %q}", req.ID, req.Method, req.Params, m["id"], method, m["params"])
				}
			case !strings.Contains(derr.Message, "repeated"):
				// A repeated member is invisible in a map, so only other
				// rejections can be checked.
				if want != "invalid" {
					t.Fatalf("Decode says %q, reference says %s", derr.Message, want)
				}
				if id != nil && !bytes.Equal(id, m["id"]) {
					t.Fatalf("echoed id %q, message has %q", id, m["id"])
				}
			}
		}

		// Cross-check the batch splitter.
		if i := skipSpace(frame, 0); frame[i] == '[' {
			var elems []json.RawMessage
			if err := json.Unmarshal(frame, &elems); err != nil {
				t.Fatalf("encoding/json cannot read the array: %v", err)
			}
			got := splitArray(frame)
			if len(got) != len(elems) {
				t.Fatalf("splitArray found %d elements, want %d", len(got), len(elems))
			}
			for i := range got {
				if !bytes.Equal(got[i], elems[i]) {
					t.Fatalf("element %d = %q, want %q", i, got[i], elems[i])
				}
			}
		}
	})
}

// referenceDecode classifies a message read by encoding/json, following the
// JSON-RPC 2.0 rules directly.
func referenceDecode(m map[string]json.RawMessage) string {
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if !hasMethod && (hasResult || hasError) {
		return "response"
	}
	if id, ok := m["id"]; ok {
		// Only the type matters; 1e400 is a number even if no float64 holds it.
		if !strings.ContainsRune(`"-0123456789`, rune(id[0])) {
			return "invalid"
		}
	}
	var version, method string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return "invalid"
	}
	if !hasMethod || json.Unmarshal(m["method"], &method) != nil || m["method"][0] != '"' {
		return "invalid"
	}
	if p, ok := m["params"]; ok && p[0] != '{' && p[0] != '[' {
		return "invalid"
	}
	return "request"
}

// checkAnswer encodes an answer the way Conn does and checks that it is one
// line of valid JSON carrying id byte for byte.
func checkAnswer(t *testing.T, id json.RawMessage, result any, e *Error) {
	t.Helper()
	c, a := &Conn{}, newAnswer()
	if e != nil {
		c.appendError(a, id, e)
	} else {
		c.appendAnswer(a, id, result, nil)
	}
	line := a.buf.Bytes()
	if bytes.IndexByte(line, '\n') >= 0 || !json.Valid(line) || !utf8.Valid(line) {
		t.Fatalf("answer is not one line of valid JSON: %q", line)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	want := []byte(id)
	if id == nil {
		want = []byte("null")
	}
	if !bytes.Equal(m["id"], want) {
		t.Fatalf("answer id %q, want %q", m["id"], want)
	}
}

// FuzzServe feeds arbitrary input through a whole Conn and checks that every
// Write is one line of valid JSON.
func FuzzServe(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s+"\n"+s+"\r\n\n"), true)
	}
	f.Fuzz(func(t *testing.T, input []byte, batch bool) {
		var out lineChecker
		h := func(ctx context.Context, req *Request) (any, error) {
			switch req.Method {
			case "fail":
				return nil, errors.New("fail")
			case "panic":
				panic("boom")
			}
			return req.Params, nil
		}
		c := NewConn(bytes.NewReader(input), &out, h, Options{Batch: func() bool { return batch }})
		if err := c.Serve(context.Background()); err != nil {
			t.Fatal(err)
		}
		if out.err != nil {
			t.Fatal(out.err)
		}
	})
}

type lineChecker struct{ err error }

func (w *lineChecker) Write(p []byte) (int, error) {
	if w.err == nil {
		line, ok := bytes.CutSuffix(p, []byte("\n"))
		if !ok || bytes.IndexByte(line, '\n') >= 0 || !json.Valid(line) || !utf8.Valid(line) {
			w.err = errors.New("bad write: " + string(p))
		}
	}
	return len(p), nil
}

// FuzzLoneSurrogate checks that LoneSurrogate never fails on a valid JSON
// string of UTF-8 and agrees with the decoder: a string it flags decodes
// with U+FFFD, and one it passes decodes to U+FFFD only where the input
// wrote one.
func FuzzLoneSurrogate(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `"\ud83d\ude00"`, `"\\ud800"`, `"a\ud83d\u0041"`, `"\ufffd"`, `"x\udfff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		// Lines that are not UTF-8 never reach a handler (-32700).
		if len(v) < 2 || v[0] != '"' || !utf8.Valid(v) || !json.Valid(v) {
			return
		}
		lone := LoneSurrogate(v)
		s, ok := StringValue(v)
		if !ok {
			t.Fatalf("StringValue(%s) failed on a valid string", v)
		}
		if lone && !strings.Contains(s, "\ufffd") {
			t.Errorf("%s decodes to %q, without U+FFFD, but LoneSurrogate is true", v, s)
		}
		if !lone && strings.Count(s, "\ufffd") > strings.Count(strings.ToLower(string(v)), `\ufffd`)+strings.Count(string(v), "\ufffd") {
			t.Errorf("%s decodes to %q, with a U+FFFD the input did not write, but LoneSurrogate is false", v, s)
		}
	})
}
