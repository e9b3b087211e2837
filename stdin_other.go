//go:build !unix

package main

import "io"

// pollable returns r: only Unix pipes are read through the poller.
func pollable(r io.Reader) io.Reader { return r }
