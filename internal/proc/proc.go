//go:build unix

// Package proc lets tests wait for a process that is not their child, such
// as a tmux server or a grandchild, to end.
package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Ended waits up to d for process pid to end, and reports whether it has.
// Where /proc tells, a process that has ended and that nobody has reaped
// yet (its parent was killed, say) counts as ended.
func Ended(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

func running(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// The state follows the command name in parentheses, which may
		// hold spaces or parentheses itself.
		i := bytes.LastIndexByte(b, ')')
		return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}
