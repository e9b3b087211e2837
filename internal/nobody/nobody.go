//go:build unix

// Package nobody lets tests see what a command does with a file that it may
// not read or write, as a file another user owns, even when the tests run
// as root, who may read and write any file.
//
// A test marks such a file by taking its owner's write permission away:
// chmod 0 for a file it may not read, 0555 for a directory it may not
// write in. For a user other than root that is enough. As root, Hand gives
// every other file to nobody, and the test runs the command as nobody; the
// marked files stay root's, and nobody gets what their mode gives others.
package nobody

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ID is the user and group id of nobody.
const ID = 65534

// Needed reports whether the tests run as root, so that a command must run
// as nobody to be refused anything.
func Needed() bool { return os.Geteuid() == 0 }

// Possible reports why Hand cannot prepare files for nobody here, or nil:
// the temporary directory, or one above it, may not be searched by
// everyone, or nobody cannot be given files (root without CAP_CHOWN, or in
// a user namespace without nobody). Its error satisfies
// errors.Is(err, errors.ErrUnsupported): the test should skip. For a user
// other than root it is always nil.
func Possible() error {
	if !Needed() {
		return nil
	}
	for d := filepath.Clean(os.TempDir()); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s may not be searched by others, so nobody cannot reach the test's files: %w", d, errors.ErrUnsupported)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	f, err := os.CreateTemp("", "nobody")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = errors.Join(f.Chown(ID, ID), f.Close())
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("cannot give files to nobody here: %w (%w)", err, errors.ErrUnsupported)
	}
	return err
}

// Hand prepares dir, as root, for a command run as nobody: it gives to
// nobody every file and directory under dir (dir too) that its owner may
// write, and lets everyone search the directories between the temporary
// directory and dir, which the test created. undo puts their modes back.
// It fails as Possible does when that cannot be done here.
func Hand(dir string) (undo func(), err error) {
	var undos []func()
	undo = func() {
		for _, u := range undos {
			u()
		}
	}
	if err := Possible(); err != nil {
		return undo, err
	}
	tmp := filepath.Clean(os.TempDir())
	if rel, err := filepath.Rel(tmp, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return undo, fmt.Errorf("%s is not under the temporary directory %s", dir, tmp)
	}
	for d := filepath.Dir(dir); d != tmp; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return undo, err
		}
		if mode := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); mode&0o001 == 0 {
			if err := os.Chmod(d, mode|0o001); err != nil {
				return undo, err
			}
			undos = append(undos, func() { os.Chmod(d, mode) })
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil || fi.Mode().Perm()&0o200 == 0 {
			return err
		}
		return os.Lchown(p, ID, ID)
	})
	return undo, err
}

// Become makes the calling process nobody, for good: a child process that
// a test started as root, for the command under test.
func Become() error {
	if err := syscall.Setgroups(nil); err != nil {
		return err
	}
	if err := syscall.Setgid(ID); err != nil {
		return err
	}
	return syscall.Setuid(ID)
}

// Credential is the credential of nobody, for a command a test runs as
// nobody; Hand must have prepared its files.
func Credential() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: ID, Gid: ID}}
}
