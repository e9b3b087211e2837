package mailman

import (
	"context"

	"agentmail/tmux"
)

// Tmux is the Terminal of a real tmux server: the panes of one session, or
// of every session of the server when Session is empty.
type Tmux struct {
	Client  *tmux.Client
	Session string // a session id, "$N"; "" means the whole server
}

// Panes lists the panes in scope.
func (t *Tmux) Panes(ctx context.Context) ([]tmux.Pane, error) {
	return t.Client.ListPanes(ctx, t.Session)
}

// Type types text into pane, then presses Enter after the client's
// EnterDelay, even when ctx ends in between (see tmux.Client.Type).
func (t *Tmux) Type(ctx context.Context, pane, text string) error {
	return t.Client.Type(ctx, pane, text)
}

// InputLine returns the line of pane its cursor is on.
func (t *Tmux) InputLine(ctx context.Context, pane string) (string, error) {
	return t.Client.InputLine(ctx, pane)
}
