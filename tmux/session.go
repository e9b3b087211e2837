package tmux

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
)

// Window is one tmux window of the caller's session.
type Window struct {
	ID   string // the window id, "@N"; stable for the window's lifetime
	Name string // the window name exactly as tmux printed it; the agent's address
	Pane string // a pane id, "%N": the window's active pane (the caller's own pane in Session.Self)
}

// Session describes the caller's window and the session that holds it.
type Session struct {
	// Self is the window that holds the client's pane. Self.Pane is that
	// pane, which need not be the window's active pane.
	Self Window

	// Windows lists every window of the session once, in tmux order, Self's
	// window included. Each entry's Pane is that window's active pane. Names
	// are verbatim: they may be empty or repeated, and may hold spaces, tabs,
	// newlines or any other byte tmux accepts.
	Windows []Window
}

// paneFormat is the row list-panes prints for each pane after the marker.
// The name comes last because it is the only field that may contain
// anything, spaces and newlines included, so everything after the third
// space of a row is the name.
const paneFormat = "#{pane_id} #{window_id} #{pane_active} #{window_name}"

// Session returns the caller's window and all windows of its session, asking
// tmux with a single list-panes command about the session that holds the
// client's pane, never about whatever client happens to be attached. With an
// open control connection, a pane of the session it is attached to is
// answered from the list of that session's panes that it keeps while tmux
// reports no change (see listing).
//
// When the pane, its session or the server is gone the error wraps
// ErrNotInTmux. An empty name for the caller's own window is an error too: an
// agent must never act under an empty identity.
func (c *Client) Session(ctx context.Context) (*Session, error) {
	if !isPaneID(c.Pane) {
		return nil, fmt.Errorf("%w: %q is not a pane id like %%3", ErrNotInTmux, c.Pane)
	}
	// One time limit for the whole question, so that a connection that
	// stops answering leaves the process asked instead no more time.
	ctx, cancel := context.WithTimeoutCause(ctx, queryTimeout, errNoAnswer)
	defer cancel()
	if s, ok := c.listedSession(ctx); ok {
		return s, nil
	}
	rows, err := c.paneRows(ctx, "pane "+c.Pane, "-s", "-t", c.Pane)
	if err != nil {
		return nil, err
	}
	return buildSession(rows, c.Pane)
}

// paneRows runs list-panes over scope (its flags and target; what names the
// target in errors) and parses the rows. tmux prints window names raw, so a
// name can contain a newline followed by something that looks like the next
// row; a random marker at the start of every row cannot be forged by a name
// chosen in advance. With ServerPID set, each row carries the server's pid
// after the marker, and rows of another server are refused as the server
// being gone.
func (c *Client) paneRows(ctx context.Context, what string, scope ...string) ([]paneRow, error) {
	marker := rand.Text()
	format, rowStart := marker+paneFormat, marker
	if c.ServerPID != "" {
		format, rowStart = marker+"#{pid},"+paneFormat, marker+c.ServerPID+","
	}
	out, err := c.query(ctx, append(append([]string{"list-panes"}, scope...), "-F", format)...)
	if err != nil {
		return nil, classifyTarget(err, what)
	}
	if rest, ok := strings.CutPrefix(out, marker); ok && c.ServerPID != "" {
		// The first row's pid stands for all: one server printed them.
		pid, _, _ := strings.Cut(rest, ",")
		if err := c.sameServer(pid); err != nil {
			return nil, err
		}
		rowStart = marker + pid + ","
	}
	rows, err := parsePanes(out, rowStart)
	if err != nil {
		return nil, fmt.Errorf("tmux list-panes %s: %w", strings.Join(scope, " "), err)
	}
	return rows, nil
}

// paneRow is one pane as list-panes reported it.
type paneRow struct {
	pane       string // "%N"
	window     string // "@N"
	paneActive bool
	name       string // the window name, verbatim
}

// parsePanes parses the output of list-panes run with the format
// marker+paneFormat. Each row starts with marker, and the output ends with a
// single newline, so rows are separated by "\n"+marker. Empty output yields no
// rows. Anything else that does not have this shape is an error, so that a
// change in tmux's output is noticed rather than misread.
func parsePanes(out, marker string) ([]paneRow, error) {
	if out == "" {
		return nil, nil
	}
	if marker == "" {
		return nil, errors.New("empty row marker")
	}
	body, ok := strings.CutPrefix(out, marker)
	if !ok {
		return nil, fmt.Errorf("output does not start with the row marker: %q", clip(out))
	}
	body, ok = strings.CutSuffix(body, "\n")
	if !ok {
		return nil, fmt.Errorf("output does not end with a newline: %q", clip(out))
	}
	var rows []paneRow
	for _, line := range strings.Split(body, "\n"+marker) {
		row, err := parsePaneRow(line)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// parsePaneRow parses one row, without its marker, as printed by paneFormat.
func parsePaneRow(line string) (paneRow, error) {
	f := strings.SplitN(line, " ", 4)
	if len(f) != 4 {
		return paneRow{}, fmt.Errorf("malformed pane row %q", clip(line))
	}
	row := paneRow{pane: f[0], window: f[1], name: f[3]}
	var ok bool
	row.paneActive, ok = parseFlag(f[2])
	if !isPaneID(row.pane) || !isID(row.window, '@') || !ok {
		return paneRow{}, fmt.Errorf("malformed pane row %q", clip(line))
	}
	return row, nil
}

// parseFlag parses a tmux boolean format value, which is "0" or "1".
func parseFlag(s string) (value, ok bool) {
	switch s {
	case "0":
		return false, true
	case "1":
		return true, true
	}
	return false, false
}

// buildSession groups the pane rows of one session into windows, keeping
// tmux's order, and picks the window that holds pane.
func buildSession(rows []paneRow, pane string) (*Session, error) {
	s := &Session{}
	index := make(map[string]int) // window id -> position in s.Windows
	found := false
	for _, r := range rows {
		i, seen := index[r.window]
		if !seen {
			i = len(s.Windows)
			index[r.window] = i
			s.Windows = append(s.Windows, Window{ID: r.window, Name: r.name, Pane: r.pane})
		} else if r.paneActive {
			s.Windows[i].Pane = r.pane
		}
		if r.pane == pane {
			s.Self = Window{ID: r.window, Name: r.name, Pane: pane}
			found = true
		}
	}
	if !found {
		return nil, &goneError{msg: fmt.Sprintf("tmux pane %s not found", pane)}
	}
	if s.Self.Name == "" {
		return nil, fmt.Errorf("tmux window %s, which holds pane %s, has an empty name; an agent needs a name (tmux rename-window -t %s NAME)",
			s.Self.ID, pane, s.Self.ID)
	}
	return s, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
