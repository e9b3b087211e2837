//go:build unix

package mailman

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentmail/mailbox"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLockOneHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), pidFileName)
	if pid, err := Running(path); pid != 0 || err != nil {
		t.Fatalf("Running without a file = %d, %v; want 0, nil", pid, err)
	}
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	if got, want := readFile(t, path), strconv.Itoa(me)+"\n"; got != want {
		t.Errorf("PID file holds %q, want %q", got, want)
	}
	if pid, err := Running(path); pid != me || err != nil {
		t.Errorf("Running = %d, %v; want %d", pid, err, me)
	}
	var re *RunningError
	if _, err := Acquire(path); !errors.As(err, &re) || re.PID != me {
		t.Errorf("second Acquire: err = %v, want RunningError with PID %d", err, me)
	} else if got, want := err.Error(), "mailman already running (PID: "+strconv.Itoa(me)+")"; got != want {
		t.Errorf("second Acquire: %q, want %q", got, want)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Release the PID file is still there: %v", err)
	}
	if pid, err := Running(path); pid != 0 || err != nil {
		t.Errorf("Running after Release = %d, %v; want 0, nil", pid, err)
	}
	l, err = Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l.Release()
}

func TestLockConcurrentStarts(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), pidFileName)
		const n = 8
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			holders []*Lock
			running int
		)
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				l, err := Acquire(path)
				mu.Lock()
				defer mu.Unlock()
				var re *RunningError
				switch {
				case err == nil:
					holders = append(holders, l)
				case errors.As(err, &re) && re.PID == os.Getpid():
					running++
				default:
					t.Errorf("Acquire: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(holders) != 1 || running != n-1 {
			t.Fatalf("round %d: %d holders and %d told it runs, want 1 and %d", round, len(holders), running, n-1)
		}
		holders[0].Release()
	}
}

func TestLockStalePID(t *testing.T) {
	path := filepath.Join(t.TempDir(), pidFileName)
	// A PID file left by a mailman that was killed, or by the earlier tool,
	// names a process that does not hold the lock.
	if err := os.WriteFile(path, []byte("999999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pid, err := Running(path); pid != 0 || err != nil {
		t.Errorf("Running with a stale PID file = %d, %v; want 0, nil", pid, err)
	}
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if got, want := readFile(t, path), strconv.Itoa(os.Getpid())+"\n"; got != want {
		t.Errorf("PID file holds %q, want %q", got, want)
	}
}

func TestLockCheckRecreatesTheFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".agentmail")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, pidFileName)
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	// The lock on the removed file no longer keeps anyone out...
	if pid, _ := Running(path); pid != 0 {
		t.Errorf("Running after removal = %d, want 0", pid)
	}
	// ... until Check takes it again.
	if err := l.Check(); err != nil {
		t.Fatalf("Check after removal: %v", err)
	}
	if pid, err := Running(path); pid != os.Getpid() || err != nil {
		t.Errorf("Running after Check = %d, %v; want %d", pid, err, os.Getpid())
	}

	// When another mailman got there first, Check says so.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	other, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	var re *RunningError
	if err := l.Check(); !errors.As(err, &re) {
		t.Errorf("Check with another holder: err = %v, want RunningError", err)
	}
}

// TestLockHolderProcess is not a test: TestLockAcrossProcesses runs the
// test binary with it to hold the lock in another process.
func TestLockHolderProcess(t *testing.T) {
	path := os.Getenv("MAILMAN_TEST_LOCK")
	if path == "" {
		t.Skip("helper process only")
	}
	if _, err := Acquire(path); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	os.Stdin.Read(make([]byte, 1)) // until the parent kills us
	os.Exit(0)
}

func TestLockAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), pidFileName)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), "MAILMAN_TEST_LOCK="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	child := cmd.Process.Pid
	if pid, err := Running(path); pid != child || err != nil {
		t.Errorf("Running = %d, %v; want the helper's PID %d", pid, err, child)
	}
	var re *RunningError
	if _, err := Acquire(path); !errors.As(err, &re) || re.PID != child {
		t.Errorf("Acquire while the helper holds the lock: err = %v, want RunningError with PID %d", err, child)
	}
	// Killed without any chance to clean up, the helper leaves its PID in
	// the file, but the lock went with it.
	cmd.Process.Kill()
	cmd.Wait()
	if got := readFile(t, path); got != strconv.Itoa(child)+"\n" {
		t.Errorf("PID file after the kill holds %q", got)
	}
	start := time.Now()
	if pid, err := Running(path); pid != 0 || err != nil {
		t.Errorf("Running after the holder died = %d, %v; want 0, nil", pid, err)
	}
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	l.Release()
	if d := time.Since(start); d > time.Second {
		t.Errorf("taking over from a dead holder took %v", d)
	}
}

// TestLockNotRegular: a PID file that is a symbolic link (to a mailbox, or
// to nowhere), a named pipe or a directory is refused at once by Acquire,
// Running and Stop, with an error naming it; nothing is written through it
// or created where it points.
func TestLockNotRegular(t *testing.T) {
	kinds := []struct {
		name, what string
		make       func(path string) error
	}{
		{"symlink", "a symbolic link", func(path string) error { return os.Symlink("mailboxes/bob.jsonl", path) }},
		{"dangling-symlink", "a symbolic link", func(path string) error { return os.Symlink("../outside", path) }},
		{"fifo", "a named pipe", func(path string) error { return syscall.Mkfifo(path, 0o600) }},
		{"directory", "a directory", func(path string) error { return os.Mkdir(path, 0o700) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, ".agentmail")
			bob := filepath.Join(dir, "mailboxes", "bob.jsonl")
			const mail = `{"id":"x","from":"alice","to":"bob","message":"hi","read_flag":false}` + "\n"
			if err := os.MkdirAll(filepath.Dir(bob), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bob, []byte(mail), 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, pidFileName)
			if err := k.make(path); err != nil {
				t.Fatal(err)
			}
			want := path + " is " + k.what + ", not a regular file; remove it"
			check := func(op string, err error) {
				t.Helper()
				var nr *mailbox.NotRegularError
				if !errors.As(err, &nr) || err.Error() != want {
					t.Errorf("%s: err = %v; want %q", op, err, want)
				}
			}
			calls := []struct {
				op string
				fn func() error
			}{
				{"Acquire", func() error {
					l, err := Acquire(path)
					if l != nil {
						l.Release()
					}
					return err
				}},
				{"Running", func() error { _, err := Running(path); return err }},
				{"Stop", func() error { _, err := Stop(path, time.Second); return err }},
			}
			for _, c := range calls {
				done := make(chan error, 1)
				go func() { done <- c.fn() }()
				select {
				case err := <-done:
					check(c.op, err)
				case <-time.After(5 * time.Second):
					t.Fatalf("%s still blocked after 5s", c.op)
				}
			}
			if got := readFile(t, bob); got != mail {
				t.Errorf("bob's mailbox holds %q; want %q", got, mail)
			}
			if _, err := os.Lstat(filepath.Join(root, "outside")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the link's target was created: %v", err)
			}
		})
	}
}

// TestLockHardLink: a PID file that is another name of bob's mailbox is
// refused by Acquire, and bob's mail is not overwritten.
func TestLockHardLink(t *testing.T) {
	dir := t.TempDir()
	bob := filepath.Join(dir, "bob.jsonl")
	const mail = `{"id":"x","from":"alice","to":"bob","message":"hi","read_flag":false}` + "\n"
	if err := os.WriteFile(bob, []byte(mail), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, pidFileName)
	if err := os.Link(bob, path); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(path)
	if want := path + " has 2 hard links, so writing it would change another file too; remove it"; err == nil || err.Error() != want {
		t.Errorf("Acquire: err = %v; want %q", err, want)
	}
	if l != nil {
		l.Release()
	}
	if got := readFile(t, bob); got != mail {
		t.Errorf("bob's mailbox holds %q; want %q", got, mail)
	}
}

// TestLockSleeperProcess is not a test: TestLockEarlierToolMailman runs
// the test binary with it, under the name agentmail and with the argument
// mailman, to stand for the earlier tool's mailman.
func TestLockSleeperProcess(t *testing.T) {
	if os.Getenv("MAILMAN_TEST_SLEEP") == "" {
		t.Skip("helper process only")
	}
	os.Stdout.WriteString("ready\n")
	os.Stdin.Read(make([]byte, 1)) // until the parent closes it
	os.Exit(0)
}

// TestLockEarlierToolMailman: the earlier tool's mailman writes its PID
// file without a lock. While it runs, Running reports it and Acquire
// refuses to start a second mailman; a PID file naming a live process that
// is no mailman, or a dead one, stops nothing.
func TestLockEarlierToolMailman(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	nested := filepath.Join(root, "nested") // a project of its own
	bin := t.TempDir()                      // the binaries, and another project
	for _, d := range []string{filepath.Join(root, ".git"), filepath.Join(root, ".agentmail"), sub, filepath.Join(nested, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(root, ".agentmail", pidFileName)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := func(name, cwd string, args ...string) *exec.Cmd {
		t.Helper()
		link := filepath.Join(bin, name)
		if err := os.Symlink(exe, link); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
		cmd := exec.Command(link, append([]string{"-test.run=^TestLockSleeperProcess$"}, args...)...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "MAILMAN_TEST_SLEEP=1")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Wait() })
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			t.Fatalf("helper said %q", line)
		}
		return cmd
	}
	writePIDFile := func(pid int) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The PID names a live process that is not this root's mailman, so it
	// is stale; or a mailman started in the foreground below the root.
	for _, c := range []struct {
		what, name, cwd string
		ours            bool
	}{
		{"a non-mailman", "other", root, false},
		{"the earlier tool's mailman of another project", "agentmail", bin, false},
		{"that of a project nested in this one", "agentmail", nested, false},
		{"that of this root, in a subdirectory", "agentmail", sub, true},
	} {
		cmd := start(c.name, c.cwd, "mailman")
		writePIDFile(cmd.Process.Pid)
		want := 0
		if c.ours {
			want = cmd.Process.Pid
		}
		if pid, err := Running(path); pid != want || err != nil {
			t.Errorf("Running with the PID of %s = %d, %v; want %d, nil", c.what, pid, err, want)
		}
	}

	// A root without .git (one named by AGENTMAIL_ROOT): a mailman
	// working in it is its mailman.
	plain := t.TempDir()
	if err := os.Mkdir(filepath.Join(plain, ".agentmail"), 0o700); err != nil {
		t.Fatal(err)
	}
	plainPath := filepath.Join(plain, ".agentmail", pidFileName)
	inPlain := start("agentmail", plain, "mailman")
	if err := os.WriteFile(plainPath, []byte(strconv.Itoa(inPlain.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pid, err := Running(plainPath); pid != inPlain.Process.Pid || err != nil {
		t.Errorf("Running with the earlier tool's mailman in a root without .git = %d, %v; want %d, nil", pid, err, inPlain.Process.Pid)
	}

	old := start("agentmail", root, "mailman")
	writePIDFile(old.Process.Pid)
	if pid, err := Running(path); pid != old.Process.Pid || err != nil {
		t.Errorf("Running with the earlier tool's mailman = %d, %v; want %d, nil", pid, err, old.Process.Pid)
	}
	var re *RunningError
	if _, err := Acquire(path); !errors.As(err, &re) || re.PID != old.Process.Pid {
		t.Errorf("Acquire beside the earlier tool's mailman: err = %v, want RunningError with PID %d", err, old.Process.Pid)
	}
	if got := readFile(t, path); got != strconv.Itoa(old.Process.Pid)+"\n" {
		t.Errorf("PID file after the refused start holds %q", got)
	}

	old.Process.Kill()
	old.Wait()
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after the earlier tool's mailman ended: %v", err)
	}
	l.Release()
}
