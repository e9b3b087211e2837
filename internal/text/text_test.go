package text

import "testing"

func TestOneLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"plain, ünïcode", "plain, ünïcode"},
		{"a\nb\r\nc\rd\n", "a; b; c; d"},
		{"ends in CRLF\r\n\r\n", "ends in CRLF"},
		{"two\n\nbreaks", "two; breaks"},
		{" first\n\nsecond \n", "first; second"},
		{"a\tb\x00c\x7f", `a\tb\x00c\x7f`},
		{"we\nird\x1b[2J \u0085 end", `we; ird\x1b[2J \u0085 end`},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"bad \xff byte", "bad \ufffd byte"},
	} {
		if got := OneLine(tt.in); got != tt.want {
			t.Errorf("OneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
