package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJSONHas checks JSON by its meaning rather than by its bytes, so that a
// script does not depend on the order in which a server writes an object's
// members: jsonhas [-count N] [-t duration] file|stdout|stderr expected.
//
// Each line of the file, or of the last command's stdout or stderr, that
// parses as JSON is compared with expected, itself JSON; lines that do not
// parse (blank lines, HTTP headers) are skipped. A line matches when it
// contains expected:
//
//   - an object contains another when it has each of its members, with a
//     value that contains the expected one; other members are allowed;
//   - an array contains another of the same length whose elements its own
//     elements contain, in order;
//   - a string written "re:PATTERN" matches any string that the regular
//     expression PATTERN matches (unanchored: write ^ and $ for a whole
//     string), so "re:^Message #[0-9a-f-]{36} sent$"; to expect a string
//     that begins with "re:" itself, write "re:^re:…";
//   - any other value matches an equal value (numbers by value, so 1 and
//     1.0 are equal; null only null, not a missing member).
//
// The command succeeds when some line matches, or, with -count N, when
// exactly N lines do. With !, it succeeds when no line matches. With -t,
// which needs a file, it waits up to that long for a match; with ! and -t,
// it checks that no line matches during the whole time.
func cmdJSONHas(ts *testscript.TestScript, neg bool, args []string) {
	count, timeout := -1, time.Duration(0)
	for len(args) > 2 && strings.HasPrefix(args[0], "-") {
		var err error
		switch args[0] {
		case "-count":
			count, err = strconv.Atoi(args[1])
		case "-t":
			timeout, err = time.ParseDuration(args[1])
		default:
			err = fmt.Errorf("unknown flag %s", args[0])
		}
		if err != nil {
			ts.Fatalf("jsonhas: %v", err)
		}
		args = args[2:]
	}
	if len(args) != 2 || (neg && count >= 0) || (timeout > 0 && (args[0] == "stdout" || args[0] == "stderr")) {
		ts.Fatalf("usage: jsonhas [-count N] [-t duration] file|stdout|stderr expected (-t needs a file; ! takes no -count)")
	}
	want, err := parseExpected(args[1])
	if err != nil {
		ts.Fatalf("jsonhas: expected %s: %v", args[1], err)
	}
	read := func() string {
		if args[0] == "stdout" || args[0] == "stderr" {
			return ts.ReadFile(args[0])
		}
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		return string(b)
	}
	deadline := time.Now().Add(timeout)
	for {
		text := read()
		n := countContaining(text, want)
		ok := n > 0
		if count >= 0 {
			ok = n == count
		}
		switch {
		case ok && neg:
			ts.Fatalf("jsonhas: %d line(s) of %s contain %s:\n%s", n, args[0], args[1], abridge(text))
		case ok:
			return
		case time.Now().After(deadline) && neg:
			return
		case time.Now().After(deadline) && count >= 0:
			ts.Fatalf("jsonhas: %d line(s) of %s contain %s, want %d:\n%s", n, args[0], args[1], count, abridge(text))
		case time.Now().After(deadline):
			ts.Fatalf("jsonhas: no line of %s contains %s:\n%s", args[0], args[1], abridge(text))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parseExpected decodes an expected value for jsonhas, with each string
// that begins with "re:" turned into its compiled regular expression.
func parseExpected(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	return compilePatterns(v)
}

func compilePatterns(v any) (any, error) {
	switch v := v.(type) {
	case string:
		if p, ok := strings.CutPrefix(v, "re:"); ok {
			return regexp.Compile(p)
		}
	case map[string]any:
		for k, e := range v {
			c, err := compilePatterns(e)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
	case []any:
		for i, e := range v {
			c, err := compilePatterns(e)
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
	}
	return v, nil
}

// countContaining is how many lines of text parse as JSON and contain want.
func countContaining(text string, want any) int {
	n := 0
	for line := range strings.SplitSeq(text, "\n") {
		var got any
		if json.Unmarshal([]byte(line), &got) == nil && jsonContains(got, want) {
			n++
		}
	}
	return n
}

// jsonContains reports whether the decoded JSON value got contains want, a
// value from parseExpected, as cmdJSONHas describes.
func jsonContains(got, want any) bool {
	switch want := want.(type) {
	case map[string]any:
		got, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok || !jsonContains(g, w) {
				return false
			}
		}
		return true
	case []any:
		got, ok := got.([]any)
		if !ok || len(got) != len(want) {
			return false
		}
		for i := range want {
			if !jsonContains(got[i], want[i]) {
				return false
			}
		}
		return true
	case *regexp.Regexp:
		got, ok := got.(string)
		return ok && want.MatchString(got)
	default:
		// Strings, numbers (float64), booleans and null compare equal.
		return got == want
	}
}

// abridge shortens long lines for a failure message: the frame tests write
// lines of hundreds of kilobytes.
func abridge(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + fmt.Sprintf("… (%d bytes)", len(l))
		}
	}
	return strings.Join(lines, "\n")
}

// TestJSONContains checks the matching that jsonhas does, on the shapes the
// scripts use: JSON-RPC answers with members in any order.
func TestJSONContains(t *testing.T) {
	for _, tt := range []struct {
		got, want string
		match     bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"id":1,"result":{}}`, true},
		{`{"result":{},"id":1,"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`, true},
		{`{"id":1,"result":{}}`, `{"id":2,"result":{}}`, false},
		{`{"id":1,"result":{}}`, `{"id":"1"}`, false},
		{`{"id":1.0}`, `{"id":1}`, true},
		{`{"id":1,"result":{}}`, `{"id":1,"error":{}}`, false},
		{`{"id":null,"error":{"code":-32700}}`, `{"id":null}`, true},
		{`{"error":{"code":-32700}}`, `{"id":null}`, false},
		{`{"id":1,"result":{"isError":true}}`, `{"result":{"isError":false}}`, false},
		{`{"id":1,"result":{"tools":[{"name":"send"}]}}`, `{"result":{}}`, true},
		{`{"id":1,"result":"x"}`, `{"result":{}}`, false},
		// Arrays: the same length, each element containing the one expected.
		{`{"content":[{"type":"text","text":"hi"}]}`, `{"content":[{"text":"hi"}]}`, true},
		{`{"content":[{"text":"hi"},{"text":"ho"}]}`, `{"content":[{"text":"hi"}]}`, false},
		{`{"content":[{"text":"hi"},{"text":"ho"}]}`, `{"content":[{"text":"ho"},{"text":"hi"}]}`, false},
		{`{"content":[]}`, `{"content":[]}`, true},
		{`[{"id":"a"},{"id":"b","x":1}]`, `[{"id":"a"},{"id":"b"}]`, true},
		// Strings written re: are regular expressions, unanchored.
		{`{"text":"Message #0195f0c4-0000-7000-8000-000000000001 sent"}`, `{"text":"re:^Message #[0-9a-f-]{36} sent$"}`, true},
		{`{"text":"Message #0195 sent"}`, `{"text":"re:^Message #[0-9a-f-]{36} sent$"}`, false},
		{`{"message":"Invalid params: unknown tool \"mailman\""}`, `{"message":"re:unknown tool \"mailman\"$"}`, true},
		{`{"text":7}`, `{"text":"re:7"}`, false},
		{`{"text":"re:x"}`, `{"text":"re:^re:x$"}`, true},
		{`{"a":"re:x"}`, `{"a":"re:^x"}`, false},
	} {
		var got any
		if err := json.Unmarshal([]byte(tt.got), &got); err != nil {
			t.Fatal(err)
		}
		want, err := parseExpected(tt.want)
		if err != nil {
			t.Fatal(err)
		}
		if m := jsonContains(got, want); m != tt.match {
			t.Errorf("%s contains %s: %v, want %v", tt.got, tt.want, m, tt.match)
		}
	}
}

// TestCountContaining checks that jsonhas reads lines, skipping those that
// are not JSON, as the headers the http command prints before a body.
func TestCountContaining(t *testing.T) {
	text := "HTTP 200\nContent-Type: application/json\n\n" +
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n" +
		`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,` + "\n"
	for want, n := range map[string]int{
		`{"jsonrpc":"2.0"}`: 2,
		`{"id":1}`:          1,
		`{"id":3}`:          0,
	} {
		w, err := parseExpected(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := countContaining(text, w); got != n {
			t.Errorf("countContaining(%s) = %d, want %d", want, got, n)
		}
	}
	if _, err := parseExpected(`{"text":"re:("}`); err == nil {
		t.Errorf("parseExpected accepted a bad regular expression")
	}
}
