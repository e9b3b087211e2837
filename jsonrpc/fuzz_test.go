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
		c := NewConn(NewLineStream(bytes.NewReader(input), &out), h, Options{Batch: func() bool { return batch }})
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
