package tools_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"agentmail/mailbox"
	"agentmail/tmux"
	"agentmail/tools"
)

// sessionTerm is a Terminal that answers with a fixed session.
type sessionTerm tmux.Session

func (t *sessionTerm) Session(context.Context) (*tmux.Session, error) {
	s := tmux.Session(*t)
	return &s, nil
}

// TestOwnNameTwice puts the caller in the second of two windows named
// alice, and a name twice among the others: list-recipients and send must
// agree that the other alice window is the caller too, and list bob once.
func TestOwnNameTwice(t *testing.T) {
	w := func(i int, name string) tmux.Window {
		id := string(rune('0' + i))
		return tmux.Window{ID: "@" + id, Name: name, Pane: "%" + id}
	}
	term := &sessionTerm{Self: w(1, "alice"), Windows: []tmux.Window{w(0, "alice"), w(1, "alice"), w(2, "bob"), w(3, "bob")}}
	svc := &tools.Service{Store: mailbox.New(t.TempDir()), Term: term}
	ctx := context.Background()

	got, err := svc.Recipients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []tools.Recipient{{Name: "alice", IsCurrent: true}, {Name: "bob"}}
	if !slices.Equal(got, want) {
		t.Errorf("Recipients = %+v, want %+v", got, want)
	}
	if _, err := svc.Send(ctx, "alice", "to myself"); !errors.Is(err, tools.ErrRecipientNotFound) {
		t.Errorf("Send to alice = %v, want ErrRecipientNotFound", err)
	}
	if _, err := svc.Send(ctx, "bob", "hello"); err != nil {
		t.Errorf("Send to bob: %v", err)
	}
}
