//go:build unix

package mailman

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// tryLock tries to take an exclusive (or shared) flock on f without
// waiting. It reports false when another open file holds a conflicting lock.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}

// alive reports whether a process with this PID exists. EPERM means it
// exists but belongs to another user.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// terminate sends SIGTERM to pid.
func terminate(pid int) error {
	return syscall.Kill(pid, syscall.SIGTERM)
}

// detached returns the process attributes of a daemon: a session of its
// own, so that it outlives the terminal and the shell that started it.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// keepInheritedFromChildren marks the descriptors above 2 that this process
// was started with close-on-exec, so that a daemon it starts keeps none of
// them: a pipe of the shell's pipeline, say, would otherwise stay open for
// the daemon's whole life, and the pipeline would wait for it. Go opens its
// own files close-on-exec already.
func keepInheritedFromChildren() {
	entries, err := os.ReadDir("/dev/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
