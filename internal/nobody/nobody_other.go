//go:build !unix

package nobody

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

// ID is the user and group id of nobody.
const ID = 65534

// Needed reports false: there are no Unix users here.
func Needed() bool { return false }

// Possible reports that files cannot be given to another user here.
func Possible() error {
	return fmt.Errorf("no Unix users on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Hand fails as Possible does.
func Hand(dir string) (undo func(), err error) { return func() {}, Possible() }

// Become fails as Possible does.
func Become() error { return Possible() }

// Credential is nil: there is no nobody here.
func Credential() *syscall.SysProcAttr { return nil }
