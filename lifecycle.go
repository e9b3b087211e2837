package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"agentmail/tmux"
	"agentmail/tools"
)

// serverLife is what ends an MCP server, of any transport: SIGTERM or
// SIGINT, a clean stop (status 0, after answering what it has read), and
// the loss of the tmux pane it serves from (status 1, at once: with
// tools.ErrTmuxGone as the cause, calls in progress get no grace period).
type serverLife struct {
	sigs chan os.Signal
	logf func(format string, args ...any)
}

// startLife handles the signals that stop a server from now on, so that
// one that comes while it starts, or while the first requests are
// answered, stops it as cleanly as any later one.
func startLife(logf func(format string, args ...any)) *serverLife {
	l := &serverLife{sigs: make(chan os.Signal, 1), logf: logf}
	signal.Notify(l.sigs, os.Interrupt, syscall.SIGTERM)
	return l
}

// watch returns a context that ends on a signal, or with ErrTmuxGone when
// the watchdog finds client's pane gone, and what releases it.
func (l *serverLife) watch(ctx context.Context, client *tmux.Client) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var changes <-chan struct{}
	if client.Control != nil {
		changes = client.Control.Changes()
	}
	go func() {
		select {
		case <-l.sigs:
			cancel(nil)
		case <-ctx.Done():
		}
	}()
	go func() {
		if err := tools.Watch(ctx, client.Alive, tools.WatchInterval, tools.WatchRecheck, changes); err != nil {
			cancel(err)
		}
	}()
	return ctx, func() {
		signal.Stop(l.sigs)
		cancel(nil)
	}
}

// exit turns how a server ended into the command's result.
func (l *serverLife) exit(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, tools.ErrTmuxGone) {
		l.logf("%v; exiting", cause)
		return &exitError{code: 1}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		l.logf("%v", err)
		return &exitError{code: 1}
	}
	return nil
}
