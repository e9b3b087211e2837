package tmux

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestServerFromEnv(t *testing.T) {
	for _, tc := range []struct {
		tmux, pane string
		wantPane   string
		wantPID    string
		wantErr    bool
	}{
		{tmux: "/tmp/s,1,0", pane: "%3", wantPane: "%3", wantPID: "1"},
		{tmux: "/tmp/a,b,4242,3", pane: "%3", wantPane: "%3", wantPID: "4242"},
		{tmux: "/tmp/s,0,0", pane: "%3", wantPane: "%3"},
		{tmux: "/tmp/s,x,0", pane: "%3", wantPane: "%3"},
		{tmux: "/tmp/s", pane: "%3", wantPane: "%3"},
		{tmux: "/tmp/s,1,0", pane: "", wantPane: "", wantPID: "1"},
		{tmux: "/tmp/s,1,0", pane: "bob", wantErr: true},
		{tmux: "/tmp/s,1,0", pane: "%abc", wantErr: true},
		{tmux: "", pane: "%3", wantErr: true},
		{tmux: ",1,0", pane: "%3", wantErr: true},
	} {
		env := map[string]string{"TMUX": tc.tmux, "TMUX_PANE": tc.pane}
		c, err := ServerFromEnv(func(k string) string { return env[k] })
		if tc.wantErr {
			if !errors.Is(err, ErrNotInTmux) {
				t.Errorf("ServerFromEnv(TMUX=%q, TMUX_PANE=%q): err = %v, want ErrNotInTmux", tc.tmux, tc.pane, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ServerFromEnv(TMUX=%q, TMUX_PANE=%q): %v", tc.tmux, tc.pane, err)
			continue
		}
		if c.Pane != tc.wantPane {
			t.Errorf("ServerFromEnv(TMUX=%q, TMUX_PANE=%q).Pane = %q, want %q", tc.tmux, tc.pane, c.Pane, tc.wantPane)
		}
		if c.ServerPID != tc.wantPID {
			t.Errorf("ServerFromEnv(TMUX=%q).ServerPID = %q, want %q", tc.tmux, c.ServerPID, tc.wantPID)
		}
	}
}

func TestListPanes(t *testing.T) {
	s, alice := startServer(t)
	seven := s.window("7", "")
	idx7 := s.window("x:y", "7")
	bob := s.window("bob", "")
	bob2 := s.tmux("split-window", "-d", "-t", bob, "-P", "-F", "#{pane_id}", "cat")
	dave := s.tmux("new-session", "-d", "-s", "other", "-n", "bob", "-P", "-F", "#{pane_id}", "cat")
	ctx := context.Background()
	c := &Client{}

	sess, err := c.SessionOf(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.SessionOf(ctx, dave)
	if err != nil {
		t.Fatal(err)
	}
	if sess == other || !isID(sess, '$') || !isID(other, '$') {
		t.Fatalf("SessionOf = %q and %q, want two different session ids", sess, other)
	}

	got, err := c.ListPanes(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pane{
		{ID: alice, Window: s.windowOf(alice), WindowName: "alice", Active: true},
		{ID: seven, Window: s.windowOf(seven), WindowName: "7", Active: true},
		{ID: bob, Window: s.windowOf(bob), WindowName: "bob", Active: true},
		{ID: bob2, Window: s.windowOf(bob), WindowName: "bob", Active: false},
		{ID: idx7, Window: s.windowOf(idx7), WindowName: "x:y", Active: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ListPanes(%s) =\n%+v\nwant\n%+v", sess, got, want)
	}

	// A window linked into a second session is listed by list-panes -a once
	// per session; ListPanes lists its pane once.
	s.tmux("link-window", "-s", s.windowOf(seven), "-t", "other:9")
	all, err := c.ListPanes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want)+1 || !slices.Contains(all, Pane{ID: dave, Window: s.windowOf(dave), WindowName: "bob", Active: true}) {
		t.Errorf("ListPanes of the server = %+v, want the session's panes and %s", all, dave)
	}

	if _, err := c.ListPanes(ctx, "bob"); err == nil {
		t.Error("ListPanes with a session name: no error, want one (names are never targets)")
	}

	s.tmux("kill-session", "-t", other)
	if _, err := c.ListPanes(ctx, other); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("ListPanes of a killed session: err = %v, want ErrNotInTmux", err)
	}
	if _, err := c.SessionOf(ctx, dave); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("SessionOf a killed pane: err = %v, want ErrNotInTmux", err)
	}

	s.tmux("kill-server")
	if _, err := c.ListPanes(ctx, ""); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("ListPanes without a server: err = %v, want ErrNotInTmux", err)
	}
	if _, err := c.SessionOf(ctx, alice); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("SessionOf without a server: err = %v, want ErrNotInTmux", err)
	}
}
