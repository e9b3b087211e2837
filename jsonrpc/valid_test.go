package jsonrpc

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

var validSeeds = []string{
	`{}`, `[]`, ` {"a" : [1, -2.5e+3, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"]} `,
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `"\ud83d\ude00"`, `0`, `-0`, `1E5`, `1e-0`,
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `01`, `-`, `1.`,
	`.5`, `+1`, `1e`, `1e+`, `tru`, `truex`, `nul`, `"abc`, `"a` + "\x01" + `"`, `"\x"`, `"\u12"`,
	`"\u12g4"`, "\"\xff\"", `{"a":1}}`, `[[]`, `[]]`, `{}{}`, `[1]x`, "\t[\r\n1\n]\t", `[-]`,
	`{"a":1 "b":2}`, `[,1]`, `{,}`, `NaN`, `Infinity`, `"\'"`, "\u00a0{}",
}

func TestValid(t *testing.T) {
	for _, s := range validSeeds {
		if got, want := valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	}
	// Nesting: encoding/json's limit, and just past it.
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closing := map[string]string{"[": "]", `{"a":`: "}"}[open]
			s := strings.Repeat(open, depth) + "1" + strings.Repeat(closing, depth)
			if got, want := valid([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Errorf("valid(%s…, depth %d) = %v, json.Valid says %v", open, depth, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Errorf("valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

// BenchmarkValid compares valid with json.Valid on a tools/call request.
func BenchmarkValid(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob","message":"Tests pass on main: 1,204 passed, 0 failed \u2014 see CI run #318"},"_meta":{"progressToken":7}}}`)
	for _, fn := range []struct {
		name  string
		valid func([]byte) bool
	}{{"valid", valid}, {"json.Valid", json.Valid}} {
		b.Run(fn.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if !fn.valid(line) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// TestMaxFrameText checks the decimal MaxFrame that constant error texts use.
func TestMaxFrameText(t *testing.T) {
	if want := strconv.Itoa(MaxFrame); maxFrameText != want {
		t.Errorf("maxFrameText = %q, MaxFrame is %s", maxFrameText, want)
	}
}
