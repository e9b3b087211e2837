package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentmail/internal/nobody"
	"agentmail/internal/proc"

	"github.com/rogpeppe/go-internal/lockedfile"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The scripts run main itself, signal handling included: exactly what
	// users run.
	testscript.Main(m, map[string]func(){"agentmail": main, "fakeprompt": fakePrompt})
}

// TestScript runs the scripts in testdata/: the real binary against a real
// tmux server on a private socket, one server per script.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		// Under the test's own temporary directory, which the test
		// removes: testscript leaves its work root behind otherwise.
		WorkdirRoot:         t.TempDir(),
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") != "",
		Setup:               setupScript,
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "tmux":
				_, err := exec.LookPath("tmux")
				return err == nil, nil
			case "unprivileged":
				// Whether cmdUnprivileged can run a command that
				// files of mode 0 refuse.
				err := nobody.Possible()
				if errors.Is(err, errors.ErrUnsupported) {
					return false, nil
				}
				return err == nil, err
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"agents":       cmdAgents,
			"waitfor":      cmdWaitfor,
			"mcpstart":     cmdMCPStart,
			"start":        cmdStart,
			"http":         cmdHTTP,
			"serverurl":    cmdServerURL,
			"mcpsend":      cmdMCPSend,
			"mcpsendfile":  cmdMCPSendFile,
			"mcpclose":     cmdMCPClose,
			"mcpwait":      cmdMCPWait,
			"mcpkill":      cmdMCPKill,
			"holdlock":     cmdHoldLock,
			"tmuxgone":     cmdTmuxGone,
			"unprivileged": cmdUnprivileged,
			"jsonhas":      cmdJSONHas,
			"web":          cmdWeb,
			"tlscerts":     cmdTLSCerts,
			"envfile":      cmdEnvFile,
		},
	})
}

// setupScript gives each script a project root ($WORK has a .git) and its
// own tmux server on a short private socket, killed when the script ends.
// $TMUX points at that socket, so both tmux and agentmail use it; a script
// runs as the first agent's pane once it has called "agents".
func setupScript(e *testscript.Env) error {
	if _, err := exec.LookPath("tmux"); err != nil && os.Getenv("CI") != "" {
		return fmt.Errorf("tmux is required under CI=true but is not installed: %v", err)
	}
	if err := os.Mkdir(filepath.Join(e.WorkDir, ".git"), 0o755); err != nil {
		return err
	}
	// sun_path holds about 108 bytes, and $WORK can be longer than that.
	dir, err := os.MkdirTemp("", "am")
	if err != nil {
		return err
	}
	sock := filepath.Join(dir, "s")
	e.Setenv("TMUX_SOCK", sock)
	e.Setenv("TMUX", sock+",0,0")
	e.Setenv("TMUX_TMPDIR", dir)
	if ci := os.Getenv("CI"); ci != "" {
		e.Setenv("CI", ci)
	}
	e.Defer(func() {
		err := endTmux(sock)
		os.RemoveAll(dir)
		if err != nil {
			e.T().Fatal(err)
		}
	})
	return nil
}

// endTmux ends the tmux server on sock, if one answers, and waits until it
// has ended. A server that kill-server leaves running (one that waits for a
// client that never leaves, say) is killed by its pid, and reported.
func endTmux(sock string) error {
	out, err := exec.Command("tmux", "-S", sock, "display-message", "-p", "#{pid}").Output()
	exec.Command("tmux", "-S", sock, "kill-server").Run()
	if err != nil {
		return nil // no server
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("tmux server pid %q: %v", out, err)
	}
	if !proc.Ended(pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("tmux server %d still ran 5s after kill-server, and was killed", pid)
	}
	return nil
}

// cmdTmuxGone waits until no tmux server takes connections on the script's
// socket any more: tmuxgone. A script that ends a tmux server and starts
// another on the same socket waits for this in between. A server on its
// way out still listens for a moment: once given kill-server it closes
// every connection it accepts, and one that exits because its last session
// went drops any connection still waiting to be accepted. A tmux command
// that connects in that moment fails with "server exited unexpectedly"
// where it would otherwise have started a new server.
func cmdTmuxGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: tmuxgone")
	}
	sock := ts.Getenv("TMUX_SOCK")
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err == nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			ts.Fatalf("tmuxgone: a tmux server still takes connections on %s after 5s", sock)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdAgents starts a tmux session "proj" with one window per name, each
// running cat (so typed text shows in capture-pane). It sets $PANE0, $PANE1,
// … to the windows' pane ids and TMUX_PANE to the first.
func cmdAgents(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: agents name[=command]...")
	}
	for i, arg := range args {
		// name=command runs command in the window instead of cat.
		name, command, ok := strings.Cut(arg, "=")
		if !ok {
			command = "cat"
		}
		var argv []string
		if i == 0 {
			argv = []string{"-f", "/dev/null", "new-session", "-d", "-s", "proj", "-x", "200", "-y", "50", "-n", name, "-P", "-F", "#{pane_id}", command}
		} else {
			argv = []string{"new-window", "-d", "-t", "proj:", "-n", name, "-P", "-F", "#{pane_id}", command}
		}
		out := tmuxOut(ts, argv...)
		ts.Setenv("PANE"+strconv.Itoa(i), strings.TrimSpace(out))
	}
	ts.Setenv("TMUX_PANE", ts.Getenv("PANE0"))
}

func tmuxOut(ts *testscript.TestScript, args ...string) string {
	cmd := exec.Command("tmux", args...)
	cmd.Env = scriptEnv(ts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// scriptEnv is the environment a helper process of a script runs with.
func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "TMUX", "TMUX_PANE", "TMUX_TMPDIR", "AGENTMAIL_ROOT", "AGENTMAIL_TMUX_CONTROL", "AGENTMAIL_TOKEN", "AGENTMAIL_URL", "AGENTMAIL_AGENT", "AGENTMAIL_CA_FILE", "XDG_STATE_HOME", "GOCOVERDIR", "GORACE", "CI"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// cmdWaitfor waits until a file or a tmux pane's visible text matches a
// regular expression: waitfor [-t duration] file|%pane regexp.
// With !, it checks that it does not match during the whole duration.
func cmdWaitfor(ts *testscript.TestScript, neg bool, args []string) {
	timeout := 5 * time.Second
	if len(args) >= 2 && args[0] == "-t" {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			ts.Fatalf("waitfor: %v", err)
		}
		timeout, args = d, args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: waitfor [-t duration] file|%%pane regexp")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("waitfor: %v", err)
	}
	read := func() string {
		if strings.HasPrefix(args[0], "%") {
			return tmuxOut(ts, "capture-pane", "-p", "-J", "-t", args[0])
		}
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		return string(b)
	}
	deadline := time.Now().Add(timeout)
	for {
		text := read()
		if re.MatchString(text) {
			if neg {
				ts.Fatalf("waitfor: %s matches %q:\n%s", args[0], args[1], text)
			}
			return
		}
		if time.Now().After(deadline) {
			if neg {
				return
			}
			ts.Fatalf("waitfor: %s did not match %q within %v; it holds:\n%s", args[0], args[1], timeout, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mcpProc is an "agentmail mcp" started by mcpstart, with its stdin kept
// open until mcpclose.
type mcpProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error
}

var (
	mcpMu    sync.Mutex
	mcpProcs = map[*testscript.TestScript]map[string]*mcpProc{}
)

func getMCP(ts *testscript.TestScript, name string) *mcpProc {
	mcpMu.Lock()
	defer mcpMu.Unlock()
	p := mcpProcs[ts][name]
	if p == nil {
		ts.Fatalf("no mcp server %q: use mcpstart first", name)
	}
	return p
}

// cmdMCPStart starts "agentmail mcp" in the background, with any flags
// given: mcpstart name [flag...]. Its stdout and stderr go to the files
// name.out and name.err.
func cmdMCPStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: mcpstart name [flag...]")
	}
	startAgentmail(ts, args[0], append([]string{"mcp"}, args[1:]...))
}

// cmdStart starts any agentmail command in the background, for the
// commands that wait, such as watch: start name command [arg...]. As with
// mcpstart, its output goes to name.out and name.err, and mcpwait waits
// for its exit.
func cmdStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: start name command [arg...]")
	}
	startAgentmail(ts, args[0], args[1:])
}

func startAgentmail(ts *testscript.TestScript, name string, args []string) {
	path, err := lookPathIn("agentmail", ts.Getenv("PATH"))
	if err != nil {
		ts.Fatalf("start: %v", err)
	}
	out, err := os.Create(ts.MkAbs(name + ".out"))
	ts.Check(err)
	errf, err := os.Create(ts.MkAbs(name + ".err"))
	ts.Check(err)
	cmd := exec.Command(path, args...)
	cmd.Dir = ts.Getenv("PWD")
	if cmd.Dir == "" {
		cmd.Dir = ts.MkAbs(".")
	}
	cmd.Env = scriptEnv(ts)
	cmd.Stdout, cmd.Stderr = out, errf
	stdin, err := cmd.StdinPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	p := &mcpProc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		errf.Close()
		close(p.done)
	}()
	mcpMu.Lock()
	if mcpProcs[ts] == nil {
		mcpProcs[ts] = map[string]*mcpProc{}
	}
	mcpProcs[ts][name] = p
	mcpMu.Unlock()
	ts.Defer(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		mcpMu.Lock()
		delete(mcpProcs[ts], name)
		mcpMu.Unlock()
	})
}

func lookPathIn(file, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH", file)
}

// cmdMCPSend writes lines to a server's stdin: mcpsend name line...
func cmdMCPSend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: mcpsend name line...")
	}
	p := getMCP(ts, args[0])
	for _, line := range args[1:] {
		if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
			ts.Fatalf("mcpsend: %v", err)
		}
	}
}

// cmdMCPSendFile sends the lines of a file, for a line that a script
// builds with values it learned: mcpsendfile name file.
func cmdMCPSendFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mcpsendfile name file")
	}
	data := strings.TrimSuffix(ts.ReadFile(args[1]), "\n")
	cmdMCPSend(ts, false, append([]string{args[0]}, strings.Split(data, "\n")...))
}

// cmdMCPClose closes a server's stdin: mcpclose name.
func cmdMCPClose(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcpclose name")
	}
	ts.Check(getMCP(ts, args[0]).stdin.Close())
}

// cmdMCPKill sends a signal to a server: mcpkill name TERM|INT|HUP|KILL.
func cmdMCPKill(ts *testscript.TestScript, neg bool, args []string) {
	sigs := map[string]os.Signal{"TERM": syscall.SIGTERM, "INT": os.Interrupt, "HUP": syscall.SIGHUP, "KILL": os.Kill}
	if neg || len(args) != 2 || sigs[args[1]] == nil {
		ts.Fatalf("usage: mcpkill name TERM|INT|HUP|KILL")
	}
	ts.Check(getMCP(ts, args[0]).cmd.Process.Signal(sigs[args[1]]))
}

// cmdHoldLock takes the lock the store takes on a file, as another process
// working on that file would, and holds it until the script ends:
// holdlock file. The file and its directory are created if missing.
func cmdHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdlock file")
	}
	path := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(filepath.Dir(path), 0o700))
	f, err := lockedfile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	ts.Check(err)
	ts.Defer(func() { f.Close() })
}

// cmdMCPWait waits for a server, or a command begun with start, to exit
// with the given status within the given time, measured from when mcpwait
// starts: mcpwait name status duration.
func cmdMCPWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mcpwait name status duration")
	}
	p := getMCP(ts, args[0])
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	d, err := time.ParseDuration(args[2])
	ts.Check(err)
	start := time.Now()
	select {
	case <-p.done:
	case <-time.After(d):
		ts.Fatalf("mcpwait: %s still running after %v", args[0], d)
	}
	got := p.cmd.ProcessState.ExitCode()
	ts.Logf("%s exited with status %d after %v", args[0], got, time.Since(start).Round(time.Millisecond))
	if got != want {
		ts.Fatalf("mcpwait: %s exited with status %d, want %d", args[0], got, want)
	}
}
