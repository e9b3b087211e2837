package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"agentmail/tmux"
)

// agentEnv names the agent explicitly, for clients that start agentmail
// with a filtered environment (no $TMUX_PANE) or with the wrong one.
const agentEnv = "AGENTMAIL_AGENT"

// identityWait bounds the tmux questions that resolve a named agent.
const identityWait = 5 * time.Second

// agentClient returns the tmux client of the caller. Without a name it is
// the pane in $TMUX_PANE. With one (agent, else $AGENTMAIL_AGENT) it is the
// active pane of the one window of that name in the tmux session that
// $TMUX names; a name that no window or two windows have is refused, and so
// is a name that disagrees with $TMUX_PANE's window: agentmail never
// guesses who is calling.
func agentClient(ctx context.Context, getenv func(string) string, agent string) (*tmux.Client, error) {
	if agent == "" {
		agent = getenv(agentEnv)
	}
	if agent == "" {
		return tmux.FromEnv(getenv)
	}
	c, err := tmux.ServerFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, identityWait)
	defer cancel()
	if c.Pane != "" {
		sess, err := c.Session(ctx)
		if err != nil {
			return nil, err
		}
		if sess.Self.Name != agent {
			return nil, fmt.Errorf("the agent is named %q, but $TMUX_PANE %s is the window %q: set one of them right, or unset $TMUX_PANE", agent, c.Pane, sess.Self.Name)
		}
		return c, nil
	}
	// $TMUX is "<socket>,<server pid>,<session id number>".
	parts := strings.Split(getenv("TMUX"), ",")
	session := "$" + parts[len(parts)-1]
	pane, windows, err := windowPane(ctx, c, session, agent)
	switch {
	case err != nil:
		return nil, err
	case windows == 0:
		return nil, fmt.Errorf("the agent is named %q, but no window of the tmux session %s has that name", agent, session)
	case windows > 1:
		return nil, fmt.Errorf("the agent is named %q, but %d windows of the tmux session %s have that name: rename all but one of them (tmux rename-window)", agent, windows, session)
	}
	c.Pane = pane
	return c, nil
}

// windowPane finds the windows named name, exactly, in a tmux session
// ("$N"), and returns how many there are and, when there is one, its
// active pane. A name that two windows have is nobody's address: callers
// refuse it.
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

// osAgentClient is agentClient for this process.
func osAgentClient(ctx context.Context, agent string) (*tmux.Client, error) {
	return agentClient(ctx, os.Getenv, agent)
}
