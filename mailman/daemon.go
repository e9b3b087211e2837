package mailman

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// daemonEnv is set in the environment of a daemon child to the number of
// the file descriptor on which it reports how its start went.
const daemonEnv = "AGENTMAIL_MAILMAN_DAEMON"

// startTimeout bounds how long Spawn waits for the child's report.
const startTimeout = 10 * time.Second

// Daemon describes a mailman to start in the background.
type Daemon struct {
	Path string   // the executable
	Args []string // its argv, Args[0] included
	Env  []string // its environment; Spawn adds daemonEnv, which wins over any copy
	Dir  string   // its working directory
	Log  *os.File // its standard output and error
}

// Spawn starts the daemon in a session of its own, with standard input on
// /dev/null and none of the other descriptors this process inherited. It
// waits until the daemon reports that it holds the lock and watches the
// files, and returns its PID. When the child finds another mailman running
// the error is a *RunningError; when it fails to start, the error is the
// child's own.
func (d *Daemon) Spawn() (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	keepInheritedFromChildren()
	cmd := &exec.Cmd{
		Path:        d.Path,
		Args:        d.Args,
		Env:         append(d.Env, daemonEnv+"=3"),
		Dir:         d.Dir,
		Stdout:      d.Log,
		Stderr:      d.Log,
		ExtraFiles:  []*os.File{w}, // descriptor 3 in the child
		SysProcAttr: detached(),
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid

	_ = r.SetReadDeadline(time.Now().Add(startTimeout))
	line, rerr := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	word, rest, _ := strings.Cut(line, " ")
	switch {
	case word == "started":
		// The child runs on; it is not ours to wait for.
		return pid, cmd.Process.Release()
	case word == "running":
		cmd.Wait()
		n, _ := strconv.Atoi(rest)
		return 0, &RunningError{PID: n}
	case word == "error" && rest != "":
		cmd.Wait()
		return 0, errors.New(rest)
	case errors.Is(rerr, os.ErrDeadlineExceeded):
		cmd.Process.Release()
		return 0, fmt.Errorf("the mailman (PID: %d) did not report its start within %v; see %s", pid, startTimeout, d.Log.Name())
	}
	err = cmd.Wait()
	return 0, fmt.Errorf("the mailman exited while starting (%v); see %s", err, d.Log.Name())
}

// StartReport is the daemon child's end of the start-up report, or nil in a
// mailman that is not a daemon child.
type StartReport struct{ f *os.File }

// ChildReport returns the start-up report of a daemon child, as named by
// daemonEnv in getenv, or nil when there is none.
func ChildReport(getenv func(string) string) *StartReport {
	fd, err := strconv.Atoi(getenv(daemonEnv))
	if err != nil || fd < 3 {
		return nil
	}
	return &StartReport{f: os.NewFile(uintptr(fd), "mailman start report")}
}

// Started tells the parent that the mailman runs. Later calls do nothing.
func (s *StartReport) Started() { s.send("started") }

// Failed tells the parent why the mailman could not start. Later calls do
// nothing.
func (s *StartReport) Failed(err error) {
	var re *RunningError
	if errors.As(err, &re) {
		s.send("running " + strconv.Itoa(re.PID))
		return
	}
	s.send("error " + strings.ReplaceAll(err.Error(), "\n", "; "))
}

func (s *StartReport) send(line string) {
	if s == nil || s.f == nil {
		return
	}
	// The parent may be gone; the mailman runs on regardless.
	_, _ = s.f.WriteString(line + "\n")
	_ = s.f.Close()
	s.f = nil
}
