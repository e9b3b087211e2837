package main

import (
	"agentmail/tools"
	"context"
	"encoding/json"
	"io"
)

var statusCmd = &command{
	summary: "Set your availability: ready, work or offline",
	usage:   "agentmail status [--hook codex|claude] ready|work|offline",
	help: `Set your status. "ready" means idle: the mailman rings you when mail
waits. "work" and "offline" mean do not ring; they also reset the time you
were last rung, so that you are rung again when you are next ready.

Outside tmux this does nothing and exits 0, so hooks may call it anywhere.
A state file that another process keeps locked for 5 seconds fails the
change, and nothing is changed.

With --hook, as an assistant's hook runs it, the hook's JSON on standard
input is read for its "session_id", which is recorded with the status: for
--hook codex the mailman then wakes the agent with "codex queue" instead of
typing into its pane.

Flags:
  --hook CLIENT   the status comes from a hook of CLIENT (codex or claude)`,
	run: func(ctx context.Context, e *env, args []string) error {
		fs := newFlags("status")
		hook := fs.String("hook", "", "")
		pos, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if *hook != "" && *hook != "codex" && *hook != "claude" {
			return usagef("unknown --hook %q: use codex or claude", *hook)
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
		if remote() {
			return statusRemote(ctx, pos[0])
		}
		var session string
		if *hook != "" {
			session = hookSession(e.stdin)
		}
		err = e.service("warning: ").SetStatusFrom(ctx, pos[0], *hook, session)
		if tools.NotInTmux(err) {
			return nil
		}
		return err
	},
}

// hookSession reads the JSON a hook gives on standard input and returns
// its session id, or "" when there is none: a hook's input is never a
// reason for the status to fail.
func hookSession(stdin io.Reader) string {
	if stdin == nil || isTerminal(stdin) {
		return ""
	}
	var in struct {
		SessionID string `json:"session_id"`
	}
	data, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil || json.Unmarshal(data, &in) != nil || !validSession(in.SessionID) {
		return ""
	}
	return in.SessionID
}

// validSession reports whether id can be a session id, passed as an
// argument to the assistant later: short, and of letters, digits and
// "-", "_", ".".
func validSession(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
