package tmux

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ServerFromEnv builds a Client for the tmux server named by $TMUX, for a
// caller that acts on the whole server or on a session rather than as an
// agent, such as the mailman. Unlike FromEnv it does not require $TMUX_PANE;
// when $TMUX_PANE is set, it must be a pane id, and the Client's Pane is set
// to it. When $TMUX names no socket, or $TMUX_PANE is set to something else
// than a pane id, the error wraps ErrNotInTmux. It runs no command.
func ServerFromEnv(getenv func(string) string) (*Client, error) {
	tmuxVar := getenv("TMUX")
	switch {
	case tmuxVar == "":
		return nil, fmt.Errorf("%w: $TMUX is not set", ErrNotInTmux)
	case strings.HasPrefix(tmuxVar, ","):
		return nil, fmt.Errorf("%w: $TMUX is %q, which names no tmux socket", ErrNotInTmux, tmuxVar)
	}
	c := &Client{}
	// $TMUX is "<socket>,<server pid>,<session index>"; a pid that is not
	// a positive number (tests write 0) leaves the server unchecked.
	if parts := strings.Split(tmuxVar, ","); len(parts) >= 2 {
		if pid, err := strconv.Atoi(parts[len(parts)-2]); err == nil && pid > 0 {
			c.ServerPID = strconv.Itoa(pid)
		}
	}
	switch pane := getenv("TMUX_PANE"); {
	case isPaneID(pane):
		c.Pane = pane
	case pane != "":
		return nil, fmt.Errorf("%w: $TMUX_PANE is %q, not a pane id like %%3", ErrNotInTmux, pane)
	}
	return c, nil
}

// Pane is one pane of the server and the window that holds it.
type Pane struct {
	ID         string // the pane id, "%N"
	Window     string // the id of the pane's window, "@N"
	WindowName string // the window name exactly as tmux printed it
	Active     bool   // whether the pane is its window's active pane
}

// SessionOf returns the id ("$N") of the session that holds pane. Session
// ids stay the same for a session's lifetime, while its name may change and,
// like a window name, would be resolved by prefix if used as a target. When
// the pane or the server is gone the error wraps ErrNotInTmux; so it does
// when ServerPID is set and another server now answers on the socket.
func (c *Client) SessionOf(ctx context.Context, pane string) (string, error) {
	pid, id, err := c.paneServer(ctx, pane)
	if err != nil {
		return "", err
	}
	if err := c.sameServer(pid); err != nil {
		return "", err
	}
	return id, nil
}

// PinServer sets ServerPID, when it is empty, to the pid of the tmux server
// that holds Pane now. $TMUX carries that pid; a Client built from a socket
// alone has none until it is pinned, and then, like one built from $TMUX,
// takes a server started anew on the same socket for its own being gone.
// It fails with an error that wraps ErrNotInTmux when the pane or the
// server is not there. It sets a field: call it before the Client is
// shared.
func (c *Client) PinServer(ctx context.Context) error {
	pid, _, err := c.paneServer(ctx, c.Pane)
	if err != nil {
		return err
	}
	if err := c.sameServer(pid); err != nil {
		return err
	}
	if c.ServerPID == "" {
		c.ServerPID = pid
	}
	return nil
}

// paneServer asks for the pid of the server and the id of the session
// that hold pane. The pid is "" from a tmux that prints nothing for #{pid}.
func (c *Client) paneServer(ctx context.Context, pane string) (pid, session string, err error) {
	if !isPaneID(pane) {
		return "", "", fmt.Errorf("tmux: %q is not a pane id like %%3", pane)
	}
	out, err := c.query(ctx, "display-message", "-p", "-t", pane, "#{pid} #{session_id}")
	if err != nil {
		return "", "", classifyTarget(err, "pane "+pane)
	}
	// tmux 3.3a answers "display -p -t %N" for a pane that no longer exists
	// with exit status 0 and an empty line, so the exit status alone proves
	// nothing: only a session id counts as an answer. It is the first line:
	// a tmux hook run after the command may print more.
	line, _, _ := strings.Cut(out, "\n")
	pid, session, _ = strings.Cut(line, " ")
	if !isID(session, '$') {
		return "", "", &goneError{msg: fmt.Sprintf("tmux pane %s not found", pane)}
	}
	return pid, session, nil
}

// sameServer checks pid, the #{pid} of an answer, against ServerPID, and
// returns an error that wraps ErrNotInTmux when another server answered:
// the caller's is gone, and another one runs on its socket. Without a
// ServerPID, or from a tmux that prints nothing for #{pid}, there is
// nothing to tell.
func (c *Client) sameServer(pid string) error {
	if c.ServerPID == "" || pid == "" || pid == c.ServerPID {
		return nil
	}
	return &goneError{msg: fmt.Sprintf("tmux server %s is gone (server %s now runs on its socket)", c.ServerPID, pid)}
}

// ListPanes returns the panes of one session, given by its id ("$N"), or of
// every session of the server when session is "", in tmux order. A pane is
// listed once even when its window is linked into several sessions. The
// window names are verbatim, as in Session. When the session or the server
// is gone the error wraps ErrNotInTmux. The session a control connection is
// attached to is answered from the list the connection keeps (see
// listing).
func (c *Client) ListPanes(ctx context.Context, session string) ([]Pane, error) {
	var rows []paneRow
	var err error
	if session == "" {
		rows, err = c.paneRows(ctx, "server", "-a")
	} else {
		rows, err = c.sessionRows(ctx, session)
	}
	if err != nil {
		return nil, err
	}
	panes := make([]Pane, 0, len(rows))
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		if seen[r.pane] {
			continue
		}
		seen[r.pane] = true
		panes = append(panes, Pane{ID: r.pane, Window: r.window, WindowName: r.name, Active: r.paneActive})
	}
	return panes, nil
}

// SessionIn is Session for a caller whose pane must be in session, given
// by its id ("$N"): the windows are that session's. For a pane that
// session does not hold, the error wraps ErrNotInTmux, even when another
// session holds it.
func (c *Client) SessionIn(ctx context.Context, session string) (*Session, error) {
	if !isPaneID(c.Pane) {
		return nil, fmt.Errorf("%w: %q is not a pane id like %%3", ErrNotInTmux, c.Pane)
	}
	rows, err := c.sessionRows(ctx, session)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(rows, func(r paneRow) bool { return r.pane == c.Pane }) {
		return nil, &goneError{msg: fmt.Sprintf("tmux pane %s is not in session %s", c.Pane, session)}
	}
	return buildSession(rows, c.Pane)
}

// sessionRows returns the rows of list-panes for session ("$N"), from the
// list a control connection keeps when it is attached to that session
// (see listing).
func (c *Client) sessionRows(ctx context.Context, session string) ([]paneRow, error) {
	if !isID(session, '$') {
		return nil, fmt.Errorf("tmux: %q is not a session id like $1", session)
	}
	// One time limit for the whole question, as in Session.
	ctx, cancel := context.WithTimeoutCause(ctx, queryTimeout, errNoAnswer)
	defer cancel()
	if rows, of, ok := c.listedRows(ctx); ok && of == session {
		return rows, nil
	}
	return c.paneRows(ctx, "session "+session, "-s", "-t", session)
}

// classifyTarget turns the failure of a command about a target (a pane, a
// session or the whole server, named by what) into an error that wraps
// ErrNotInTmux when tmux said that the target or the server is gone. Other
// failures are returned unchanged.
func classifyTarget(err error, what string) error {
	var re *RunError
	if !errors.As(err, &re) {
		return err
	}
	switch stderr := re.Stderr; {
	case strings.Contains(stderr, "can't find pane"),
		strings.Contains(stderr, "can't find session"):
		return &goneError{msg: fmt.Sprintf("tmux %s not found", what), err: err}
	case strings.Contains(stderr, "no server running on"),
		strings.Contains(stderr, "error connecting to"),
		// Seen when a command races with kill-server.
		strings.Contains(stderr, "server exited unexpectedly"):
		return &goneError{msg: "tmux server is gone", err: err}
	}
	return err
}
