package jsonrpc_test

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"agentmail/jsonrpc"
)

// tooLarge stands for an ErrFrameTooLarge result in the expectations below.
const tooLarge = "<too large>"

// readAll collects every frame, and tooLarge for each oversized line, until
// Next fails.
func readAll(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	fr := jsonrpc.NewReader(r)
	var got []string
	for {
		frame, err := fr.Next()
		switch {
		case err == nil:
			got = append(got, string(frame))
		case errors.Is(err, jsonrpc.ErrFrameTooLarge):
			got = append(got, tooLarge)
		default:
			return got, err
		}
	}
}

func TestReaderFrames(t *testing.T) {
	exact := strings.Repeat("x", jsonrpc.MaxFrame)
	over := strings.Repeat("y", jsonrpc.MaxFrame+1)
	huge := strings.Repeat("z", 200*1024)

	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"empty input", "", nil},
		{"one line", "a\n", []string{"a"}},
		{"final line without newline", "a\nb", []string{"a", "b"}},
		{"CRLF", "a\r\nb\r\n", []string{"a", "b"}},
		{"CRLF final line", "a\r\nb\r", []string{"a", "b"}},
		{"blank lines", "\n\na\n\n\nb\n\n", []string{"a", "b"}},
		{"whitespace-only lines", " \t \n\r\n \r\na\n  \t", []string{"a"}},
		{"inner whitespace kept", " a b \n", []string{" a b "}},
		{"only a newline", "\n", nil},
		{"exactly MaxFrame", exact + "\nnext\n", []string{exact, "next"}},
		{"exactly MaxFrame with CRLF", exact + "\r\nnext\r\n", []string{exact, "next"}},
		{"exactly MaxFrame at EOF", exact, []string{exact}},
		{"MaxFrame+1 then next line", over + "\nnext\n", []string{tooLarge, "next"}},
		{"MaxFrame+1 with CRLF", over + "\r\nnext\r\n", []string{tooLarge, "next"}},
		{"MaxFrame+1 at EOF", over, []string{tooLarge}},
		{"MaxFrame plus a stray CR", exact + "\r\r\nnext\n", []string{tooLarge, "next"}},
		{"200 KB then next line", huge + "\nnext\n", []string{tooLarge, "next"}},
		{"200 KB at EOF", huge, []string{tooLarge}},
		{"two oversized lines", huge + "\n" + over + "\nnext", []string{tooLarge, tooLarge, "next"}},
		{"line before and after", "first\n" + huge + "\n\nlast\n", []string{"first", tooLarge, "last"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte at a time"} {
				var r io.Reader = strings.NewReader(tt.input)
				if mode != "whole" {
					if len(tt.input) > 70000 {
						continue // slow and adds nothing the whole reads miss
					}
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(t, r)
				if err != io.EOF {
					t.Fatalf("%s: final error = %v, want io.EOF", mode, err)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s: frames = %s, want %s", mode, summary(got), summary(tt.want))
				}
			}
		})
	}
}

func TestReaderEOFIsSticky(t *testing.T) {
	// A terminal can deliver EOF and then more input; once EOF is seen the
	// reader must not go back for more.
	fr := jsonrpc.NewReader(&eofThenData{})
	for range 3 {
		if _, err := fr.Next(); err != io.EOF {
			t.Fatalf("Next = %v, want io.EOF", err)
		}
	}
}

type eofThenData struct{ calls int }

func (r *eofThenData) Read(p []byte) (int, error) {
	r.calls++
	if r.calls == 1 {
		return 0, io.EOF
	}
	return copy(p, "late\n"), nil
}

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom))
	got, err := readAll(t, r)
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want %v", err, boom)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("frames = %q, want [a b]", got)
	}
}

func TestReaderErrorInsideOversizedLine(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(strings.Repeat("x", 100000)), iotest.ErrReader(boom))
	got, err := readAll(t, r)
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want %v", err, boom)
	}
	if !slices.Equal(got, []string{tooLarge}) {
		t.Errorf("frames = %s, want [%s]", summary(got), tooLarge)
	}
}

func TestErrFrameTooLargeNamesTheLimit(t *testing.T) {
	if !strings.Contains(jsonrpc.ErrFrameTooLarge.Error(), "65536-byte") {
		t.Errorf("ErrFrameTooLarge = %q, want it to name the 65536-byte limit", jsonrpc.ErrFrameTooLarge)
	}
}

// summary abbreviates long frames so a failure stays readable.
func summary(frames []string) string {
	short := make([]string, len(frames))
	for i, f := range frames {
		if len(f) > 20 {
			f = f[:10] + "…(" + strconv.Itoa(len(f)) + " bytes)"
		}
		short[i] = f
	}
	return "[" + strings.Join(short, " ") + "]"
}
