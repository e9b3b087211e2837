package tmux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSocketOverridesTMUX checks that a Client with Socket reaches that
// server with every kind of command, processes and the control connection
// alike, while $TMUX names another server: a decoy whose session, window
// and pane ids are the same as the real one's, so that only the window
// name tells them apart.
func TestSocketOverridesTMUX(t *testing.T) {
	ctx := context.Background()
	s, alice := startServer(t)
	bob := s.window("bob", "")
	decoy, decoyPane := startServer(t) // $TMUX now names the decoy
	decoy.tmux("rename-window", "-t", decoyPane, "decoy")
	decoy.tmux("new-window", "-d", "-t", "proj:", "-n", "decoy2", "cat")
	if decoyPane != alice {
		t.Fatalf("the decoy's first pane is %s, not %s as the test needs", decoyPane, alice)
	}

	k := &Control{}
	defer k.Close()
	for _, c := range []*Client{{Socket: s.sock, Pane: alice}, {Socket: s.sock, Pane: alice, Control: k}} {
		sess, err := c.Session(ctx)
		if err != nil {
			t.Fatalf("Session (control %v): %v", c.Control != nil, err)
		}
		if sess.Self.Name != "alice" || len(sess.Windows) != 2 || sess.Windows[1].Name != "bob" {
			t.Errorf("Session (control %v) = %+v, want alice's session with bob", c.Control != nil, sess)
		}
		panes, err := c.ListPanes(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range panes {
			names = append(names, p.WindowName)
		}
		if !slices.Equal(names, []string{"alice", "bob"}) {
			t.Errorf("ListPanes (control %v) = %q, want alice and bob", c.Control != nil, names)
		}
		if err := c.Alive(ctx); err != nil {
			t.Errorf("Alive (control %v) = %v", c.Control != nil, err)
		}
	}
	if k.state != controlOpen {
		t.Errorf("control state %d, want open", k.state)
	}
	if got := s.controlClients(); len(got) != 1 {
		t.Errorf("control clients on the socket's server = %q, want one", got)
	}
	if got := decoy.controlClients(); len(got) != 0 {
		t.Errorf("control clients on $TMUX's server = %q, want none", got)
	}

	c := &Client{Socket: s.sock}
	if err := c.Type(ctx, bob, "by socket"); err != nil {
		t.Fatal(err)
	}
	s.waitCount(bob, "by socket", 2) // cat echoes the line

	// A command that fails shows the socket it was run on.
	_, err := c.ListPanes(ctx, "$99")
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "tmux -S "+s.sock+" list-panes") {
		t.Errorf("ListPanes of a missing session = %v, want a RunError that shows -S %s", err, s.sock)
	}
}

// TestPinServer checks that PinServer learns the pid of the server that
// holds the pane, that a server started anew on the socket then counts as
// the pinned one being gone, and that a socket with no server, or a pane
// that is not there, fails as not in tmux.
func TestPinServer(t *testing.T) {
	ctx := context.Background()
	s, alice := startServer(t)
	t.Setenv("TMUX", "")
	pid := s.tmux("display-message", "-p", "-t", alice, "#{pid}")

	c := &Client{Socket: s.sock, Pane: alice}
	if err := c.PinServer(ctx); err != nil {
		t.Fatal(err)
	}
	if c.ServerPID != pid {
		t.Fatalf("ServerPID = %q after PinServer, want %q", c.ServerPID, pid)
	}
	if err := c.Alive(ctx); err != nil {
		t.Fatal(err)
	}
	s.tmux("kill-server")
	for i := 0; ; i++ {
		err := s.command("-f", "/dev/null", "new-session", "-d", "-s", "work", "-n", "bob", "cat").Run()
		if err == nil {
			break
		}
		if i == 50 {
			t.Fatalf("starting a new server on the socket: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Alive(ctx); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive of the pinned client after the restart = %v, want ErrNotInTmux", err)
	}
	if err := (&Client{Socket: s.sock, Pane: "%99"}).PinServer(ctx); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("PinServer of a missing pane = %v, want ErrNotInTmux", err)
	}
	dir, err := os.MkdirTemp("", "tn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	none := filepath.Join(dir, "none")
	err = (&Client{Socket: none, Pane: alice}).PinServer(ctx)
	if !errors.Is(err, ErrNotInTmux) || !strings.Contains(err.Error(), none) {
		t.Errorf("PinServer on a socket with no server = %v, want ErrNotInTmux naming %s", err, none)
	}
	if _, err := os.Stat(none); err == nil {
		t.Errorf("PinServer started a server on %s", none)
	}
}
