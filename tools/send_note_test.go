package tools_test

import (
	"context"
	"testing"

	"agentmail/mailbox"
	"agentmail/mailman"
	"agentmail/tmux"
	"agentmail/tools"
)

// TestSendNotes checks the text of a send (SentAllText with Waiting) for
// each state of its recipients: a note for one whose status is offline,
// and for one that set no status while nothing is set up to wake it; the
// plain text for one with any other status, one a wake hook waits for,
// and for every one while a mailman runs. Several recipients get a line
// each, the note only on the lines it is due.
func TestSendNotes(t *testing.T) {
	st := mailbox.New(t.TempDir())
	wins := []tmux.Window{window(0, "alice"), window(1, "bob"), window(2, "carol"), window(3, "dave"), window(4, "erin")}
	as := func(i int) *tools.Service {
		return &tools.Service{Store: st, Term: &sessionTerm{Self: wins[i], Windows: wins}}
	}
	alice := as(0)
	ctx := context.Background()
	const (
		bobNote   = " (bob has set no status and nothing wakes it; it is kept until bob reads it)"
		carolNote = " (carol is offline; it is kept until carol reads it)"
	)
	// checkAll sends to names, as the CLI and the MCP tool do, and checks
	// the text: each line with the id the send returned and notes[i].
	checkAll := func(what string, notes []string, names ...string) {
		t.Helper()
		ms, err := alice.SendAll(ctx, names, "hello", "")
		if err != nil {
			t.Fatal(err)
		}
		got := tools.SentAllText(ms, alice.Waiting(ctx, names))
		want := ""
		for i, m := range ms {
			if i > 0 {
				want += "\n"
			}
			want += "Message #" + m.ID + " sent"
			if len(ms) > 1 {
				want += " to " + m.To
			}
			want += notes[i]
		}
		if got != want {
			t.Errorf("%s: send to %v = %q, want %q", what, names, got, want)
		}
	}

	// Nobody set a status yet.
	checkAll("no status", []string{bobNote}, "bob")

	for i, status := range map[int]string{2: "offline", 3: "ready", 4: "work"} {
		if err := as(i).SetStatus(ctx, status); err != nil {
			t.Fatal(err)
		}
	}
	checkAll("offline", []string{carolNote}, "carol")
	checkAll("ready", []string{""}, "dave")
	checkAll("work", []string{""}, "erin")
	checkAll("several", []string{bobNote, carolNote, "", ""}, "bob", "carol", "dave", "erin")

	// A wake hook waiting for bob: no note for bob; once it has gone, the
	// note again.
	w, err := st.StartWatcher("bob")
	if err != nil {
		t.Fatal(err)
	}
	checkAll("hook waiting", []string{"", carolNote}, "bob", "carol")
	w.Close()
	checkAll("hook gone", []string{bobNote}, "bob")

	// A mailman running: no note for bob, but carol is still offline.
	l, err := mailman.Acquire(mailman.PIDPath(st))
	if err != nil {
		t.Fatal(err)
	}
	checkAll("mailman", []string{"", carolNote}, "bob", "carol")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	checkAll("mailman gone", []string{bobNote}, "bob")
}
