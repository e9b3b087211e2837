package tmux

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentmail/internal/proc"
)

// fakeControlTmux stands in for a tmux whose control client does not end
// at the end of its input, as a real one can stay when its output has
// nobody to read it: it answers the session query and the connection's
// first command, having written its pid to $FAKE_TMUX_PIDFILE, then
// sleeps.
const fakeControlTmux = `#!/bin/sh
case "$1" in
display-message) echo ' $1' ;;
-N|-C)
	read -r line
	echo $$ > "$FAKE_TMUX_PIDFILE"
	printf '%s\n' '%begin 1 1 1' '%0' '%end 1 1 1'
	exec sleep 60 ;;
esac
`

// TestControlEndsWithItsProcess kills, with SIGKILL, a process that has a
// control connection open, and checks that its control client ends too
// rather than stay attached to the session.
func TestControlEndsWithItsProcess(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tmux")
	if err := os.WriteFile(bin, []byte(fakeControlTmux), 0o755); err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(dir, "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestControlHelperProcess$")
	cmd.Env = append(os.Environ(), "AGENTMAIL_CONTROL_HELPER="+bin, "FAKE_TMUX_PIDFILE="+pidfile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The helper is killed before its stderr is read.
	helperFailed := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf(format+"; the helper's stderr: %s", append(args, stderr.String())...)
	}
	opened := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		opened <- line
	}()
	select {
	case line := <-opened:
		if line != "open\n" {
			helperFailed("helper said %q, want \"open\"", line)
		}
	case <-time.After(10 * time.Second):
		helperFailed("helper did not open its connection in 10s")
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		helperFailed("%v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		helperFailed("%v", err)
	}
	t.Cleanup(func() {
		if !proc.Ended(pid, 0) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	cmd.Process.Kill()
	cmd.Wait()
	if !proc.Ended(pid, 5*time.Second) {
		t.Fatalf("control client %d still runs 5s after the process that opened it was killed", pid)
	}
}

// TestControlHelperProcess is the process that TestControlEndsWithItsProcess
// kills. It opens a control connection with the stand-in tmux named by
// $AGENTMAIL_CONTROL_HELPER, says "open", and waits to be killed.
func TestControlHelperProcess(t *testing.T) {
	bin := os.Getenv("AGENTMAIL_CONTROL_HELPER")
	if bin == "" {
		return
	}
	k := &Control{}
	if err := k.open(context.Background(), &Client{Bin: bin, Pane: "%0", Control: k}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("open")
	time.Sleep(time.Minute)
	os.Exit(3)
}
