//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollable returns the MCP server's standard input read through the Go
// runtime's poller when it is a pipe or a socket, as a client that spawns
// the server gives it. A read waiting for the next line then parks its
// goroutine instead of holding a thread in the kernel, so the goroutine
// that handles the line just read runs at once. A terminal, or a file, is
// read as it is.
func pollable(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok {
		return r
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return r
	}
	fd := int(f.Fd())
	if syscall.SetNonblock(fd, true) != nil {
		return r
	}
	return os.NewFile(uintptr(fd), f.Name())
}
