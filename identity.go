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
	panes, err := c.ListPanes(ctx, session)
	if err != nil {
		return nil, err
	}
	windows := map[string]string{} // window id → its active pane, or its first
	for _, p := range panes {
		if p.WindowName != agent {
			continue
		}
		if _, seen := windows[p.Window]; !seen || p.Active {
			windows[p.Window] = p.ID
		}
	}
	switch len(windows) {
	case 0:
		return nil, fmt.Errorf("the agent is named %q, but no window of the tmux session %s has that name", agent, session)
	case 1:
		for _, pane := range windows {
			c.Pane = pane
		}
		return c, nil
	}
	return nil, fmt.Errorf("the agent is named %q, but %d windows of the tmux session %s have that name: rename all but one of them (tmux rename-window)", agent, len(windows), session)
}

// osAgentClient is agentClient for this process.
func osAgentClient(ctx context.Context, agent string) (*tmux.Client, error) {
	return agentClient(ctx, os.Getenv, agent)
}
