package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentmail/mailbox"
	"agentmail/mcpclient"
	"agentmail/tools"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// A watch through a hub reads the hub's inbox view, unread mail only,
// every remotePoll: the view marks nothing read, so the watch takes
// nothing, as locally. A subscription would tell sooner, but needs a
// stream that stays open for the hour a wake hook waits, through every
// proxy between; a poll is one short request, and a wake within seconds
// is soon enough for an agent the mailman would ring once a minute.
const remotePoll = 2 * time.Second

// remoteAnnounced is how many announced ids a wake hook's record keeps.
const remoteAnnounced = 1000

// watchRemote waits for mail through the hub, as watch does locally: with
// hook, until there is unread mail that no watch --hook of this machine
// has announced (a record kept under $XDG_STATE_HOME/agentmail, since the
// hub's record is not reachable through MCP); without, printing a line
// for each message that arrives.
func watchRemote(ctx context.Context, e *env, hook bool, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c, err := hubClient(0)
	if err != nil {
		if hook {
			return nil
		}
		return err
	}
	defer c.Close()
	if hook {
		fresh, err := remoteUnannounced(ctx, c)
		if err != nil || len(fresh) == 0 {
			return nil
		}
		fmt.Fprintln(e.stderr, tools.NoticeText(fresh))
		return &exitError{code: 2}
	}
	seen := map[string]bool{}
	err = pollInbox(ctx, c, func(in tools.Inbox) (bool, error) {
		for _, m := range unseen(in, seen) {
			if _, err := fmt.Fprintln(e.stdout, tools.NoticeText([]mailbox.Message{m})); err != nil {
				return true, err
			}
		}
		return false, nil
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return nil
	}
	return err
}

// pollInbox reads the unread inbox every remotePoll and gives it to look
// until look says done, returns an error, or ctx ends.
func pollInbox(ctx context.Context, c *mcpclient.Client, look func(tools.Inbox) (done bool, err error)) error {
	tick := time.NewTicker(remotePoll)
	defer tick.Stop()
	for {
		var in tools.Inbox
		if err := readHubView(ctx, c, "agentmail://inbox", url.Values{"all": {"false"}}, &in); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if done, err := look(in); done || err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// unseen returns the unread messages of in that seen lacks, oldest first,
// and adds them to seen.
func unseen(in tools.Inbox, seen map[string]bool) []mailbox.Message {
	var fresh []mailbox.Message
	for _, m := range in.Messages {
		if m.Unread && !seen[m.ID] {
			seen[m.ID] = true
			fresh = append(fresh, mailbox.Message{ID: m.ID, From: m.From})
		}
	}
	slices.Reverse(fresh)
	return fresh
}

// remoteUnannounced waits for unread mail that no wake hook of this
// machine announced for the agent, records it as announced, and returns
// it. A later wake hook for the same agent on this machine takes the
// place of this one, which then returns nothing: the places are kept as
// a project's are (mailbox.Store.StartWatcher), in a directory of this
// machine's state for the hub.
func remoteUnannounced(ctx context.Context, c *mcpclient.Client) ([]mailbox.Message, error) {
	var w *mailbox.Watcher
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	var record string
	var fresh []mailbox.Message
	err := pollInbox(ctx, c, func(in tools.Inbox) (bool, error) {
		if w == nil {
			dir, err := hubStateDir(c.URL())
			if err != nil {
				return true, err
			}
			if w, err = mailbox.New(dir).StartWatcher(in.Agent); err != nil {
				return true, err
			}
			record = filepath.Join(dir, in.Agent+".announced")
		}
		if w.Replaced() {
			return true, nil
		}
		var err error
		fresh, err = announceRemote(record, in)
		return len(fresh) > 0, err
	})
	return fresh, err
}

// hubStateDir returns the directory of this machine's state for the hub
// at hubURL, under $XDG_STATE_HOME/agentmail/hubs.
func hubStateDir(hubURL string) (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(hubURL))
	dir = filepath.Join(dir, "agentmail", "hubs", hex.EncodeToString(sum[:8]))
	return dir, os.MkdirAll(dir, 0o700)
}

// announceRemote returns the unread messages of in that the record at
// path lacks, oldest first, and adds them to it.
func announceRemote(path string, in tools.Inbox) ([]mailbox.Message, error) {
	var fresh []mailbox.Message
	err := lockedfile.Transform(path, func(old []byte) ([]byte, error) {
		ids := strings.Fields(string(old))
		seen := map[string]bool{}
		for _, id := range ids {
			seen[id] = true
		}
		fresh = unseen(in, seen)
		for _, m := range fresh {
			ids = append(ids, m.ID)
		}
		ids = ids[max(0, len(ids)-remoteAnnounced):]
		var b bytes.Buffer
		for _, id := range ids {
			b.WriteString(id + "\n")
		}
		return b.Bytes(), nil
	})
	return fresh, err
}
