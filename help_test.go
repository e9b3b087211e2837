package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"agentmail/tools"
)

// TestHelpLockWait checks that the help of every command that waits for a
// held lock states the wait the code uses.
func TestHelpLockWait(t *testing.T) {
	want := fmt.Sprintf("locked for %d seconds", tools.DefaultLockWait/time.Second)
	for _, name := range []string{"send", "receive", "status", "cleanup"} {
		if help := lookup(name).help; !strings.Contains(help, want) {
			t.Errorf("help of %s does not say %q:\n%s", name, want, help)
		}
	}
}

// TestParseHours pins the decimal reading of cleanup's thresholds: 010 is
// ten hours (flag.Int read it as eight), and every other form is refused
// with the range's message.
func TestParseHours(t *testing.T) {
	for text, want := range map[string]int{"1": 1, "010": 10, "0002": 2, "1000000": maxCleanupHours} {
		if n, err := parseHours("--stale-hours", text); n != want || err != nil {
			t.Errorf("parseHours(%q) = %d, %v; want %d", text, n, err, want)
		}
	}
	for _, text := range []string{"", "0", "-1", "+5", "0x10", "1_0", "1.5", " 5", "1000001", "99999999999999999999"} {
		if n, err := parseHours("--stale-hours", text); err == nil || !strings.HasSuffix(err.Error(), "not "+text) {
			t.Errorf("parseHours(%q) = %d, %v; want the range error", text, n, err)
		}
	}
}
