package main

import (
	"agentmail/mailbox"
	"agentmail/tools"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

var sendCmd = &command{
	summary: "Send a message to another agent",
	usage:   "agentmail send [-r NAME]... [-m TEXT] [--reply-to ID] [NAME] [TEXT]",
	help: `Send a message to the agent in another tmux window of your session.

The recipient and the message may be given as arguments or with -r and -m.
With -r given more than once, each recipient gets its own message, all in
one thread, and a line "Message #<ID> sent to <name>" each; nothing is sent
unless every name is a recipient.
With no message argument, the message is read from standard input when it
is not a terminal; one trailing newline is removed. A message is at most
65536 bytes. A recipient whose name starts with "-" is given with -r or
after "--". A mailbox that another process keeps locked for 5 seconds
fails the send, and nothing is stored.

Flags:
  -r, --recipient NAME   the recipient's window name; again for another
  -m, --message TEXT     the message
  --reply-to ID          answer the message with this id (one you received
                         or sent): the answer joins its thread

Examples:
  agentmail send bob "Tests pass on main"
  agentmail send -r bob -m "Tests pass on main"
  agentmail send -r bob -r carol "Release is tagged"
  git diff | agentmail send bob
  agentmail send --reply-to 019ac5b2-7e1c-7a3e-9d52-3f0c1b2a4d5e bob "Done"`,
	run: runSend,
}

// names is a flag given once per recipient.
type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }
func (n *names) repeatable()        {}

func runSend(ctx context.Context, e *env, args []string) error {
	fs := newFlags("send")
	var message, replyTo string
	var to names
	fs.StringVar(&replyTo, "reply-to", "", "")
	fs.Var(&to, "r", "")
	fs.Var(&to, "recipient", "")
	fs.StringVar(&message, "m", "", "")
	fs.StringVar(&message, "message", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	haveMessage, haveRecipient := false, false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "m", "message":
			haveMessage = true
		case "r", "recipient":
			haveRecipient = true
		}
	})
	if haveRecipient && slices.Contains(to, "") {
		// Not "no -r": the next argument would be taken for a recipient
		// that was never meant as one.
		return usagef("empty recipient given with -r")
	}
	if len(to) == 0 {
		if len(pos) == 0 {
			return usagef("missing recipient")
		}
		to, pos = names{pos[0]}, pos[1:]
	}
	if !haveMessage && len(pos) > 0 {
		message, pos, haveMessage = pos[0], pos[1:], true
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	var svc *tools.Service
	if !remote() {
		if svc = e.service("warning: "); svc.Term == nil {
			return svc.TermErr
		}
	}
	if !haveMessage {
		if isTerminal(e.stdin) {
			return usagef("no message provided")
		}
		if message, err = readMessage(e.stdin); err != nil {
			return err
		}
		if message == "" {
			return usagef("no message provided")
		}
	}
	if svc == nil {
		return sendRemote(ctx, e, to, message, replyTo)
	}
	// Looked at before the message is stored: a hook that the message
	// wakes ends at once, and would then look like no hook at all.
	waiting := svc.Waiting(ctx, to)
	ms, err := svc.SendAll(ctx, to, message, replyTo)
	if len(ms) > 0 {
		if _, werr := fmt.Fprintln(e.stdout, tools.SentAllText(ms, waiting)); werr != nil && err == nil {
			// Said on stderr, so that the stored message is not sent again.
			return fmt.Errorf("message #%s was stored, but writing to standard output failed: %w", ms[0].ID, werr)
		}
	}
	return err
}

// readMessage reads a message from r and trims one trailing newline ("\n" or
// "\r\n"). It reads no more than the limit, one newline and a byte: enough
// for Send to tell a message that is too long.
func readMessage(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, mailbox.MaxMessageSize+3))
	if err != nil {
		return "", fmt.Errorf("reading the message from standard input: %w", err)
	}
	if line, ok := bytes.CutSuffix(b, []byte("\n")); ok {
		b = bytes.TrimSuffix(line, []byte("\r"))
	}
	return string(b), nil
}

// isTerminal reports whether stream, standard input or an output, is a
// terminal: a character device that is not /dev/null, which scripts use to
// mean "no input" or "no output".
func isTerminal(stream any) bool {
	fi, ok := streamInfo(stream)
	return ok && fi.Mode()&os.ModeCharDevice != 0 && !isNullDevice(fi)
}

// isNull reports whether the output stream is a device that discards what
// is written to it: /dev/null, or another node of the same device (a
// container's, a chroot's), or /dev/zero. /dev/null is also what the Go
// runtime puts in place of a standard output or error that was closed when
// the program started ("agentmail receive >&-").
func isNull(stream any) bool {
	fi, ok := streamInfo(stream)
	if !ok {
		return false
	}
	dev, isDev := deviceOf(fi)
	for _, sink := range []string{os.DevNull, "/dev/zero"} {
		si, err := os.Stat(sink)
		if err != nil {
			continue
		}
		if d, ok := deviceOf(si); os.SameFile(fi, si) || isDev && ok && d == dev {
			return true
		}
	}
	return false
}

// streamInfo describes the file behind stream, if it is one.
func streamInfo(stream any) (fs.FileInfo, bool) {
	if o, ok := stream.(*outputWriter); ok {
		stream = o.w
	}
	f, ok := stream.(*os.File)
	if !ok {
		return nil, false
	}
	fi, err := f.Stat()
	return fi, err == nil
}

func isNullDevice(fi fs.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}
