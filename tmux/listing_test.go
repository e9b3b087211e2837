package tmux

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestListingFollowsChanges checks that Session, SessionIn and ListPanes
// through a control connection, which keeps the list of its session's
// panes between calls, answer as tmux processes do at once after each
// change a user makes: windows renamed (the caller's own too), opened,
// closed, moved to another session and linked from one, panes split,
// selected and closed. Each change is made by a tmux process that has
// ended before the next call, as a user's command has, so a list kept
// past a change fails it.
func TestListingFollowsChanges(t *testing.T) {
	ctx := context.Background()
	s, c := openControl(t)
	k := c.Control
	bob := s.window("bob", "")
	s.window("carol", "")
	session, err := c.SessionOf(ctx, c.Pane)
	if err != nil {
		t.Fatal(err)
	}

	check := func(after string) {
		t.Helper()
		got, err := c.Session(ctx)
		if err != nil {
			t.Fatalf("after %s: Session through control: %v", after, err)
		}
		want, err := (&Client{Pane: c.Pane}).Session(ctx)
		if err != nil {
			t.Fatalf("after %s: Session through a process: %v", after, err)
		}
		if got.Self != want.Self || !slices.Equal(got.Windows, want.Windows) {
			t.Errorf("after %s: Session through control\n got %+v\nwant %+v", after, got, want)
		}
		gotPanes, err := c.ListPanes(ctx, session)
		if err != nil {
			t.Fatalf("after %s: ListPanes through control: %v", after, err)
		}
		wantPanes, err := (&Client{}).ListPanes(ctx, session)
		if err != nil {
			t.Fatalf("after %s: ListPanes through a process: %v", after, err)
		}
		if !slices.Equal(gotPanes, wantPanes) {
			t.Errorf("after %s: ListPanes through control\n got %+v\nwant %+v", after, gotPanes, wantPanes)
		}
		in, err := c.SessionIn(ctx, session)
		if err != nil {
			t.Fatalf("after %s: SessionIn through control: %v", after, err)
		}
		if in.Self != want.Self || !slices.Equal(in.Windows, want.Windows) {
			t.Errorf("after %s: SessionIn through control\n got %+v\nwant %+v", after, in, want)
		}
	}
	check("opening")
	// Without a change the list is kept: the next call does not ask for
	// another one.
	kept := k.listing.at
	check("nothing")
	if k.listing.at != kept {
		t.Fatal("the list was asked for again without a change")
	}

	s.tmux("rename-window", "-t", bob, "bobby")
	check("renaming another window")
	s.tmux("rename-window", "-t", c.Pane, "alicia")
	check("renaming the caller's window")
	dave := s.window("dave", "")
	check("a new window")
	s.tmux("kill-window", "-t", "proj:carol")
	check("killing a window")
	s.tmux("move-window", "-s", s.windowOf(dave), "-t", "keep:")
	check("moving a window to another session")
	if _, err := (&Client{Pane: dave, Control: k}).SessionIn(ctx, session); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("SessionIn of a pane moved to another session = %v, want ErrNotInTmux", err)
	}
	split := s.tmux("split-window", "-d", "-t", bob, "-P", "-F", "#{pane_id}", "cat")
	check("splitting a window")
	s.tmux("select-pane", "-t", split)
	check("selecting the new pane")
	s.tmux("kill-pane", "-t", split)
	check("killing it")
	s.tmux("link-window", "-s", s.windowOf(dave), "-t", "proj:")
	check("linking a window of another session")
	s.tmux("rename-window", "-t", dave, "david")
	check("renaming the linked window")
}

// TestListingMaxAge checks that a list is kept no longer than
// listingMaxAge, for the changes that tmux does not report: swap-window
// moves windows between sessions without a notification.
func TestListingMaxAge(t *testing.T) {
	defer func(d time.Duration) { listingMaxAge = d }(listingMaxAge)
	listingMaxAge = 200 * time.Millisecond
	ctx := context.Background()
	s, c := openControl(t)
	bob := s.window("bob", "")
	if _, err := c.Session(ctx); err != nil {
		t.Fatal(err)
	}
	kept := s.tmux("new-window", "-d", "-t", "keep:", "-n", "kept", "-P", "-F", "#{pane_id}", "cat")
	time.Sleep(100 * time.Millisecond) // its notice is read
	if _, err := c.Session(ctx); err != nil {
		t.Fatal(err)
	}
	s.tmux("swap-window", "-s", s.windowOf(bob), "-t", s.windowOf(kept))
	time.Sleep(listingMaxAge)
	got, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := (&Client{Pane: c.Pane}).Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Windows, want.Windows) {
		t.Errorf("%v after swap-window, Session through control\n got %+v\nwant %+v", listingMaxAge, got.Windows, want.Windows)
	}
}
