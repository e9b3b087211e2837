package main

import (
	"context"
	"fmt"
	"io"
)

var helpCmd = &command{
	summary: "Show help for agentmail or one of its commands",
	usage:   "agentmail help [command]",
}

// runHelp is set in init: help lists the command table, which holds help.
func init() { helpCmd.run = runHelp }

func runHelp(ctx context.Context, e *env, args []string) error {
	pos, err := parseArgs(newFlags("help"), args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		printUsage(e.stdout)
		return nil
	case 1:
		cmd := lookup(pos[0])
		if cmd == nil {
			return usagef("unknown command %q", pos[0])
		}
		printHelp(e.stdout, cmd)
		return nil
	}
	return usagef("unexpected argument %q", pos[1])
}

// printUsage prints the overview: what agentmail is and its commands.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `agentmail - mail between AI coding agents in tmux windows

Each agent is a tmux window; its address is the window name. Messages are
stored in .agentmail/ at the project root (the nearest directory with .git,
or $AGENTMAIL_ROOT).

usage: agentmail <command> [arguments]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.cmd.summary)
	}
	fmt.Fprint(w, `
With $AGENTMAIL_URL set (a hub: "agentmail mcp --transport http" elsewhere),
send, receive, watch, inbox, sent, thread, recipients, status and doctor go
to the hub as an MCP client, with $AGENTMAIL_TOKEN, $AGENTMAIL_AGENT and
$AGENTMAIL_CA_FILE; mailman, cleanup, onboard, mcp and web stay local and
work as without it. See docs/remote.md.

Run 'agentmail help <command>' or 'agentmail <command> --help' for details.
Exit status: 0 success, 1 error, 2 not inside tmux, mailman already
running, or 'receive --hook' delivering mail.
`)
}

// printHelp prints one command's help.
func printHelp(w io.Writer, cmd *command) {
	fmt.Fprintf(w, "usage: %s\n", cmd.usage)
	if cmd.help != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.help)
	} else {
		fmt.Fprintf(w, "\n%s.\n", cmd.summary)
	}
}
