package main

import (
	"context"
	"fmt"

	"agentmail/tools"
)

var threadCmd = &command{
	summary: "Show a whole thread as Markdown",
	usage:   "agentmail thread ID",
	help: `Print the thread with this id (the id of its first message, shown as
"Thread:" by receive and in the inbox) as Markdown, oldest message first:
each message with its sender, time and body. Only threads you sent or
received a message of are shown. Nothing is marked read. MCP clients read
the same text as the resource agentmail://threads/ID.`,
	run: runThread,
}

func runThread(ctx context.Context, e *env, args []string) error {
	pos, err := parseArgs(newFlags("thread"), args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("missing thread id")
	case len(pos) > 1:
		return usagef("unexpected argument %q", pos[1])
	}
	if remote() {
		return threadRemote(ctx, e, pos[0])
	}
	th, err := e.service("warning: ").Thread(ctx, pos[0])
	if err != nil {
		return fmt.Errorf("thread %q: %w", pos[0], err)
	}
	text := tools.ThreadText(th)
	if isTerminal(e.stdout) {
		text = visibleControls(text)
	}
	fmt.Fprint(e.stdout, text)
	return nil
}
