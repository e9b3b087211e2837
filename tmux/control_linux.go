package tmux

import "syscall"

// controlAttr has the kernel send the control client SIGTERM when the
// process that started it dies, however it dies. A control client left
// behind by a killed agentmail stays attached, and when it also has output
// that nobody reads, tmux 3.3a never lets it go: kill-server then leaves
// the server running without sessions. A tmux client ends at SIGTERM
// after telling its server, so the server drops it.
//
// The signal follows the thread that started the client, not the
// process. Go ends a thread only under a goroutine that locked it and
// exits, which this program never does; and a control client ended early
// is opened again like one that detached (see Control).
func controlAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
