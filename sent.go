package main

import (
	"context"
	"strconv"

	"agentmail/tools"
)

var sentCmd = &command{
	summary: "Show the messages you sent and how far each got",
	usage:   "agentmail sent [--to NAME] [--limit N] [--json]",
	help: `Show your most recent messages (20 unless --limit says otherwise), newest
first, each with its id, recipient, time, first line and state: "stored"
once sent, "notified" once a wake reached the recipient (a watch --hook
announced it, or the mailman rang), "read" once the recipient received it,
with the time of each. This is the view MCP clients read as the resource
agentmail://sent.

Flags:
  --to NAME      only messages to NAME
  --limit N      at most N messages
  --json         print the view as one JSON object`,
	run: runSent,
}

func runSent(ctx context.Context, e *env, args []string) error {
	fs := newFlags("sent")
	var filter tools.SentFilter
	var limit string
	fs.StringVar(&filter.To, "to", "", "")
	fs.StringVar(&limit, "limit", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 {
			return usagef("invalid --limit %q: give a number of messages, 1 or more", limit)
		}
		filter.Limit = n
	}
	if remote() {
		return sentRemote(ctx, e, filter, *asJSON)
	}
	v, err := e.service("warning: ").Sent(ctx, filter)
	if err != nil {
		return err
	}
	return printView(e, *asJSON, v, tools.SentViewText(v))
}
