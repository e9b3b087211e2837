package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentmail/tmux"
)

// agentEnv names the agent explicitly, for clients that start agentmail
// with a filtered environment (no $TMUX_PANE) or with the wrong one.
const agentEnv = "AGENTMAIL_AGENT"

// socketEnv names the tmux server by its socket, for clients that start
// agentmail with a filtered environment (no $TMUX), or in a container that
// has the host's tmux socket mounted.
const socketEnv = "AGENTMAIL_TMUX_SOCKET"

// identityWait bounds the tmux questions that resolve a named agent.
const identityWait = 5 * time.Second

// identity is what the command line says about the caller: the agent's
// window name (--agent) and the socket of its tmux server (--tmux-socket).
// An empty field falls back to its environment variable.
type identity struct {
	agent  string
	socket string
}

// flags adds --agent and --tmux-socket to fs.
func (id *identity) flags(fs *flag.FlagSet) {
	fs.StringVar(&id.agent, "agent", "", "")
	fs.StringVar(&id.socket, "tmux-socket", "", "")
}

// callerServer is the tmux server that the caller names.
type callerServer struct {
	client *tmux.Client
	// session is the id ("$N") of the session $TMUX names, and "" when
	// $TMUX is not set: then only the socket is known.
	session string
	// from says where client.Socket came from ("--tmux-socket" or
	// "$AGENTMAIL_TMUX_SOCKET"), "" when it came from $TMUX.
	from string
}

// findServer finds the tmux server of the caller. Its socket is socket
// (--tmux-socket), else $AGENTMAIL_TMUX_SOCKET, else the one in $TMUX;
// one that $TMUX contradicts is refused, naming both, since which of the
// two is meant cannot be known. The client's Pane is $TMUX_PANE when that
// is set. It runs no tmux command.
func findServer(getenv func(string) string, socket string) (*callerServer, error) {
	from := "--tmux-socket"
	if socket == "" {
		socket, from = getenv(socketEnv), "$"+socketEnv
	}
	if socket == "" {
		c, err := tmux.ServerFromEnv(getenv)
		if err != nil {
			return nil, err
		}
		_, session := splitTMUX(getenv("TMUX"))
		return &callerServer{client: c, session: session}, nil
	}
	var srv *callerServer
	if tmuxVar := getenv("TMUX"); tmuxVar != "" {
		c, err := tmux.ServerFromEnv(getenv)
		if err != nil {
			return nil, err
		}
		tmuxSocket, session := splitTMUX(tmuxVar)
		if !sameFile(socket, tmuxSocket) {
			return nil, fmt.Errorf("the tmux socket is %s (%s), but $TMUX names the socket %s: unset one of them, or make them agree", socket, from, tmuxSocket)
		}
		c.Socket = socket
		srv = &callerServer{client: c, session: session, from: from}
	}
	// A socket that is not there is said so plainly, rather than as the
	// tmux server being gone.
	if _, err := os.Stat(socket); err != nil {
		return nil, fmt.Errorf("%w: no tmux server on the socket %s (%s): %v", tmux.ErrNotInTmux, socket, from, err)
	}
	if srv != nil {
		return srv, nil
	}
	c := &tmux.Client{Socket: socket}
	switch pane := getenv("TMUX_PANE"); {
	case isPaneID(pane):
		c.Pane = pane
	case pane != "":
		return nil, fmt.Errorf("%w: $TMUX_PANE is %q, not a pane id like %%3", tmux.ErrNotInTmux, pane)
	}
	return &callerServer{client: c, from: from}, nil
}

// splitTMUX splits a value of $TMUX, "<socket>,<server pid>,<session id
// number>", into its socket and its session's id ("$N"). A value of
// another shape is all socket, and names no session.
func splitTMUX(v string) (socket, session string) {
	parts := strings.Split(v, ",")
	if len(parts) < 3 {
		return v, ""
	}
	return strings.Join(parts[:len(parts)-2], ","), "$" + parts[len(parts)-1]
}

// sameFile reports whether two paths name the same socket: the same path,
// or the same file reached by another (a symbolic link, a mount).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// onSocket adds to an error of the tmux server which socket it came from,
// when the caller named one.
func (s *callerServer) onSocket(err error) error {
	if err == nil || s.from == "" {
		return err
	}
	return fmt.Errorf("tmux socket %s (%s): %w", s.client.Socket, s.from, err)
}

// where names the windows a name is looked up in, for errors.
func (s *callerServer) where() string {
	if s.session != "" {
		return "the tmux session " + s.session
	}
	return "the tmux server on " + s.client.Socket
}

// agentClient returns the tmux client of the caller, on the server that
// findServer finds. Without a name it is the pane in $TMUX_PANE. With one
// (id.agent, else $AGENTMAIL_AGENT) it is the active pane of the one
// window of that name: in the session that $TMUX names, or, when only the
// socket is known, in any session of the server. A name that no window or
// two windows have is refused, and so is a name that disagrees with
// $TMUX_PANE's window: agentmail never guesses who is calling. A client
// found through the socket alone is pinned to the server that answered
// (see tmux.Client.PinServer), as $TMUX would pin it.
func agentClient(ctx context.Context, getenv func(string) string, id identity) (*tmux.Client, error) {
	srv, err := findServer(getenv, id.socket)
	if err != nil {
		return nil, err
	}
	c := srv.client
	agent := cmp.Or(id.agent, getenv(agentEnv))
	ctx, cancel := context.WithTimeout(ctx, identityWait)
	defer cancel()
	switch {
	case agent == "" && c.Pane == "":
		if srv.session == "" {
			return nil, fmt.Errorf("%w: $TMUX_PANE is not set, and no agent is named (--agent or $%s) on the tmux server on %s", tmux.ErrNotInTmux, agentEnv, c.Socket)
		}
		return nil, fmt.Errorf("%w: $TMUX_PANE is not set", tmux.ErrNotInTmux)
	case agent == "":
	case c.Pane != "":
		sess, err := c.Session(ctx)
		if err != nil {
			return nil, srv.onSocket(err)
		}
		if sess.Self.Name != agent {
			return nil, fmt.Errorf("the agent is named %q, but $TMUX_PANE %s is the window %q: set one of them right, or unset $TMUX_PANE", agent, c.Pane, sess.Self.Name)
		}
	default:
		pane, windows, err := windowPane(ctx, c, srv.session, agent)
		switch {
		case err != nil:
			return nil, srv.onSocket(err)
		case windows == 0:
			return nil, fmt.Errorf("the agent is named %q, but no window of %s has that name", agent, srv.where())
		case windows > 1 && srv.session != "":
			return nil, fmt.Errorf("the agent is named %q, but %d windows of %s have that name: rename all but one of them (tmux rename-window)", agent, windows, srv.where())
		case windows > 1:
			sessions, err := windowSessions(ctx, c, agent)
			if err != nil {
				return nil, srv.onSocket(err)
			}
			return nil, fmt.Errorf("the agent is named %q, but %d windows of %s have that name, in the sessions %s: rename all but one of them (tmux rename-window)", agent, windows, srv.where(), strings.Join(sessions, ", "))
		}
		c.Pane = pane
	}
	if srv.session == "" {
		if err := c.PinServer(ctx); err != nil {
			return nil, srv.onSocket(err)
		}
	}
	return c, nil
}

// windowPane finds the windows named name, exactly, in a tmux session
// ("$N"), or in every session of the server when session is "", and
// returns how many there are and, when there is one, its active pane. A
// name that two windows have is nobody's address: callers refuse it.
func windowPane(ctx context.Context, c *tmux.Client, session, name string) (pane string, windows int, err error) {
	panes, err := c.ListPanes(ctx, session)
	if err != nil {
		return "", 0, err
	}
	found := map[string]string{} // window id → its active pane, or its first
	for _, p := range panes {
		if p.WindowName != name {
			continue
		}
		if _, seen := found[p.Window]; !seen || p.Active {
			found[p.Window] = p.ID
		}
	}
	for _, id := range found {
		pane = id
	}
	return pane, len(found), nil
}

// windowSessions returns the ids of the sessions that hold a window named
// name, sorted, each once, for the error that refuses a name that windows
// of several sessions share.
func windowSessions(ctx context.Context, c *tmux.Client, name string) ([]string, error) {
	panes, err := c.ListPanes(ctx, "")
	if err != nil {
		return nil, err
	}
	var sessions []string
	for _, p := range panes {
		if p.WindowName != name {
			continue
		}
		s, err := c.SessionOf(ctx, p.ID)
		if err != nil && !errors.Is(err, tmux.ErrNotInTmux) {
			return nil, err
		}
		if s != "" && !slices.Contains(sessions, s) {
			sessions = append(sessions, s)
		}
	}
	slices.Sort(sessions)
	return sessions, nil
}

// osAgentClient is agentClient for this process.
func osAgentClient(ctx context.Context, id identity) (*tmux.Client, error) {
	return agentClient(ctx, os.Getenv, id)
}
