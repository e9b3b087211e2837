package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"agentmail/internal/nobody"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdUnprivileged runs a command of $PATH outside tmux as a user that may
// not read or write what the script took its owner's write permission from
// (chmod 0 file, chmod 555 dir), as files another user owns:
// unprivileged [!] command args...
//
// For a user other than root that is the user itself. As root, who may
// read and write anything, it is nobody (see package nobody), running a
// copy of the program in a directory nobody may search. Scripts check the
// condition [unprivileged] first.
func cmdUnprivileged(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: unprivileged command args...")
	}
	path, err := lookPathIn(args[0], ts.Getenv("PATH"))
	ts.Check(err)
	cmd := exec.Command(path, args[1:]...)
	cmd.Dir = ts.MkAbs(".")
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "AGENTMAIL_ROOT", "GORACE", "CI"} {
		if v := ts.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	if nobody.Needed() {
		undo, err := nobody.Hand(ts.Getenv("WORK"))
		ts.Defer(undo)
		ts.Check(err)
		cmd.Path = nobodyCopy(ts, path)
		cmd.SysProcAttr = nobody.Credential()
	}
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &ee):
		ts.Fatalf("unprivileged %s: %v", args[0], err)
	case neg && err == nil:
		ts.Fatalf("unprivileged %s succeeded unexpectedly", args[0])
	case !neg && err != nil:
		ts.Fatalf("unprivileged %s: %v", args[0], err)
	}
}

// nobodyCopy copies the program at path into a directory of its own that
// nobody may search, under the same name (by which the test binary knows
// to run as agentmail), and returns the copy's path.
func nobodyCopy(ts *testscript.TestScript, path string) string {
	dir, err := os.MkdirTemp("", "amu")
	ts.Check(err)
	ts.Defer(func() { os.RemoveAll(dir) })
	ts.Check(os.Chmod(dir, 0o755))
	src, err := os.Open(path)
	ts.Check(err)
	defer src.Close()
	dst := filepath.Join(dir, filepath.Base(path))
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	ts.Check(err)
	_, err = io.Copy(f, src)
	ts.Check(errors.Join(err, f.Close()))
	return dst
}
