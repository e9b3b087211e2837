// Package tmux is agentmail's client for the tmux server that hosts the agents.
//
// An agent is a tmux window and its address is the window name, but names are
// never used to target tmux: tmux resolves "-t NAME" by index first, then by
// exact name, then by prefix and finally by pattern, so "7" can mean the window
// at index 7, "my" can reach "my win", "-x" reads as an offset and "a:b" as
// session:window. This package therefore only ever targets pane ids ("%N"),
// reads names from tmux output, and leaves exact name comparison to Go.
//
// The client runs the tmux binary with the process environment, one process
// a command, or asks its queries through a long-lived control-mode client
// (see Control). A tmux client talks to the server named by the socket path
// in $TMUX, unless the Client names a socket of its own (Socket), which
// every command then gets as "tmux -S PATH": for a caller whose environment
// has no $TMUX. Tests point $TMUX, or Socket, at a private server.
//
// Client is a concrete type on purpose; packages that use it declare the small
// interface they need, and their tests use a fake of that interface.
package tmux

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"agentmail/internal/text"
)

// ErrNotInTmux reports that the caller is not inside tmux. Being inside tmux
// means that $TMUX names a server and $TMUX_PANE names a live pane on it, so
// this error also matches (through errors.Is) the errors returned when the
// caller's pane, its session or the whole server has gone away.
var ErrNotInTmux = errors.New("not running inside tmux")

// Client runs tmux commands on behalf of the agent that owns Pane.
//
// The zero value with Pane set is ready to use. A Client holds no state
// between calls, so it may be used by several goroutines at once.
type Client struct {
	// Bin is the tmux binary to run; "" means "tmux" looked up on $PATH.
	Bin string

	// Socket, when not empty, is the path of the tmux server's socket,
	// given to every tmux command and to the control client as -S. When
	// it is empty, tmux finds the server as it always does: by the socket
	// path in $TMUX, else its default socket.
	Socket string

	// Pane is the caller's own pane id, "%N", normally taken from $TMUX_PANE.
	// Session, Alive and the control connection ask about this pane; Type
	// and ListPanes do not need it.
	Pane string

	// EnterDelay is how long Type waits between typing the text and pressing
	// Enter. Interactive programs such as coding assistants do not always
	// take an Enter that arrives in the same burst as the text as a submit; a
	// short pause lets them see it as a key press of its own. Zero means no
	// pause, which is right for tests and plain line-reading programs.
	EnterDelay time.Duration

	// ServerPID, when not empty, is the pid of the tmux server the caller
	// belongs to, as $TMUX gives it. SessionOf, and with it Alive, then
	// take a pane for the caller's only on that server: a server started
	// anew on the same socket numbers its panes from %0 again, and its %0
	// is somebody else.
	ServerPID string

	// Control, when not nil, runs the queries (display-message, list-panes;
	// see query) through a control-mode connection instead of a process
	// each. Commands that change anything, such as send-keys, always run as
	// a process: a query can be repeated safely if the connection breaks
	// under it.
	Control *Control
}

// FromEnv builds a Client from the tmux variables that getenv returns. It
// takes getenv rather than reading the process environment so that callers
// and tests can pass any environment.
//
// $TMUX must name a socket (tmux writes "<socket>,<pid>,<index>"; a value
// with an empty socket part would silently reach the default server instead)
// and $TMUX_PANE must be a pane id such as "%3". Otherwise FromEnv returns an
// error that wraps ErrNotInTmux and says which variable is wrong. FromEnv runs
// no command: whether the pane is alive is for Session or Alive to find out.
func FromEnv(getenv func(string) string) (*Client, error) {
	c, err := ServerFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if c.Pane == "" {
		return nil, fmt.Errorf("%w: $TMUX_PANE is not set", ErrNotInTmux)
	}
	return c, nil
}

// Alive reports whether the caller's pane, and with it its session and the
// tmux server, still exists. It returns nil when the pane is alive and an
// error that wraps ErrNotInTmux when it is gone. A server whose process
// (ServerPID) has ended is gone without a question to tmux: a tmux client
// started as its server shuts down can take long to fail. Otherwise Alive
// asks SessionOf, which takes only a real answer for one (see there); any
// other failure (the binary is missing, ctx is done) is returned as it
// is, so Alive never reports a pane alive that it could not check.
func (c *Client) Alive(ctx context.Context) error {
	if !isPaneID(c.Pane) {
		return fmt.Errorf("%w: %q is not a pane id like %%3", ErrNotInTmux, c.Pane)
	}
	if c.serverEnded() {
		return &goneError{msg: fmt.Sprintf("tmux server %s is gone", c.ServerPID)}
	}
	_, err := c.SessionOf(ctx, c.Pane)
	return err
}

// serverEnded reports whether the process of ServerPID is known to have
// ended. Where the system cannot tell (no ServerPID, or a system without
// signals), it reports false and leaves the question to tmux.
func (c *Client) serverEnded() bool {
	pid, err := strconv.Atoi(c.ServerPID)
	if err != nil || pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	defer p.Release()
	return errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// Type types text into pane, which must be a pane id ("%N"), and then presses
// Enter as a key of its own, after EnterDelay.
//
// The text is sent with "send-keys -l --" so that it arrives literally: without
// -l tmux would turn words such as Enter or C-c into key presses, and without
// -- a text starting with '-' would be parsed as flags. tmux also reads an
// argument that ends in ';' as a command separator and drops the ';', so a
// final ';' is escaped as "\;", which tmux turns back into ';'. Characters in
// text reach the program in the pane as typed; a newline in text is a line
// break to that program, and may submit the line early.
//
// Type never leaves its text typed without the Enter because ctx ended: text
// left in a prompt would be sent along with whatever is typed there next. When
// ctx has ended before Type starts, it types nothing and returns ctx's error.
// Once it has started, ctx no longer stops it: each of its two commands runs
// to its end, bounded by a timeout of its own (keyTimeout), and a ctx that
// ends during the pause shortens what is left of it to at most lateEnterDelay,
// so that whoever cancelled ctx waits no longer than that for Type to return.
func (c *Client) Type(ctx context.Context, pane, text string) error {
	if !isPaneID(pane) {
		return fmt.Errorf("tmux: cannot type into %q: not a pane id like %%3", pane)
	}
	typing := []string{"send-keys", "-t", pane, "-l", "--", literalArg(text)}
	if err := ctx.Err(); err != nil {
		return &RunError{Args: typing, Err: err}
	}
	if err := c.key(ctx, typing...); err != nil {
		return err
	}
	if c.EnterDelay > 0 {
		timer := time.NewTimer(c.EnterDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			late := time.NewTimer(lateEnterDelay)
			defer late.Stop()
			select {
			case <-timer.C:
			case <-late.C:
			}
		}
	}
	if err := c.key(ctx, "send-keys", "-t", pane, "Enter"); err != nil {
		return fmt.Errorf("tmux: typed into pane %s but did not press Enter: %w", pane, err)
	}
	return nil
}

// keyTimeout bounds each send-keys command of Type. Type does not let its
// context stop them (see there), so this is what keeps a tmux server that
// stopped answering from holding Type forever.
const keyTimeout = 2 * time.Second

// lateEnterDelay is the most that Type still waits of its EnterDelay after its
// context has ended. It lets a ring finish with the pause that makes its Enter
// a key press of its own (the default pause is shorter), while a caller that
// cancels gets Type back within about a second however long EnterDelay is.
const lateEnterDelay = time.Second

// key runs one send-keys command of Type to its end even when ctx ends, for
// at most keyTimeout.
func (c *Client) key(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyTimeout)
	defer cancel()
	_, err := c.exec(ctx, args...)
	return err
}

// queryTimeout bounds each command that only reads. tmux answers in
// milliseconds; a server that has not answered by then has stopped (a
// suspended process, say), and no command, hook or tool call may hang on
// it. A variable, so that tests can shorten it.
var queryTimeout = 5 * time.Second

// errNoAnswer is the cause of a query that tmux did not answer in time.
var errNoAnswer = errors.New("tmux did not answer in time; is its server stopped?")

// query runs a tmux command that only reads, such as display-message or
// list-panes, on the control connection when there is one (it can be
// repeated as a process if the connection breaks under it), and as a
// process otherwise, for at most queryTimeout.
func (c *Client) query(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, queryTimeout, errNoAnswer)
	defer cancel()
	if c.Control != nil {
		out, err := c.Control.run(ctx, c, args)
		if !errors.Is(err, errNoControl) {
			return out, err
		}
	}
	return c.exec(ctx, args...)
}

// exec runs tmux with args as a process and returns its standard output. A
// failure is always a *RunError carrying the argv and the trimmed standard
// error, because tmux explains itself only on standard error.
func (c *Client) exec(ctx context.Context, args ...string) (string, error) {
	args = c.argv(args...)
	cmd := exec.CommandContext(ctx, cmp.Or(c.Bin, "tmux"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// A tmux client hands its output to the server, so a client killed
	// because ctx ended can leave its pipes open in a server that has
	// stopped: Run must not wait for them long.
	cmd.WaitDelay = pipeWait
	if err := cmd.Run(); err != nil {
		// A process killed because ctx ended reports only "signal: killed";
		// the context's error says why, and lets callers test for it.
		if ctx.Err() != nil {
			err = contextError(ctx)
		}
		return "", &RunError{Args: args, Err: err, Stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// argv is args as the tmux binary takes them: after "-S Socket" when the
// Client names a socket.
func (c *Client) argv(args ...string) []string {
	if c.Socket == "" {
		return args
	}
	return append([]string{"-S", c.Socket}, args...)
}

// contextError is the error of ctx, which has ended, with its cause when
// that says more (errNoAnswer).
func contextError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != err {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}

// pipeWait bounds how long exec waits for a tmux process's output pipes to
// close after the process has ended.
const pipeWait = 200 * time.Millisecond

// goneError reports that the caller's pane or the tmux server no longer
// exists. It matches ErrNotInTmux and, when a command failed, unwraps to that
// command's *RunError too.
type goneError struct {
	msg string
	err error // may be nil: tmux can report a missing pane with success
}

func (e *goneError) Error() string {
	if e.err == nil {
		return e.msg
	}
	return e.msg + ": " + e.err.Error()
}

func (e *goneError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrNotInTmux}
	}
	return []error{ErrNotInTmux, e.err}
}

// RunError is the error of a tmux command that failed. It keeps everything
// needed to understand the failure without running the command again.
type RunError struct {
	Args   []string // the arguments after the tmux binary
	Err    error    // the exec error, or the context's error when ctx ended
	Stderr string   // what tmux wrote on standard error
}

// Error prints the command, the exit status and tmux's message on one line,
// for example "tmux list-panes -s -t %9 -F …: exit status 1: can't find pane: %9".
// A format given with -F is shown as "…": it is the package's own, holds a
// random marker and would only hide the part that matters.
func (e *RunError) Error() string {
	var b strings.Builder
	b.WriteString("tmux")
	for i, a := range e.Args {
		b.WriteByte(' ')
		if i > 0 && e.Args[i-1] == "-F" {
			b.WriteString("…")
			continue
		}
		b.WriteString(quoteArg(a))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if msg := text.OneLine(e.Stderr); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	return b.String()
}

// Unwrap returns the underlying error, so that errors.Is finds
// context.Canceled, exec.ErrNotFound and the like.
func (e *RunError) Unwrap() error { return e.Err }

// quoteArg shows an argument as is when it is plain, and Go-quoted when it is
// empty or holds spaces, quotes or control characters, so that the command
// stays readable and on one line. Long arguments, typically typed messages,
// are cut short.
func quoteArg(a string) string {
	const max = 40
	if r := []rune(a); len(r) > max {
		a = string(r[:max]) + "…"
	}
	if a == "" || strings.ContainsFunc(a, func(r rune) bool {
		return r <= ' ' || r == '"' || r == '\'' || r == '\\' || r == 0x7f || !strconv.IsPrint(r)
	}) {
		return strconv.Quote(a)
	}
	return a
}

// literalArg prepares text as the last argument of "send-keys -l --". tmux
// treats an argument that ends in ';' as the end of a command and drops that
// ';'; an argument that ends in "\;" instead keeps a literal ';' and loses the
// backslash. Escaping only the final ';' is therefore exact for every text,
// including one that already ends in "\;".
func literalArg(text string) string {
	if strings.HasSuffix(text, ";") {
		return text[:len(text)-1] + `\;`
	}
	return text
}

// isPaneID reports whether s is a tmux pane id: '%' followed by digits.
func isPaneID(s string) bool {
	return isID(s, '%')
}

// isID reports whether s is sigil followed by one or more ASCII digits, the
// shape of tmux pane ("%N"), window ("@N") and session ("$N") ids.
func isID(s string, sigil byte) bool {
	if len(s) < 2 || s[0] != sigil {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ErrPaneInMode is InputLine's error for a pane in a mode, such as copy
// mode while a person scrolls it back: what is typed there goes to the
// mode, not to the program, and the screen shown is not the program's.
var ErrPaneInMode = errors.New("its pane is in a mode (copy mode, say): a person may be scrolling it")

// InputLine returns the text of the line pane's cursor is on, trailing
// spaces removed: where an assistant's prompt box or a shell takes what is
// typed. Comparing it with the line as it was when the agent became ready
// tells a draft a person is typing from an empty prompt. A pane in a mode
// gives ErrPaneInMode.
func (c *Client) InputLine(ctx context.Context, pane string) (string, error) {
	if !isPaneID(pane) {
		return "", fmt.Errorf("tmux: cannot read %q: not a pane id like %%3", pane)
	}
	at, err := c.query(ctx, "display-message", "-p", "-t", pane, "#{pane_in_mode} #{cursor_y}")
	if err != nil {
		return "", err
	}
	mode, y, _ := strings.Cut(strings.TrimSpace(at), " ")
	if mode != "0" {
		return "", ErrPaneInMode
	}
	if _, err := strconv.Atoi(y); err != nil {
		return "", fmt.Errorf("tmux: cursor line of %s: %q is not a number", pane, y)
	}
	line, err := c.query(ctx, "capture-pane", "-p", "-t", pane, "-S", y, "-E", y)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, " \n"), nil
}

// PaneWindow describes the window of a pane as its process sees it: the
// window's id, how many panes it has, the pid of the pane's first process
// and the name of the command in its foreground.
type PaneWindow struct {
	Window  string // "@N"
	Panes   int
	PID     int
	Command string
}

// WindowOf returns the window of pane, as PaneWindow describes it.
func (c *Client) WindowOf(ctx context.Context, pane string) (PaneWindow, error) {
	if !isPaneID(pane) {
		return PaneWindow{}, fmt.Errorf("tmux: %q is not a pane id like %%3", pane)
	}
	out, err := c.query(ctx, "display-message", "-p", "-t", pane, "#{window_id}\t#{window_panes}\t#{pane_pid}\t#{pane_current_command}")
	if err != nil {
		return PaneWindow{}, classifyTarget(err, "pane "+pane)
	}
	f := strings.SplitN(strings.TrimRight(out, "\n"), "\t", 4)
	if len(f) != 4 {
		return PaneWindow{}, fmt.Errorf("tmux: the window of %s: unexpected answer %q", pane, out)
	}
	w := PaneWindow{Window: f[0], Command: f[3]}
	w.Panes, _ = strconv.Atoi(f[1])
	w.PID, _ = strconv.Atoi(f[2])
	return w, nil
}
