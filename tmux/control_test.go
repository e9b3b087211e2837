package tmux

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// controlClients returns the control-mode clients attached to the test's
// server, one "name session" line each.
func (s *server) controlClients() []string {
	s.t.Helper()
	var out []string
	for _, l := range strings.Split(s.tmux("list-clients", "-F", "#{client_control_mode} #{client_name} #{session_name}"), "\n") {
		if rest, ok := strings.CutPrefix(l, "1 "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// TestControlAnswersAsProcesses runs Session and Alive through a control
// connection, with window names that look like tmux's control framing, and
// checks that every answer equals that of a tmux process per command.
func TestControlAnswersAsProcesses(t *testing.T) {
	ctx := context.Background()
	s, alice := startServer(t)
	names := []string{"7", "-dash", "a:b", "my win", "tab\there", "new\nline", "héllo ✉", "\x01ctl",
		"x\n%end 1 2 1", "%begin 1 2 1", "%exit", "%error 0 0 1\n%end", "it's", `back\slash`, "semi;x", "#{pane_id}"}
	panes := []string{alice}
	for _, name := range names {
		panes = append(panes, s.window(name, ""))
	}

	k := &Control{}
	defer k.Close()
	for _, pane := range panes {
		want, err := (&Client{Pane: pane}).Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&Client{Pane: pane, Control: k}).Session(ctx)
		if err != nil {
			t.Fatalf("Session through control for %s: %v", pane, err)
		}
		if got.Self != want.Self || !slices.Equal(got.Windows, want.Windows) {
			t.Errorf("Session through control for %s\n got %#v\nwant %#v", pane, got, want)
		}
	}
	if k.state != controlOpen {
		t.Fatalf("control state %d after the queries, want open", k.state)
	}
	if got := s.controlClients(); len(got) != 1 || !strings.HasSuffix(got[0], " proj") {
		t.Errorf("control clients = %q, want one, on proj", got)
	}

	c := &Client{Pane: panes[3], Control: k}
	if err := c.Alive(ctx); err != nil {
		t.Errorf("Alive through control: %v", err)
	}
	s.tmux("kill-pane", "-t", panes[3])
	if err := c.Alive(ctx); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive through control after kill-pane = %v, want ErrNotInTmux", err)
	}
	if err := (&Client{Pane: "%999", Control: k}).Alive(ctx); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive(%%999) through control = %v, want ErrNotInTmux", err)
	}
	if k.state != controlOpen {
		t.Errorf("control state %d after failed queries, want still open", k.state)
	}

	k.Close()
	if got := s.controlClients(); len(got) != 0 {
		t.Errorf("control clients after Close = %q, want none", got)
	}
	// Closed for good: the next query runs as a process and still answers.
	if _, err := (&Client{Pane: alice, Control: k}).Session(ctx); err != nil {
		t.Errorf("Session after Close: %v", err)
	}
	if got := s.controlClients(); len(got) != 0 {
		t.Errorf("control clients after a query on a closed Control = %q, want none", got)
	}
}

// TestControlLeavesTheSessionAlone checks that attaching the control client
// changes neither the session's current window nor its environment, which
// a plain attach would do (by -t naming a pane, and by update-environment).
func TestControlLeavesTheSessionAlone(t *testing.T) {
	s, alice := startServer(t)
	bob := s.window("bob", "")
	s.tmux("select-window", "-t", s.windowOf(bob))
	s.tmux("set-environment", "-t", "proj", "DISPLAY", ":kept")
	t.Setenv("DISPLAY", ":from-agent")

	k := &Control{}
	defer k.Close()
	if _, err := (&Client{Pane: alice, Control: k}).Session(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.state != controlOpen {
		t.Fatalf("control state %d, want open", k.state)
	}
	if got := s.tmux("display-message", "-p", "-t", "proj", "#{window_name}"); got != "bob" {
		t.Errorf("current window = %q, want bob", got)
	}
	if got := s.tmux("show-environment", "-t", "proj", "DISPLAY"); got != "DISPLAY=:kept" {
		t.Errorf("session environment: %q, want DISPLAY=:kept", got)
	}
}

// TestControlReattachesAfterDetach checks that a connection whose client
// is detached (as "tmux attach -d" detaches every other client) leaves the
// queries to processes, with the same answers, and is opened again after
// a wait, which doubles when it is detached again soon.
func TestControlReattachesAfterDetach(t *testing.T) {
	ctx := context.Background()
	s, alice := startServer(t)
	k := &Control{retryBase: time.Second}
	defer k.Close()
	c := &Client{Pane: alice, Control: k}
	session := func() {
		t.Helper()
		got, err := c.Session(ctx)
		if err != nil {
			t.Fatalf("Session: %v", err)
		}
		if got.Self.Name != "alice" {
			t.Errorf("own name = %q, want alice", got.Self.Name)
		}
	}
	clients := func(want int, when string) {
		t.Helper()
		if got := s.controlClients(); len(got) != want {
			t.Errorf("control clients %s = %q, want %d", when, got, want)
		}
	}
	session()
	clients(1, "at first")
	for i, wait := range []time.Duration{time.Second, 2 * time.Second} {
		s.tmux("detach-client", "-s", "proj")
		for range 3 {
			session()
		}
		if k.state != controlUnopened {
			t.Errorf("detach %d: control state %d, want unopened", i+1, k.state)
		}
		clients(0, fmt.Sprintf("just after detach %d", i+1))
		time.Sleep(wait / 2)
		session()
		clients(0, fmt.Sprintf("half the wait after detach %d", i+1))
		time.Sleep(wait)
		session()
		clients(1, fmt.Sprintf("after the wait after detach %d", i+1))
	}
}

// TestControlCancelledQuery checks that a query whose context has ended
// reports the context's error, as a process would, and leaves the
// connection open for the next one.
func TestControlCancelledQuery(t *testing.T) {
	s, alice := startServer(t)
	k := &Control{}
	defer k.Close()
	c := &Client{Pane: alice, Control: k}
	if _, err := c.Session(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Session(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Session with a cancelled context = %v, want context.Canceled", err)
	}
	if k.state != controlOpen {
		t.Fatalf("control state %d after a cancelled query, want open", k.state)
	}
	before := s.controlClients()
	if _, err := c.Session(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := s.controlClients(); len(after) != 1 || !slices.Equal(before, after) {
		t.Errorf("control clients %q, then %q; want the same one", before, after)
	}
}

// openControl starts a test server with a second session, "keep", and
// returns a Client of its pane alice whose control connection is open.
func openControl(t *testing.T) (*server, *Client) {
	t.Helper()
	s, alice := startServer(t)
	s.tmux("new-session", "-d", "-s", "keep", "cat")
	k := &Control{}
	t.Cleanup(k.Close)
	c := &Client{Pane: alice, Control: k}
	if err := c.Alive(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestControlSessionKilled checks that the loss of the session is reported
// as through a process: the connection ends and the process says why.
func TestControlSessionKilled(t *testing.T) {
	ctx := context.Background()
	s, c := openControl(t)
	s.tmux("kill-session", "-t", "proj")
	if err := c.Alive(ctx); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive after kill-session = %v, want ErrNotInTmux", err)
	}
	if _, err := c.Session(ctx); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Session after kill-session = %v, want ErrNotInTmux", err)
	}
}

// TestControlChanges checks that the connection passes on the notices
// after which the Client's pane may be gone (a window closed, a pane
// closed, the session killed), and not others such as a renamed window.
func TestControlChanges(t *testing.T) {
	s, c := openControl(t)
	alice := c.Pane
	changes := c.Control.Changes()
	drain := func() {
		for {
			select {
			case <-changes:
			case <-time.After(300 * time.Millisecond):
				return
			}
		}
	}
	expect := func(what string, want bool) {
		t.Helper()
		select {
		case <-changes:
			if !want {
				t.Errorf("a change after %s", what)
			}
		case <-time.After(2 * time.Second):
			if want {
				t.Errorf("no change after %s", what)
			}
		}
	}
	drain()
	s.tmux("rename-window", "-t", alice, "alicia")
	expect("rename-window", false)
	s.tmux("new-window", "-d", "-t", "proj:", "-n", "bob", "cat")
	drain()
	s.tmux("kill-window", "-t", "proj:bob")
	expect("kill-window", true)
	pane := s.tmux("split-window", "-d", "-t", alice, "-P", "-F", "#{pane_id}", "cat")
	drain()
	s.tmux("kill-pane", "-t", pane)
	expect("kill-pane", true)
	s.tmux("kill-session", "-t", "proj")
	expect("kill-session", true)
}

// TestControlChangesClosedUnopened checks that Changes is closed when the
// connection cannot be opened: no change will ever be reported.
func TestControlChangesClosedUnopened(t *testing.T) {
	startServer(t)
	k := &Control{}
	defer k.Close()
	c := &Client{Pane: "%999", Control: k}
	if err := c.Alive(context.Background()); err == nil {
		t.Fatal("Alive of a pane that does not exist succeeded")
	}
	select {
	case _, open := <-k.Changes():
		if open {
			t.Error("a change from a connection that never opened")
		}
	default:
		t.Error("Changes still open after the connection could not be opened")
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"list-panes", "-s", "-t", "%3", "-F", "#{pane_id} x;"}, `'list-panes' '-s' '-t' '%3' '-F' '#{pane_id} x;'`, true},
		{[]string{"display-message", "-p", "it's"}, "", false},
		{[]string{"display-message", "-p", "a\nb"}, "", false},
	} {
		got, ok := commandLine(tc.args)
		if got != tc.want || ok != tc.ok {
			t.Errorf("commandLine(%q) = %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}
