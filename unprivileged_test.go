package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// nobody is the user and group that cmdUnprivileged runs commands as when
// the tests run as root.
const nobody = 65534

// cmdUnprivileged runs a command of $PATH as a user that cannot read the
// files of $WORK that the script made mode 0 (chmod 0 file), as a file
// another user owns would be: unprivileged [!] command args...
//
// For a user other than root that is the user itself. Root reads any file,
// so as root the command runs as nobody: every file of $WORK but those of
// mode 0 is given to nobody first, the directories above $WORK are made
// searchable, and the command is a copy of the program in a directory
// nobody may search. Either way it runs outside tmux.
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
	if os.Geteuid() == 0 {
		cmd.Path = nobodyCopy(ts, path, args[0])
		giveToNobody(ts, ts.Getenv("WORK"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
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

// nobodyCopy copies the program at path to a directory of its own that
// nobody may search, under the same name (which is how the test binary
// knows to run as agentmail), and returns the copy's path.
func nobodyCopy(ts *testscript.TestScript, path, name string) string {
	dir, err := os.MkdirTemp("", "amu")
	ts.Check(err)
	ts.Defer(func() { os.RemoveAll(dir) })
	ts.Check(os.Chmod(dir, 0o755))
	src, err := os.Open(path)
	ts.Check(err)
	defer src.Close()
	dst := filepath.Join(dir, filepath.Base(name))
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	ts.Check(err)
	_, err = io.Copy(f, src)
	ts.Check(errors.Join(err, f.Close()))
	return dst
}

// giveToNobody gives every file under work to nobody but those of mode 0,
// and makes the directories above work searchable by everyone.
func giveToNobody(ts *testscript.TestScript, work string) {
	for dir := filepath.Dir(work); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		ts.Check(err)
		if fi.Mode().Perm()&0o001 == 0 {
			ts.Check(os.Chmod(dir, fi.Mode().Perm()|0o001))
		}
	}
	ts.Check(filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil || fi.Mode().Perm() == 0 {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}))
}
