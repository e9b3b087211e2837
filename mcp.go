package main

import (
	"agentmail/internal/text"
	"agentmail/mcp"
	"agentmail/tmux"
	"agentmail/tools"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

var mcpCmd = &command{
	summary: "Run the MCP server on standard input and output",
	usage:   "agentmail mcp",
	help: `Serve the Model Context Protocol (JSON-RPC 2.0, one message a line) on
standard input and output, with four tools: send, receive, status and
list-recipients. Logs go to standard error.

It must run inside tmux ($TMUX and $TMUX_PANE set). It exits 0 when its
input ends, and 1 when its tmux pane, session or server goes away (a new
tmux server on the same socket counts as gone).`,
	run: runMCP,
}

func runMCP(ctx context.Context, e *env, args []string) error {
	if err := noArgs(newFlags("mcp"), args); err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "agentmail mcp: %s\n", text.OneLine(fmt.Sprintf(format, args...)))
	}
	client, err := tmux.FromEnv(os.Getenv)
	if err != nil {
		logf("%v", err)
		return &exitError{code: 1}
	}
	// The signals that stop the server cleanly are handled from the start,
	// so that one that comes while the first requests are answered stops
	// it as cleanly as any later one.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	svc := &tools.Service{Term: client}
	svc.Store, svc.StoreErr = e.findStore("agentmail mcp: warning: ")
	if svc.StoreErr != nil {
		logf("warning: %v (tool calls that need the mailbox will fail; the root is found once, at start: restart the server once it is fixed)", svc.StoreErr)
	}
	// The server lives as long as its agent and its live heap is tiny; a
	// lower GC target keeps it at about 6 MB resident instead of 9 after
	// thousands of calls, at a cost too small to see per call. Below 25
	// the runtime's own floor holds it where it is. A GOGC of the user's
	// own stands.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	// The server asks tmux at every tool call and watchdog check for as
	// long as its agent runs: one control-mode connection answers those
	// queries in a tenth of the time a tmux process takes, and reports the
	// changes that may have taken the agent's pane away.
	var changes <-chan struct{}
	if os.Getenv("AGENTMAIL_TMUX_CONTROL") != "off" {
		client.Control = &tmux.Control{}
		defer client.Control.Close()
		changes = client.Control.Changes()
	}
	// What ends the server early: SIGTERM or SIGINT, a clean stop (status
	// 0, after answering what it has read), and the loss of the agent's
	// tmux pane (status 1, at once: with ErrTmuxGone as the cause, calls
	// in progress get no grace period).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-sigs:
			cancel(nil)
		case <-ctx.Done():
		}
	}()
	go func() {
		if err := tools.Watch(ctx, client.Alive, tools.WatchInterval, tools.WatchRecheck, changes); err != nil {
			cancel(err)
		}
	}()
	err = mcp.NewServer(svc, version, logf).Serve(ctx, e.stdin, e.stdout)
	if cause := context.Cause(ctx); errors.Is(cause, tools.ErrTmuxGone) {
		logf("%v; exiting", cause)
		return &exitError{code: 1}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf("%v", err)
		return &exitError{code: 1}
	}
	return nil
}
