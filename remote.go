package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"agentmail/mailbox"
	"agentmail/mcpclient"
	"agentmail/tools"
)

// The commands that act as an agent (send, receive, inbox, thread,
// recipients, status, sent, watch) go to a hub when $AGENTMAIL_URL is
// set: they call its tools and read its resources as an MCP client, and
// print what they print locally, from the same texts and views. Nothing
// local is used then, tmux and .agentmail/ included.

// remote reports whether the commands that act as an agent go to a hub.
func remote() bool { return os.Getenv(mcpclient.URLEnv) != "" }

// hubClient returns the client of the hub that the environment names;
// timeout, when not zero, replaces the time-out of its calls.
func hubClient(timeout time.Duration) (*mcpclient.Client, error) {
	cfg := mcpclient.ConfigFromEnv(os.Getenv)
	cfg.Version = version
	cfg.Timeout = timeout
	return mcpclient.New(cfg)
}

// callHub calls one tool of the hub.
func callHub(ctx context.Context, name string, args any, wait time.Duration) (*mcpclient.ToolResult, error) {
	c, err := hubClient(0)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.CallTool(ctx, name, args, wait)
}

// readHubView reads a view of the hub as JSON into v: the inbox or the
// sent view with the query q.
func readHubView(ctx context.Context, c *mcpclient.Client, base string, q url.Values, v any) error {
	q.Set("format", "json")
	uri := base + "?" + q.Encode()
	text, _, err := c.ReadResource(ctx, uri)
	if errors.Is(err, mcpclient.ErrNotFound) {
		return fmt.Errorf("the hub at %s is too old for this agentmail (it has no %s): update agentmail there", c.URL(), uri)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("the hub at %s gave %s as something else than its view: %v", c.URL(), uri, err)
	}
	return nil
}

// sendRemote sends through the hub and prints what send prints.
func sendRemote(ctx context.Context, e *env, to []string, message, replyTo string) error {
	args := map[string]any{"message": message}
	if len(to) == 1 {
		args["recipient"] = to[0]
	} else {
		args["recipients"] = to
	}
	if replyTo != "" {
		args["reply_to"] = replyTo
	}
	r, err := callHub(ctx, "send", args, 0)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(e.stdout, r.Text); err != nil {
		var sent struct {
			MessageID string `json:"message_id"`
		}
		json.Unmarshal(r.Structured, &sent)
		return fmt.Errorf("message #%s was stored, but writing to standard output failed: %w", sent.MessageID, err)
	}
	return nil
}

// receiveRemote receives through the hub, as receive and receive --hook
// do. The hub marks the message read once its answer has left; a message
// that cannot be written here is lost, so runReceive has refused an output
// that discards what is written.
func receiveRemote(ctx context.Context, e *env, hook bool, wait time.Duration) error {
	args := map[string]any{}
	if wait > 0 {
		args["timeout_seconds"] = wait.Seconds()
	}
	if hook {
		c, err := hubClient(hookRemoteWait)
		if err != nil {
			return nil
		}
		defer c.Close()
		r, err := c.CallTool(ctx, "receive", args, wait)
		if err != nil || noMail(r) {
			return nil
		}
		writeReceived(e.stderr, hookNotice, r.Text)
		return &exitError{code: 2}
	}
	r, err := callHub(ctx, "receive", args, wait)
	if err != nil {
		return err
	}
	return writeReceived(e.stdout, "", r.Text)
}

// hookRemoteWait bounds each call of a hook to the hub: a Stop hook must
// not hold its assistant up for long when the hub does not answer.
const hookRemoteWait = 5 * time.Second

// noMail reports whether a receive's result is that there is no mail.
func noMail(r *mcpclient.ToolResult) bool {
	var s struct {
		From string `json:"from"`
	}
	return json.Unmarshal(r.Structured, &s) != nil || s.From == ""
}

// writeReceived writes a received message as receive does.
func writeReceived(w io.Writer, prefix, text string) error {
	text = prefix + text + "\n"
	if isTerminal(w) {
		text = visibleControls(text)
	}
	_, err := io.WriteString(w, text)
	return err
}

// inboxRemote reads the inbox view from the hub.
func inboxRemote(ctx context.Context, e *env, filter tools.InboxFilter, asJSON bool) error {
	c, err := hubClient(0)
	if err != nil {
		return err
	}
	defer c.Close()
	q := url.Values{"all": {strconv.FormatBool(filter.All)}}
	if filter.From != "" {
		q.Set("from", filter.From)
	}
	var in tools.Inbox
	if err := readHubView(ctx, c, "agentmail://inbox", q, &in); err != nil {
		return err
	}
	return printView(e, asJSON, in, tools.InboxText(in))
}

// sentRemote reads the sent view from the hub.
func sentRemote(ctx context.Context, e *env, filter tools.SentFilter, asJSON bool) error {
	c, err := hubClient(0)
	if err != nil {
		return err
	}
	defer c.Close()
	q := url.Values{}
	if filter.To != "" {
		q.Set("to", filter.To)
	}
	if filter.Limit > 0 {
		q.Set("limit", strconv.Itoa(filter.Limit))
	}
	var v tools.Sent
	if err := readHubView(ctx, c, "agentmail://sent", q, &v); err != nil {
		return err
	}
	return printView(e, asJSON, v, tools.SentViewText(v))
}

// threadRemote reads a thread from the hub.
func threadRemote(ctx context.Context, e *env, id string) error {
	c, err := hubClient(0)
	if err != nil {
		return err
	}
	defer c.Close()
	text, _, err := c.ReadResource(ctx, "agentmail://threads/"+id)
	if errors.Is(err, mcpclient.ErrNotFound) {
		err = tools.ErrThreadNotFound
	}
	if err != nil {
		return fmt.Errorf("thread %q: %w", id, err)
	}
	return printView(e, false, nil, text)
}

// recipientsRemote lists the recipients as the hub sees them.
func recipientsRemote(ctx context.Context, e *env) error {
	r, err := callHub(ctx, "list-recipients", nil, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, r.Text)
	return err
}

// statusRemote sets the status on the hub. A hook's session is not sent:
// the hub's tools take none, and it could not wake a session on this
// machine with it anyway.
func statusRemote(ctx context.Context, status string) error {
	if err := mailbox.ValidStatus(status); err != nil {
		return err
	}
	_, err := callHub(ctx, "status", map[string]any{"status": status}, 0)
	return err
}
