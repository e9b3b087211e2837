package main

import (
	"agentmail/mailbox"
	"agentmail/tools"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

var receiveCmd = &command{
	summary: "Read your oldest unread message",
	usage:   "agentmail receive [--wait DURATION] [--hook]",
	help: `Print your oldest unread message and mark it read, or "No unread messages".
Each message is delivered once, even to receivers running at the same time.
A mailbox that another process keeps locked for 5 seconds fails the
receive, and the mail stays unread.

Standard output that discards what is written to it (/dev/null, or
closed) is an error, and the mail stays unread.

Flags:
  --wait DURATION
           with no unread mail, wait up to DURATION for a message to arrive
           (a Go duration such as 30s or 2m, or plain seconds; at most 10m),
           then print "No unread messages". The wait watches the mailbox
           file and costs no CPU.
  --hook   for assistant Stop hooks: print nothing and exit 0 when there is no
           mail, outside tmux or on any error (standard error that is
           /dev/null or closed among them); with mail, print "You got new
           mail" and the message on standard error and exit 2`,
	run: runReceive,
}

func runReceive(ctx context.Context, e *env, args []string) error {
	fs := newFlags("receive")
	hook := fs.Bool("hook", false, "")
	wait := durationFlag{max: tools.MaxWait}
	fs.Var(&wait, "wait", "")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	// The message is written out before it is marked read: one that cannot
	// be written (a full disk, a closed pipe) stays unread. Nor is one
	// written to /dev/null, where it would be lost as surely.
	switch {
	case *hook && isNull(e.stderr):
		return nil
	case !*hook && isNull(e.stdout):
		return errors.New("standard output discards what is written to it (/dev/null, or closed): mail stays unread")
	case remote():
		return receiveRemote(ctx, e, *hook, wait.d)
	}
	svc := e.service("warning: ")
	if *hook {
		// A hook says nothing but the mail, and waits at most hookWait for
		// a mailbox that another process holds: the mail stays for the
		// next time.
		if svc.Store != nil {
			svc.Store.Warnf = nil
		}
		svc.LockWait = hookWait
		ctx, cancel := context.WithTimeout(ctx, hookWait+wait.d)
		defer cancel()
		out := &messageWriter{w: e.stderr, prefix: hookNotice, markWait: hookWait, visible: isTerminal(e.stderr)}
		if m, err := out.receive(ctx, svc, wait.d); err != nil || m == nil {
			return nil
		}
		return &exitError{code: 2}
	}
	out := &messageWriter{w: e.stdout, warn: e.stderr, markWait: tools.DefaultLockWait, visible: isTerminal(e.stdout)}
	m, err := out.receive(ctx, svc, wait.d)
	if err != nil {
		return err
	}
	if m == nil {
		_, err = fmt.Fprintln(e.stdout, tools.ReceivedText(nil))
	}
	return err
}

// hookNotice starts what receive --hook writes, before the message.
const hookNotice = "You got new mail\n"

// deliverWait bounds how long receive keeps a mailbox locked while it
// writes a message out. A write that fails within it leaves the message
// unread. One still going after it (a pipe whose reader does not read)
// goes on with the lock let go and the message unread, so that senders and
// the mailman are not held up by a reader; once it is done, the message is
// marked read. If another receive delivers it meanwhile, it is delivered
// twice, never lost.
const deliverWait = time.Second

// errStillWriting is deliver's error for a write still going after
// deliverWait: the message stays unread for now.
var errStillWriting = errors.New("the message is still being written")

// messageWriter writes the message that receive delivers: prefix, the
// message's text and a newline, in one write.
type messageWriter struct {
	w      io.Writer
	prefix string
	warn   io.Writer // for a warning about a late marking; nil: say nothing
	// markWait bounds a late marking, tmux's answer and the lock included.
	markWait time.Duration
	// visible makes control characters visible (see visibleControls), for
	// a message written to a terminal.
	visible bool

	m    mailbox.Message // the message being written
	done chan struct{}   // closed when the write has returned
	err  error           // the write's error, once done is closed
}

// receive receives the caller's oldest unread message, waiting up to wait
// for one, writes it and returns it, or nil when there is none. The message is marked read only
// once it is written.
func (mw *messageWriter) receive(ctx context.Context, svc *tools.Service, wait time.Duration) (*mailbox.Message, error) {
	m, err := svc.Receive(ctx, wait, mw.deliver)
	if !errors.Is(err, errStillWriting) {
		if werr := mw.wait(); err == nil {
			err = werr
		}
		return m, err
	}
	// The lock is let go: mark the message read once it is written. Its
	// wait starts now, not with ctx's, which may have run out meanwhile.
	if err := mw.wait(); err != nil {
		return nil, err
	}
	m = &mw.m
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mw.markWait)
	defer cancel()
	if err := svc.MarkRead(ctx, m); err != nil && mw.warn != nil {
		fmt.Fprintf(mw.warn, "warning: the message was written but could not be marked read, so it will come again: %v\n", err)
	}
	return m, nil
}

// deliver is the deliver function of Store.Receive: it starts the
// write and waits for it for at most deliverWait.
func (mw *messageWriter) deliver(m *mailbox.Message) error {
	mw.m = *m
	mw.done = make(chan struct{})
	go func() {
		defer close(mw.done)
		text := mw.prefix + tools.ReceivedText(m) + "\n"
		if mw.visible {
			text = visibleControls(text)
		}
		_, mw.err = io.WriteString(mw.w, text)
	}()
	t := time.NewTimer(deliverWait)
	defer t.Stop()
	select {
	case <-mw.done:
		return mw.err
	case <-t.C:
		return errStillWriting
	}
}

// wait waits for a write that deliver started and returns its error.
func (mw *messageWriter) wait() error {
	if mw.done == nil {
		return nil
	}
	<-mw.done
	return mw.err
}

// visibleControls shows the control characters of s other than newline
// and tab, which a terminal would act on, as cat -v does: ESC as ^[, CR as
// ^M, DEL as ^?, and those of U+0080 to U+009F as M-^[ and the like. A
// message from another agent then cannot move the cursor, recolour or
// retitle the terminal, write to the clipboard or hide its own text.
func visibleControls(s string) string {
	isControl := func(r rune) bool { return r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r <= 0x9f) }
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r >= 0x80:
			b.WriteString("M-^")
			b.WriteRune(r - 0x80 ^ 0x40)
		default:
			b.WriteByte('^')
			b.WriteRune(r ^ 0x40)
		}
	}
	return b.String()
}

// hookWait bounds how long receive --hook waits for tmux and for a mailbox
// lock held by another process. A lock is held for milliseconds; a holder
// that takes longer has stopped, and an assistant's hook must not hang on
// it.
const hookWait = time.Second

// durationFlag is a flag's duration: a Go duration ("30s", "2m") or plain
// seconds ("30", "1.5"), from 0 to max (no limit when max is zero).
type durationFlag struct{ d, max time.Duration }

func (f *durationFlag) String() string { return f.d.String() }

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > 1e9 {
			return errors.New("want a duration such as 30s or 2m, or a number of seconds")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 || f.max > 0 && d > f.max {
		if f.max > 0 {
			return fmt.Errorf("want a duration from 0 to %v", f.max)
		}
		return errors.New("want a duration of 0 or more")
	}
	f.d = d
	return nil
}
