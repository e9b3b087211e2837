package main

import (
	"agentmail/mailbox"
	"agentmail/tools"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

var cleanupCmd = &command{
	summary: "Remove stale state entries, old read messages and empty mailboxes",
	usage:   "agentmail cleanup [--stale-hours N] [--delivered-hours N] [--dry-run]",
	help: `Remove from the project's .agentmail/:
  - state entries of windows that are gone: no session of the tmux server
    named by $AGENTMAIL_TMUX_SOCKET or $TMUX has a window of that name
    (not checked outside tmux),
  - ready state entries neither updated nor rung within --stale-hours
    (default 48);
    work and offline entries stay while their window may be there, so
    that the mailman goes on leaving those agents alone,
  - the later entries of a name that has more than one: only the first
    counts, here and in the earlier tool,
  - read messages older than --delivered-hours (default 2); messages
    without a creation time are kept, unread messages are never removed,
  - mailboxes left empty.
--dry-run prints exactly what a real run would remove, and removes nothing.

A file that another process keeps locked for 5 seconds is left untouched,
with a warning, and the rest is cleaned; the exit status is still 0.`,
	run: runCleanup,
}

// maxCleanupHours is the largest threshold cleanup accepts.
const maxCleanupHours = 1_000_000

// parseHours reads a cleanup threshold, the value of flag, as people write
// hours: in decimal, so that 010 is ten (flag.Int would read it as octal
// eight, and take 0x10 and 1_0 as well). The cap keeps the hours within
// what a duration can hold: past it they would wrap around to a small
// threshold and remove nearly everything.
func parseHours(flag, text string) (int, error) {
	// Atoi reads base 10 only; the trim refuses the sign it allows.
	n, err := strconv.Atoi(text)
	if err != nil || strings.Trim(text, "0123456789") != "" || n < 1 || n > maxCleanupHours {
		return 0, usagef("%s must be a number of hours from 1 to %d (about 114 years), not %s", flag, maxCleanupHours, text)
	}
	return n, nil
}

func runCleanup(ctx context.Context, e *env, args []string) error {
	fs := newFlags("cleanup")
	staleText := fs.String("stale-hours", "48", "")
	deliveredText := fs.String("delivered-hours", "2", "")
	dry := fs.Bool("dry-run", false, "")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	stale, err := parseHours("--stale-hours", *staleText)
	if err != nil {
		return err
	}
	delivered, err := parseHours("--delivered-hours", *deliveredText)
	if err != nil {
		return err
	}
	svc := e.service("warning: ")
	if svc.StoreErr != nil {
		return svc.StoreErr
	}
	opt := mailbox.CleanupOptions{
		StaleAfter:     time.Duration(stale) * time.Hour,
		DeliveredAfter: time.Duration(delivered) * time.Hour,
		DryRun:         *dry,
		// A lock is held for milliseconds, even by another cleanup
		// rewriting a big mailbox: cleanup waits as long as the other
		// commands, then leaves the file for another time.
		LockWait: tools.DefaultLockWait,
	}
	// Which windows exist is only needed to find the entries of windows
	// that are gone; without it those are kept, and the rest goes on.
	listed := time.Now()
	if windows, err := serverWindows(ctx); err == nil {
		opt.Windows, opt.WindowsListedAt = windows, listed
	} else if os.Getenv("TMUX") == "" && os.Getenv(socketEnv) == "" {
		fmt.Fprintln(e.stderr, "warning: not inside tmux: state entries of windows that are gone are not checked")
	} else {
		fmt.Fprintf(e.stderr, "warning: %v: state entries of windows that are gone are not checked\n", err)
	}
	// A file that cannot be cleaned fails the command, but what was done
	// to the others is reported first.
	r, err := svc.Store.Cleanup(opt)
	verb := "removed"
	switch {
	case *dry:
		verb = "to remove"
		fmt.Fprintln(e.stdout, "Cleanup preview (dry-run):")
	case err != nil:
		fmt.Fprintln(e.stdout, "Cleanup incomplete:")
	default:
		fmt.Fprintln(e.stdout, "Cleanup complete:")
	}
	fmt.Fprintf(e.stdout, "  Recipients %s: %d (%d offline, %d stale)\n", verb,
		r.OfflineRecipients+r.StaleRecipients, r.OfflineRecipients, r.StaleRecipients)
	fmt.Fprintf(e.stdout, "  Messages %s: %d\n", verb, r.Messages)
	fmt.Fprintf(e.stdout, "  Mailboxes %s: %d\n", verb, r.Mailboxes)
	// A line the earlier tool never printed, so only when there is news.
	if r.TempFiles > 0 {
		fmt.Fprintf(e.stdout, "  Temporary files left by a crash %s: %d\n", verb, r.TempFiles)
	}
	return err
}

// serverWindows returns the names of the windows of every session of the
// tmux server named by $AGENTMAIL_TMUX_SOCKET or $TMUX: the panes a
// mailman started without $TMUX_PANE rings. An agent is gone only when no
// session has a window of its name, so cleanup asks about them all, not
// only the caller's session; the caller's own pane plays no part, so
// $TMUX_PANE is not read.
func serverWindows(ctx context.Context) ([]string, error) {
	srv, err := findServer(func(key string) string {
		if key == "TMUX_PANE" {
			return ""
		}
		return os.Getenv(key)
	}, "")
	if err != nil {
		return nil, err
	}
	panes, err := srv.client.ListPanes(ctx, "")
	if err != nil {
		return nil, err
	}
	windows := make([]string, 0, len(panes))
	for _, p := range panes {
		windows = append(windows, p.WindowName)
	}
	return windows, nil
}
