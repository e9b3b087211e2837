// Package cleanup runs a benchmark program's clean-ups (its tmux server,
// its temporary project) at exit, whatever the way out: the end of main, a
// fatal error, or a panic.
package cleanup

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

var (
	mu    sync.Mutex
	funcs []func()
)

// AtExit adds f to the functions Run calls, in reverse order.
func AtExit(f func()) {
	mu.Lock()
	defer mu.Unlock()
	funcs = append(funcs, f)
}

// Run calls the functions given to AtExit, the last first, once each.
func Run() {
	mu.Lock()
	defer mu.Unlock()
	for i := len(funcs) - 1; i >= 0; i-- {
		funcs[i]()
	}
	funcs = nil
}

// exiting is set by the first Fatalf; the clean-ups it runs make other
// goroutines fail too, and they wait for the exit instead of reporting that.
var exiting atomic.Bool

// Fatalf reports a failure on stderr, runs the clean-ups and exits 1.
func Fatalf(format string, args ...any) {
	if exiting.Swap(true) {
		select {}
	}
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	Run()
	os.Exit(1)
}

// OnSignals makes an interrupt (SIGINT, SIGTERM, SIGHUP) end the run
// through Fatalf, so the clean-ups run, and makes a cut output (| head)
// not stop it: the run goes on to its end and cleans up there, its writes
// to the closed output only failing.
func OnSignals() {
	signal.Ignore(syscall.SIGPIPE)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sig
		Fatalf("interrupted by %v", s)
	}()
}

// Finish, deferred in main, runs the clean-ups at its end, and before a
// panic goes on.
func Finish() {
	if r := recover(); r != nil {
		Run()
		panic(r)
	}
	Run()
}
