package interop

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// agentmailBin returns the binary under test: $AGENTMAIL_BIN when set,
// otherwise one built once from the parent module.
func agentmailBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("AGENTMAIL_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("AGENTMAIL_BIN: %v", err)
		}
		return abs
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentmail-interop")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "agentmail")
		cmd := exec.Command("go", "build", "-o", builtBin, ".")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: out}
		}
	})
	if buildErr != nil {
		t.Fatalf("building agentmail: %v", buildErr)
	}
	return builtBin
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }

// TestMain removes the binary built for the tests, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// tmuxServer is a tmux server on a private socket with one session, "proj",
// whose windows alice and bob run cat.
type tmuxServer struct {
	sock       string
	alice, bob string // pane ids
}

// startTmux starts a private tmux server and kills it when the test ends.
// Without tmux the test is skipped, except under CI=true, where it fails.
func startTmux(t *testing.T) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required under CI=true: %v", err)
		}
		t.Skip("tmux is not installed")
	}
	// A socket path must fit in about 108 bytes, so it goes under a short
	// temporary directory rather than t.TempDir().
	dir, err := os.MkdirTemp("", "amsdk")
	if err != nil {
		t.Fatal(err)
	}
	tm := &tmuxServer{sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", tm.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	tm.alice = tm.run(t, "-f", "/dev/null", "new-session", "-d", "-s", "proj", "-x", "200", "-y", "50", "-n", "alice", "-P", "-F", "#{pane_id}", "cat")
	tm.bob = tm.run(t, "new-window", "-d", "-t", "proj:", "-n", "bob", "-P", "-F", "#{pane_id}", "cat")
	return tm
}

func (tm *tmuxServer) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", tm.sock}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
