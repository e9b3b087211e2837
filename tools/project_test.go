package tools_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"agentmail/mailbox"
	"agentmail/tmux"
	"agentmail/tools"
)

// TestPersonAddress has a person "human" beside alice and bob: alice
// lists it, marked, and writes to it; the person, through AsPerson,
// receives that and writes back to bob; a window named like the person
// keeps its address as a window.
func TestPersonAddress(t *testing.T) {
	st := mailbox.New(t.TempDir())
	ctx := context.Background()
	if err := st.AddPerson("human"); err != nil {
		t.Fatal(err)
	}
	term := &sessionTerm{Self: window(0, "alice"), Windows: []tmux.Window{window(0, "alice"), window(1, "bob")}}
	alice := &tools.Service{Store: st, Term: term}
	list, err := alice.Recipients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tools.RecipientsText(list), "alice [you]\nbob\nhuman [person]"; got != want {
		t.Errorf("recipients:\n%s\nwant:\n%s", got, want)
	}
	if _, err := alice.Send(ctx, "human", "need a decision", ""); err != nil {
		t.Fatal(err)
	}
	human := &tools.Service{Store: st, Term: tools.AsPerson(term, "human")}
	m, err := human.Receive(ctx, 0, nil)
	if err != nil || m == nil || m.From != "alice" {
		t.Fatalf("person's receive = %+v, %v", m, err)
	}
	reply, err := human.Send(ctx, "bob", "go ahead", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if reply.From != "human" || reply.Thread() != m.ID {
		t.Errorf("reply = %+v; want from human in thread %s", reply, m.ID)
	}
	// The person steps into a thread between two agents.
	ab, err := alice.Send(ctx, "bob", "shall we drop the cache?", "")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := human.Send(ctx, "alice", "no, keep it", ab.ID); err != nil || m.Thread() != ab.ID {
		t.Errorf("the person's reply in alice's thread: %+v, %v", m, err)
	}
	if _, err := human.Send(ctx, "human", "to myself", ""); !errors.Is(err, tools.ErrRecipientNotFound) {
		t.Errorf("send to oneself: %v", err)
	}
}

// TestMessagesPages pages through three mailboxes' messages: the pages
// hold every message once, newest first, and the filters keep theirs.
func TestMessagesPages(t *testing.T) {
	st := mailbox.New(t.TempDir())
	ctx := context.Background()
	var want []string
	for i := range 25 {
		to := []string{"bob", "carol", "dave"}[i%3]
		m, err := st.Append(ctx, "alice", to, fmt.Sprintf("message %d", i))
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{m.ID}, want...)
	}
	svc := &tools.Service{Store: st}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := svc.Messages(ctx, tools.MessageFilter{Limit: 4, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Messages {
			got = append(got, m.ID)
		}
		if cursor = p.Next; cursor == "" || pages > 10 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages:\n%v\nwant:\n%v", got, want)
	}
	p, err := svc.Messages(ctx, tools.MessageFilter{Agent: "carol"})
	if err != nil || len(p.Messages) != 8 {
		t.Errorf("carol's messages: %d, %v; want 8", len(p.Messages), err)
	}
	p, err = svc.Messages(ctx, tools.MessageFilter{Text: "MESSAGE 2"})
	if err != nil || len(p.Messages) != 6 { // 2, 20 … 24
		t.Errorf("messages holding \"message 2\": %d, %v; want 6", len(p.Messages), err)
	}
	if p.Messages[0].State != "stored" || p.Messages[0].From != "alice" {
		t.Errorf("first message: %+v", p.Messages[0])
	}
	if _, err := svc.Messages(ctx, tools.MessageFilter{Cursor: "!!"}); !errors.Is(err, tools.ErrBadCursor) {
		t.Errorf("a bad cursor: %v", err)
	}
}
