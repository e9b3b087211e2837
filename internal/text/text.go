// Package text makes text that comes from elsewhere (another agent, a
// client, tmux, a file) safe to print as one line of a terminal or a log.
package text

import (
	"strconv"
	"strings"
	"unicode"
)

// OneLine returns s as one line that cannot pass for a line of its own nor
// make a terminal act: its lines (split at CRLF, LF or CR) are trimmed of
// surrounding space and joined with "; ", blank ones dropped, and every
// other control character is written as Go writes it in a quoted string
// (ESC as \x1b, TAB as \t, U+0085 as \u0085). Error messages, warnings and
// log lines all go through it, so one character looks the same in each.
func OneLine(s string) string {
	var b strings.Builder
	for line := range strings.Lines(strings.ReplaceAll(s, "\r\n", "\n")) {
		for part := range strings.SplitSeq(line, "\r") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			for _, r := range part {
				if unicode.IsControl(r) {
					q := strconv.QuoteRune(r)
					b.WriteString(q[1 : len(q)-1])
					continue
				}
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}
