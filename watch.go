package main

import (
	"context"
	"fmt"
	"time"

	"agentmail/mailbox"
	"agentmail/tools"
)

var watchCmd = &command{
	summary: "Wait for new mail and announce it, taking nothing",
	usage:   "agentmail watch [--hook] [--timeout DURATION]",
	help: `Wait for mail and say who wrote, how many messages and their ids, never
the bodies; nothing is marked read (read with "agentmail receive").

Without --hook, print one line on standard output for each message that
arrives, until interrupted or until --timeout.

With --hook, for a wake hook that an assistant runs in the background
(Claude Code's "asyncRewake"): wait until there is unread mail that no
watch --hook has announced yet, print the notice on standard error and
exit 2; exit 0 when --timeout ends, the window goes away, outside tmux or
on any error. Each message is announced once, so the agent is not woken
again and again for the same mail. One watch --hook waits per agent: a new
one takes the place of the one already waiting for the same agent, which
exits 0 at once, printing nothing (it holds the file
.agentmail/watchers/<name>, which the new one replaces).

Flags:
  --hook               the wake-hook form described above
  --timeout DURATION   stop waiting after DURATION (a Go duration or plain
                       seconds); without it, wait until interrupted`,
	run: runWatch,
}

func runWatch(ctx context.Context, e *env, args []string) error {
	fs := newFlags("watch")
	hook := fs.Bool("hook", false, "")
	var timeout durationFlag
	fs.Var(&timeout, "timeout", "")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if remote() {
		return watchRemote(ctx, e, *hook, timeout.d)
	}
	svc := e.service("warning: ")
	if *hook {
		if svc.Store != nil {
			svc.Store.Warnf = nil
		}
		fresh, err := svc.Unannounced(ctx, timeout.d, true, nil)
		if err != nil || len(fresh) == 0 {
			return nil
		}
		fmt.Fprintln(e.stderr, tools.NoticeText(fresh))
		return &exitError{code: 2}
	}
	var deadline time.Time
	if timeout.d > 0 {
		deadline = time.Now().Add(timeout.d)
	}
	seen := map[string]bool{}
	for {
		wait := time.Duration(0)
		if !deadline.IsZero() {
			if wait = time.Until(deadline); wait <= 0 {
				return nil
			}
		}
		fresh, err := svc.Unannounced(ctx, wait, false, seen)
		if err != nil {
			return err
		}
		if len(fresh) == 0 {
			return nil
		}
		for _, m := range fresh {
			if _, err := fmt.Fprintln(e.stdout, tools.NoticeText([]mailbox.Message{m})); err != nil {
				return err
			}
		}
	}
}
