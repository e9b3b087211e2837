//go:build !unix

package mailman

import (
	"errors"
	"os"
	"syscall"
)

var errUnsupported = errors.New("the mailman needs a Unix system")

func tryLock(f *os.File, exclusive bool) (bool, error) { return false, errUnsupported }

func alive(pid int) bool { return false }

func terminate(pid int) error { return errUnsupported }

func detached() *syscall.SysProcAttr { return nil }

func keepInheritedFromChildren() {}
