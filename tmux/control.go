package tmux

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Control carries a Client's commands through one long-lived tmux client in
// control mode ("tmux -C") instead of starting a tmux process for each. A
// tmux process costs about 1.8 ms to start and answer here; a command on an
// open control connection takes about 0.1 ms. It is meant for the MCP
// server, which asks tmux at every tool call and every watchdog tick for the
// lifetime of its agent.
//
// The connection is opened by the first command. It attaches to the session
// that holds the Client's pane by the session's id, so the session's current
// window does not change, with -E, so the session's environment is not
// updated from ours, and with the client flags ignore-size (window sizes are
// not affected) and no-output (pane output is not sent to us). It is still an
// attached client: tmux lists it, counts the session as attached and runs
// client-attached and client-detached hooks. The README says so, and how to
// turn it off.
//
// Whenever the connection cannot be used, the Client goes back to a process
// per command, so a failure here never changes an answer, only its speed.
// A connection that cannot be opened (tmux older than 3.2 refuses the
// flags), that does not answer in time, or whose output could not be told
// apart from tmux's framing is given up for good. One that simply ends
// (its client detached, as "tmux attach -d" detaches every other client,
// or the session or server gone) is opened again by a command a second
// later, and after twice as long each time it ends again within a minute.
//
// A Control is safe for use by several goroutines; commands run one at a time.
// The zero value is ready to use.
type Control struct {
	mu     sync.Mutex
	state  controlState
	proc   *exec.Cmd
	stdin  io.WriteCloser
	blocks chan controlBlock // replies to our commands, in order
	exited chan struct{}     // closed when the control client's output ends
	// garbled is set by the reader, before exited is closed, when the
	// output could not be followed: the connection is not tried again.
	garbled bool

	// After a connection ends (detached, say), the next one is opened no
	// sooner than retryAt; the wait doubles while connections keep ending
	// within a minute.
	openedAt  time.Time
	retryAt   time.Time
	retryWait time.Duration
	retryBase time.Duration // the first wait; zero means controlRetry

	changesMu    sync.Mutex
	changes      chan struct{} // see Changes
	changesEnded bool          // changes is closed

	// epoch counts every notification tmux sent on the connection, and
	// every opening and end of a connection: while it stays the same,
	// tmux has reported no change (see listing).
	epoch atomic.Uint64
	// attached is the id ("$N") of the session the connection is
	// attached to: the session whose windows tmux reports changes of.
	attached atomic.Value // string

	// sent counts the commands written on the connection, and answered
	// is the number of the last one answered (under mu): see sync.
	sent     atomic.Uint64
	answered uint64

	listing listing // the panes of the attached session; see listing.go
}

// Changes returns a channel that receives a value when tmux reports, on the
// open connection, a change that may have taken the Client's pane away: a
// window or pane closed, a session created, destroyed or switched. Values
// do not pile up: one waits until it is received, and others meanwhile are
// dropped. Nothing comes before the connection opens; its end sends one
// too. The channel is closed once control mode is given up for good (see
// Control), since from then on no change will be reported. The MCP
// server's watchdog checks at once on a value or the close, and checks
// often once no changes can come.
func (k *Control) Changes() <-chan struct{} {
	k.changesMu.Lock()
	defer k.changesMu.Unlock()
	return k.changesLocked()
}

func (k *Control) changesLocked() chan struct{} {
	if k.changes == nil {
		k.changes = make(chan struct{}, 1)
	}
	return k.changes
}

// changed sends on the Changes channel without waiting.
func (k *Control) changed() {
	k.changesMu.Lock()
	defer k.changesMu.Unlock()
	if k.changesEnded {
		return
	}
	select {
	case k.changesLocked() <- struct{}{}:
	default:
	}
}

// endChanges closes the Changes channel, once.
func (k *Control) endChanges() {
	k.changesMu.Lock()
	defer k.changesMu.Unlock()
	if !k.changesEnded {
		k.changesEnded = true
		close(k.changesLocked())
	}
}

// changeNotices are the control-mode notifications after which the
// Client's pane may be gone.
var changeNotices = []string{"%exit", "%window-close", "%unlinked-window-close", "%layout-change", "%session-changed", "%sessions-changed"}

// isChangeNotice reports whether line is one of changeNotices.
func isChangeNotice(line string) bool {
	name, _, _ := strings.Cut(line, " ")
	for _, n := range changeNotices {
		if name == n {
			return true
		}
	}
	return false
}

// sessionChanged returns the session id of a "%session-changed $N name"
// notice: the connection's client is now attached to that session.
func sessionChanged(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "%session-changed ")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, " ")
	return id, isID(id, '$')
}

type controlState int

const (
	controlUnopened controlState = iota
	controlOpen
	controlClosed
)

// controlBlock is the output of one command: the lines between "%begin" and
// "%end" (failed false) or "%error" (failed true).
type controlBlock struct {
	lines  []string
	failed bool
}

// errNoControl reports that a command was not run on the control connection
// and should be run as a process instead.
var errNoControl = errors.New("tmux control connection unavailable")

// errTmuxFailed is the Err of a RunError for a command that tmux answered
// with %error on the control connection; its message is in Stderr, as it
// would be on a tmux process's standard error.
var errTmuxFailed = errors.New("tmux reported an error")

// controlTimeout bounds the wait for an answer on the connection.
const controlTimeout = 2 * time.Second

// controlRetry is the first wait before a connection that ended is opened
// again, and controlRetryMax the longest.
const (
	controlRetry    = time.Second
	controlRetryMax = 5 * time.Minute
)

// run runs args on the control connection, opening it first if this is the
// first command. It returns errNoControl, having run nothing, when the
// connection is or has just become unusable.
func (k *Control) run(ctx context.Context, c *Client, args []string) (string, error) {
	line, ok := commandLine(args)
	if !ok {
		return "", errNoControl
	}
	// A query ended by its caller is not sent. Once sent, its answer is
	// waited for (see roundTrip), so that a cancelled tool call does not
	// cost the connection.
	if ctx.Err() != nil {
		return "", &RunError{Args: args, Err: contextError(ctx)}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch k.state {
	case controlClosed:
		return "", errNoControl
	case controlUnopened:
		if time.Now().Before(k.retryAt) {
			return "", errNoControl
		}
		if err := k.open(ctx, c); err != nil {
			k.closeLocked()
			return "", errNoControl
		}
	}
	b, err := k.roundTrip(line)
	if err != nil {
		k.endLocked()
		return "", errNoControl
	}
	out := strings.Join(b.lines, "\n")
	if b.failed {
		return "", &RunError{Args: args, Err: errTmuxFailed, Stderr: out}
	}
	if len(b.lines) > 0 {
		out += "\n"
	}
	return out, nil
}

// open starts the control client, attached to the session of c.Pane, and
// checks with a first command that it answers.
func (k *Control) open(ctx context.Context, c *Client) error {
	// The session is asked of a process: this connection is not open yet.
	sessionID, err := (&Client{Bin: c.Bin, Socket: c.Socket}).SessionOf(ctx, c.Pane)
	if err != nil {
		return err
	}
	// attach-session starts a tmux server when none runs on the socket,
	// with the user's configuration; -N keeps a control client opened just
	// as the agent's server goes from starting another one in its place.
	proc := exec.Command(cmp.Or(c.Bin, "tmux"), c.argv("-N", "-C", "attach-session", "-E", "-f", "ignore-size,no-output", "-t", sessionID)...)
	proc.SysProcAttr = controlAttr()
	stdin, err := proc.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := proc.StdoutPipe()
	if err != nil {
		return err
	}
	if err := proc.Start(); err != nil {
		return err
	}
	k.proc, k.stdin = proc, stdin
	// Commands run one at a time, so at most one reply is ever pending;
	// the room for a few more keeps the reader from blocking on a reply
	// that nobody waits for once the connection is given up.
	k.blocks = make(chan controlBlock, 4)
	k.exited = make(chan struct{})
	k.garbled = false
	k.attached.Store(sessionID)
	k.epoch.Add(1)
	go k.read(stdout)
	k.state = controlOpen
	k.openedAt = time.Now()

	b, err := k.roundTrip("display-message -p -t " + c.Pane + " '#{pane_id}'")
	if err != nil {
		return err
	}
	if b.failed || len(b.lines) != 1 || b.lines[0] != c.Pane {
		return fmt.Errorf("tmux control client answered %q", b.lines)
	}
	return nil
}

// roundTrip writes one command line and waits for its block. It does not
// follow the caller's context: a query answers in a fraction of a
// millisecond, and leaving one unread would leave the connection out of
// step. A tmux that does not answer within controlTimeout gives the
// connection up.
func (k *Control) roundTrip(line string) (controlBlock, error) {
	n := k.sent.Add(1)
	if _, err := io.WriteString(k.stdin, line+"\n"); err != nil {
		return controlBlock{}, err
	}
	t := time.NewTimer(controlTimeout)
	defer t.Stop()
	select {
	case b := <-k.blocks:
		k.answered = n
		return b, nil
	case <-k.exited:
		return controlBlock{}, errNoControl
	case <-t.C:
		return controlBlock{}, errors.New("tmux control client did not answer")
	}
}

// read parses the control client's output until it ends. A block of a
// command we sent (flags 1) goes to k.blocks; blocks of other commands, such
// as the attach itself (flags 0), and notifications (lines starting with
// '%' outside a block) are dropped. A block ends only at the "%end" or
// "%error" line that repeats its "%begin" line's time, number and flags, so
// a window name holding a line such as "%end" does not end it early. A name
// made to end it must guess the server's clock (in seconds) and command
// counter; one that lists every guess for some seconds ahead (about 130 KB
// for ten seconds and 600 commands) can, and then cuts one answer short,
// after which the connection is given up and queries go back to processes.
// That answer can miss windows or cut a name at a line break, so one call
// may fail or one ring go astray; mail is filed by name, never by what a
// list of windows says, and a program that can name windows so can type
// into any pane of the server anyway.
// Any other line outside a block means the output can no longer be
// followed, and the connection is given up for good (garbled).
// Notifications in changeNotices, and the end of the output, are passed on
// to Changes. Every notification, and the end, count in epoch.
func (k *Control) read(r io.Reader) {
	defer k.changed()
	defer close(k.exited)
	defer k.epoch.Add(1)
	defer k.stdin.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), 16<<20)
	var (
		inBlock bool
		tag     string // "<time> <number> <flags>" of the open block
		lines   []string
	)
	for sc.Scan() {
		line := sc.Text()
		if !inBlock {
			if t, ok := strings.CutPrefix(line, "%begin "); ok {
				inBlock, tag, lines = true, t, nil
				continue
			}
			if strings.HasPrefix(line, "%") {
				if id, ok := sessionChanged(line); ok {
					k.attached.Store(id)
				}
				k.epoch.Add(1)
				if isChangeNotice(line) {
					k.changed()
				}
				continue
			}
			k.garbled = true
			return
		}
		end, isEnd := strings.CutPrefix(line, "%end ")
		errTag, isErr := strings.CutPrefix(line, "%error ")
		if (isEnd && end == tag) || (isErr && errTag == tag) {
			inBlock = false
			if strings.HasSuffix(tag, " 1") {
				k.blocks <- controlBlock{lines: lines, failed: isErr}
			}
			continue
		}
		lines = append(lines, line)
	}
}

// Close ends the control client, if one was started, and makes the Client
// run a process per command from then on.
func (k *Control) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closeLocked()
}

func (k *Control) closeLocked() {
	k.stopLocked()
	k.state = controlClosed
	k.endChanges()
}

// endLocked ends a connection that failed a command. One whose output
// simply ended may be opened again later (see Control); any other failure
// gives control mode up for good.
func (k *Control) endLocked() {
	// A write can fail a moment before the reader has seen the end of
	// the output: give it that moment.
	ended := false
	select {
	case <-k.exited:
		ended = !k.garbled
	case <-time.After(100 * time.Millisecond):
	}
	if !ended {
		k.closeLocked()
		return
	}
	k.stopLocked()
	k.state = controlUnopened
	base := cmp.Or(k.retryBase, controlRetry)
	if time.Since(k.openedAt) > time.Minute || k.retryWait == 0 {
		k.retryWait = base
	} else {
		k.retryWait = min(2*k.retryWait, controlRetryMax)
	}
	k.retryAt = time.Now().Add(k.retryWait)
}

// stopLocked ends the control client, if one is running.
func (k *Control) stopLocked() {
	if k.state != controlOpen {
		return
	}
	k.epoch.Add(1)
	// End of input makes the control client detach and exit; it is killed
	// if it has not done so shortly.
	k.stdin.Close()
	done := make(chan struct{})
	go func() {
		k.proc.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		k.proc.Process.Kill()
		<-done
	}
}

// commandLine joins args into one line of tmux's command language, each
// argument in single quotes, inside which tmux takes every character as it
// is. An argument holding a single quote or a line break cannot be written
// that way; the command is then run as a process.
func commandLine(args []string) (string, bool) {
	var b bytes.Buffer
	for i, a := range args {
		if strings.ContainsAny(a, "'\n\r") {
			return "", false
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(a)
		b.WriteByte('\'')
	}
	return b.String(), true
}
