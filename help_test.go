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
