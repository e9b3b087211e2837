package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMCPSignalAtFirstAnswer signals a starting MCP server as soon as its
// first answer arrives, with no pause: the earliest moment a client can
// know that the server runs at all. The server must stop as it does at any
// later signal: exit 0, with every request it took in answered and nothing
// but whole protocol lines on stdout.
//
// A signal that reaches a process before its runtime has started cannot
// be handled by any Go program; from its first answer on, the server
// handles every signal.
func TestMCPSignalAtFirstAnswer(t *testing.T) {
	needTmux(t)
	bin := agentmailPath(t)
	ts := startTmux(t, "alice", "bob")
	root := t.TempDir()
	for i := range 10 {
		sig := []os.Signal{syscall.SIGTERM, os.Interrupt}[i%2]
		t.Run(fmt.Sprintf("%d-%v", i, sig), func(t *testing.T) {
			// The requests are written before the server starts, so its
			// first read takes them all in; its input stays open, so only
			// the signal can end it.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			fmt.Fprintf(w, "%s\n%s\n%s\n%s\n",
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob","message":"signal %d"}}}`, i),
				`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			cmd := exec.Command(bin, "mcp")
			cmd.Env = ts.env(ts.panes[0], root)
			cmd.Stdin = r
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			sc := bufio.NewScanner(stdout)
			sc.Buffer(nil, 1<<20)
			var lines []string
			if sc.Scan() {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, sc.Text())
			}
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("server still running 3s after %v", sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("server ended with %v after %v; want exit status 0; stderr: %s", cmd.ProcessState, sig, stderr.String())
			}
			if len(lines) == 0 || !strings.HasPrefix(lines[0], `{"jsonrpc":"2.0","id":1,"result":`) {
				t.Fatalf("first answer %q; want initialize's", lines)
			}
			answered := map[string]bool{}
			for _, l := range lines {
				if !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":`) || !strings.HasSuffix(l, "}") {
					t.Errorf("stdout line %q is not a whole answer", l)
				}
				id, _, _ := strings.Cut(strings.TrimPrefix(l, `{"jsonrpc":"2.0","id":`), ",")
				answered[id] = true
			}
			// What the server took in it answered: a send that was
			// answered stored its message, and one that stored its
			// message was answered.
			stored, _ := os.ReadFile(filepath.Join(root, ".agentmail", "mailboxes", "bob.jsonl"))
			if sent := bytes.Contains(stored, fmt.Appendf(nil, `"signal %d"`, i)); sent != answered["2"] {
				t.Errorf("message stored %v, send answered %v; want both or neither; stdout:\n%s", sent, answered["2"], strings.Join(lines, "\n"))
			}
			if !answered["2"] && answered["3"] {
				t.Errorf("tools/list answered but not the send before it")
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

// TestMCPWithoutRoot starts the MCP server where no project root can be
// found: it still starts and answers, says why on stderr, and fails the
// tool calls that need the mailbox with that reason.
func TestMCPWithoutRoot(t *testing.T) {
	needTmux(t)
	bin := agentmailPath(t)
	ts := startTmux(t, "alice", "bob")
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = t.TempDir()
	if _, err := os.Stat(filepath.Join(filepath.Dir(cmd.Dir), ".git")); err == nil {
		t.Skip("the temporary directory is inside a git repository")
	}
	cmd.Env = ts.env(ts.panes[0], "")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob","message":"hi"}}}
`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agentmail mcp: %v; stderr: %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), `{"jsonrpc":"2.0","id":1,"result":`) {
		t.Errorf("initialize not answered: %s", stdout.String())
	}
	if !regexp.MustCompile(`"id":2,"result":\{"content":\[\{"type":"text","text":"[^"]*no project root[^"]*"\}\],"isError":true`).MatchString(stdout.String()) {
		t.Errorf("send without a root answered %s; want an error naming the missing root", stdout.String())
	}
	if !strings.HasPrefix(stderr.String(), "agentmail mcp: warning: no project root") {
		t.Errorf("stderr %q; want a warning about the missing root first", stderr.String())
	}
}

// tmuxServer is a tmux server of a test's own, on a private socket.
type tmuxServer struct {
	sock  string
	pid   string   // the server's pid, as $TMUX gives it
	panes []string // the panes of session S's windows
}

// needTmux skips a test that needs tmux where there is none, and fails it
// under CI=true, where a missing tmux must never pass for success.
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required under CI=true: %v", err)
		}
		t.Skip("needs tmux")
	}
}

// agentmailPath is the agentmail binary TestMain built and put on $PATH.
func agentmailPath(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("agentmail")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startTmux starts a tmux server with a session S of one window per name,
// each running cat, and ends the server when the test ends.
func startTmux(t *testing.T, names ...string) *tmuxServer {
	t.Helper()
	// sun_path holds about 108 bytes: the socket goes under a short
	// directory.
	dir, err := os.MkdirTemp("", "amt")
	if err != nil {
		t.Fatal(err)
	}
	s := &tmuxServer{sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		if err := endTmux(s.sock); err != nil {
			t.Error(err)
		}
		os.RemoveAll(dir)
	})
	for i, name := range names {
		args := []string{"new-window", "-d", "-t", "S:", "-n", name, "-P", "-F", "#{pid} #{pane_id}", "cat"}
		if i == 0 {
			args = []string{"-f", "/dev/null", "new-session", "-d", "-s", "S", "-n", name, "-P", "-F", "#{pid} #{pane_id}", "cat"}
		}
		out, err := s.tmux(args...)
		if err != nil {
			t.Fatal(err)
		}
		pid, pane, _ := strings.Cut(out, " ")
		s.pid, s.panes = pid, append(s.panes, pane)
	}
	return s
}

// tmux runs a tmux command on the server and returns its output, trimmed.
func (s *tmuxServer) tmux(args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// env is the environment of an agentmail run as the agent in pane, with
// its project root at root, or where it finds it when root is "".
func (s *tmuxServer) env(pane, root string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "GORACE=" + os.Getenv("GORACE"),
		"TMUX=" + s.sock + "," + s.pid + ",0", "TMUX_PANE=" + pane}
	if root != "" {
		env = append(env, "AGENTMAIL_ROOT="+root)
	}
	return env
}
