package main

import (
	"agentmail/tools"
	"context"
	"fmt"
)

var recipientsCmd = &command{
	summary: "List the agents you can message",
	usage:   "agentmail recipients",
	help: `List the windows of your tmux session, one a line, without the names in
.agentmailignore. Your own window is always listed, as "<name> [you]". A
name that several windows have is listed once, as "<name> [N windows:
unreachable]" (names that differ only in letter case count as one): mail
cannot be sent to it until all but one are renamed. When your own window's name is one of
these, recipients fails and says so, as send and receive do. When nobody
else is in the session, a last line says so: "No other agents in this
session". The MCP tool list-recipients gives the same text.`,
	run: func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(newFlags("recipients"), args); err != nil {
			return err
		}
		if remote() {
			return recipientsRemote(ctx, e)
		}
		list, err := e.service("warning: ").Recipients(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, tools.RecipientsText(list))
		return nil
	},
}
