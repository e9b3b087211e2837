package main

import (
	"context"
	"encoding/json"
	"fmt"

	"agentmail/tools"
)

var inboxCmd = &command{
	summary: "Show your mailbox without taking anything",
	usage:   "agentmail inbox [--all] [--from NAME] [--json]",
	help: `Show how many messages are unread, then your newest unread messages (at most
20), newest first, each with its id, sender, time, thread and first line.
Nothing is marked read: read them with "agentmail receive". This is the
view MCP clients read as the resource agentmail://inbox, which shows read
mail too.

Flags:
  --all          show read mail too, unread first
  --from NAME    only mail from NAME
  --json         print the view as one JSON object`,
	run: runInbox,
}

func runInbox(ctx context.Context, e *env, args []string) error {
	fs := newFlags("inbox")
	var filter tools.InboxFilter
	fs.BoolVar(&filter.All, "all", false, "")
	fs.StringVar(&filter.From, "from", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if remote() {
		return inboxRemote(ctx, e, filter, *asJSON)
	}
	in, err := e.service("warning: ").Inbox(ctx, filter)
	if err != nil {
		return err
	}
	return printView(e, *asJSON, in, tools.InboxText(in))
}

// printView prints a view: v as one JSON object with asJSON, its text
// otherwise, with control characters made visible on a terminal.
func printView(e *env, asJSON bool, v any, text string) error {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	if isTerminal(e.stdout) {
		text = visibleControls(text)
	}
	_, err := fmt.Fprint(e.stdout, text)
	return err
}
