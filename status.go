package main

import (
	"agentmail/tools"
	"context"
)

var statusCmd = &command{
	summary: "Set your availability: ready, work or offline",
	usage:   "agentmail status ready|work|offline",
	help: `Set your status. "ready" means idle: the mailman rings you when mail
waits. "work" and "offline" mean do not ring; they also reset the time you
were last rung, so that you are rung again when you are next ready.

Outside tmux this does nothing and exits 0, so hooks may call it anywhere.
A state file that another process keeps locked for 5 seconds fails the
change, and nothing is changed.`,
	run: func(ctx context.Context, e *env, args []string) error {
		pos, err := parseArgs(newFlags("status"), args)
		if err != nil {
			return err
		}
		switch {
		case len(pos) == 0:
			return usagef("missing status")
		case len(pos) > 1:
			return usagef("unexpected argument %q", pos[1])
		}
		// SetStatus checks the value before it asks tmux. Hooks also run
		// outside tmux, or after their pane is gone: there, status quietly
		// does nothing.
		err = e.service("warning: ").SetStatus(ctx, pos[0])
		if tools.NotInTmux(err) {
			return nil
		}
		return err
	},
}
