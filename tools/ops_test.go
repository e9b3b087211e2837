package tools_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"

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

// window is window i of a test session: @i, pane %i.
func window(i int, name string) tmux.Window {
	id := strconv.Itoa(i)
	return tmux.Window{ID: "@" + id, Name: name, Pane: "%" + id}
}

// wantAliceAndBob checks that svc lists its caller alice and one other
// agent, bob.
func wantAliceAndBob(t *testing.T, svc *tools.Service) {
	t.Helper()
	got, err := svc.Recipients(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []tools.Recipient{{Name: "alice", IsCurrent: true, Windows: 1}, {Name: "bob", Windows: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("Recipients = %+v, want %+v", got, want)
	}
}

// TestSharedOwnName puts the caller in the second of two windows named
// alice: their agents would read each other's mail, so send, receive and
// recipients fail with an error that says to rename one, and write nothing.
// status still works, so that hooks do not fail on every turn; the mailman
// rings neither window. With three windows the text asks for two renames.
func TestSharedOwnName(t *testing.T) {
	root := t.TempDir()
	term := &sessionTerm{Self: window(1, "alice"), Windows: []tmux.Window{window(0, "alice"), window(1, "alice"), window(2, "bob")}}
	svc := &tools.Service{Store: mailbox.New(root), Term: term}
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["Send"] = svc.Send(ctx, "bob", "hello", "")
	_, errs["Receive"] = svc.Receive(ctx, 0, nil)
	_, errs["Recipients"] = svc.Recipients(ctx)
	for op, err := range errs {
		var shared *tools.SharedNameError
		if !errors.As(err, &shared) || !shared.Own || shared.Name != "alice" || shared.Windows != 2 {
			t.Errorf("%s = %v, want a SharedNameError for the caller's name alice in 2 windows", op, err)
		} else if want := `your window name "alice" is also the name of another window of this session: rename one of them`; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s = %q, want it to start with %q", op, err, want)
		}
	}
	wantNothingWritten(t, root)
	if err := svc.SetStatus(ctx, "work"); err != nil {
		t.Errorf("SetStatus: %v", err)
	}

	term.Windows = append(term.Windows, window(3, "alice"))
	_, err := svc.Receive(ctx, 0, nil)
	if want := `your window name "alice" is also the name of 2 other windows of this session: rename all but one of them`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Receive in one of three windows named alice = %v, want it to start with %q", err, want)
	}
}

// TestSharedIgnoredOwnName checks that windows sharing a name listed in
// .agentmailignore, which nobody can mail, may still send: they are not
// addresses, so there is no mail for them to mix up.
func TestSharedIgnoredOwnName(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(root+"/.agentmailignore", []byte("zsh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	term := &sessionTerm{Self: window(1, "zsh"), Windows: []tmux.Window{window(0, "zsh"), window(1, "zsh"), window(2, "bob")}}
	svc := &tools.Service{Store: mailbox.New(root), Term: term}
	ctx := context.Background()
	if _, err := svc.Send(ctx, "bob", "from a shell window", ""); err != nil {
		t.Errorf("Send from an ignored shared name: %v", err)
	}
	if m, err := svc.Receive(ctx, 0, nil); m != nil || err != nil {
		t.Errorf("Receive in an ignored shared name = %v, %v; want no mail and no error", m, err)
	}
	// The other zsh window is not listed: it is ignored.
	got, err := svc.Recipients(ctx)
	if want := []tools.Recipient{{Name: "zsh", IsCurrent: true, Windows: 1}, {Name: "bob", Windows: 1}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Recipients = %+v, %v; want %+v", got, err, want)
	}
}

// TestSharedOtherName puts two windows named bob beside the caller: bob is
// listed once, and a send to bob fails without storing anything, since
// either agent could read it; a send to a name of one window still works.
func TestSharedOtherName(t *testing.T) {
	root := t.TempDir()
	term := &sessionTerm{Self: window(0, "alice"), Windows: []tmux.Window{window(0, "alice"), window(1, "bob"), window(2, "bob"), window(3, "carol")}}
	svc := &tools.Service{Store: mailbox.New(root), Term: term}
	ctx := context.Background()
	got, err := svc.Recipients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []tools.Recipient{{Name: "alice", IsCurrent: true, Windows: 1}, {Name: "bob", Windows: 2}, {Name: "carol", Windows: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("Recipients = %+v, want %+v", got, want)
	}
	if got, want := tools.RecipientsText(got), "alice [you]\nbob [2 windows: unreachable]\ncarol"; got != want {
		t.Errorf("RecipientsText = %q, want %q", got, want)
	}
	_, err = svc.Send(ctx, "bob", "hello", "")
	var shared *tools.SharedNameError
	if !errors.As(err, &shared) || shared.Own || shared.Name != "bob" || shared.Windows != 2 {
		t.Fatalf("Send to bob = %v, want a SharedNameError for bob in 2 windows", err)
	}
	if want := `recipient "bob" is ambiguous: 2 windows`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Send to bob = %q, want it to start with %q", err, want)
	}
	wantNothingWritten(t, root)
	if _, err := svc.Send(ctx, "carol", "hello", ""); err != nil {
		t.Errorf("Send to carol: %v", err)
	}

	// With three of a name, one rename is not enough.
	term.Windows = append(term.Windows, window(4, "bob"))
	_, err = svc.Send(ctx, "bob", "hello", "")
	if want := `recipient "bob" is ambiguous: 3 windows of this session have that name; rename all but one of them`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Send to one of three bobs = %v, want it to start with %q", err, want)
	}
}

// TestSharedNameButForCase puts windows bob and Bob beside alice: on a
// case-insensitive file system their mailboxes are one file, so a send to
// either fails without storing anything, and so does a receive in either;
// the recipients list marks both.
func TestSharedNameButForCase(t *testing.T) {
	root := t.TempDir()
	term := &sessionTerm{Self: window(0, "alice"), Windows: []tmux.Window{window(0, "alice"), window(1, "bob"), window(2, "Bob")}}
	svc := &tools.Service{Store: mailbox.New(root), Term: term}
	ctx := context.Background()
	list, err := svc.Recipients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tools.RecipientsText(list), "alice [you]\nbob [2 windows: unreachable]\nBob [2 windows: unreachable]"; got != want {
		t.Errorf("RecipientsText = %q, want %q", got, want)
	}
	for _, name := range []string{"bob", "Bob"} {
		_, err := svc.Send(ctx, name, "hello", "")
		var shared *tools.SharedNameError
		if !errors.As(err, &shared) || shared.Own || shared.Name != name || shared.Windows != 2 || !shared.Case {
			t.Fatalf("Send to %s = %v, want a SharedNameError in other letter case", name, err)
		}
		if want := `recipient "` + name + `" is ambiguous: 2 windows of this session have that name, but for letter case, and on a case-insensitive file system they share one mailbox; rename one of them`; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Send to %s = %q, want it to start with %q", name, err, want)
		}
	}
	wantNothingWritten(t, root)

	term.Self = window(2, "Bob")
	_, err = svc.Receive(ctx, 0, nil)
	if want := `your window name "Bob" is also the name of another window of this session, but for letter case, and on a case-insensitive file system they share one mailbox: rename one of them`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Receive in Bob = %v, want it to start with %q", err, want)
	}
}

// wantNothingWritten checks that nothing was created under root.
func wantNothingWritten(t *testing.T, root string) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%d entries written under the root", len(entries))
	}
}

// TestUnusableOtherNames puts windows whose names cannot name a mailbox
// beside the caller: they are not listed as recipients, since send refuses
// them, and a name close to one of them gets no "did you mean" to it.
func TestUnusableOtherNames(t *testing.T) {
	names := []string{"", "carol/", "..", "tab\there", strings.Repeat("n", 256), "bob"}
	windows := []tmux.Window{window(0, "alice")}
	for i, name := range names {
		windows = append(windows, window(i+1, name))
	}
	term := &sessionTerm{Self: windows[0], Windows: windows}
	svc := &tools.Service{Store: mailbox.New(t.TempDir()), Term: term}
	ctx := context.Background()
	wantAliceAndBob(t, svc)
	for _, name := range names[:len(names)-1] {
		if _, err := svc.Send(ctx, name, "x", ""); err == nil {
			t.Errorf("Send to %q succeeded", name)
		}
	}
	// carol is a valid name close to "carol/": the hint must not offer
	// the window send would refuse.
	if _, err := svc.Send(ctx, "carol", "x", ""); !errors.Is(err, tools.ErrRecipientNotFound) || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Send to carol = %v, want recipient not found without a hint", err)
	}
}

// TestUnusableOwnName checks that a caller whose window name cannot name a
// mailbox gets a clear error from every operation and that nothing is
// written for it.
func TestUnusableOwnName(t *testing.T) {
	for _, name := range []string{"", "../x", "a/b", "line\nbreak", strings.Repeat("n", 10_000)} {
		root := t.TempDir()
		self := tmux.Window{ID: "@1", Name: name, Pane: "%1"}
		term := &sessionTerm{Self: self, Windows: []tmux.Window{self, {ID: "@2", Name: "bob", Pane: "%2"}}}
		svc := &tools.Service{Store: mailbox.New(root), Term: term}
		ctx := context.Background()
		errs := map[string]error{}
		_, errs["Send"] = svc.Send(ctx, "bob", "hello", "")
		_, errs["Receive"] = svc.Receive(ctx, 0, nil)
		errs["SetStatus"] = svc.SetStatus(ctx, "ready")
		_, errs["Recipients"] = svc.Recipients(ctx)
		for op, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "cannot be used as an agent name") {
				t.Errorf("window name %.20q: %s = %v, want an error saying the name cannot be used", name, op, err)
			}
		}
		wantNothingWritten(t, root)
	}
}

// TestSetStatusOutsideTmuxFirst checks that SetStatus asks about tmux
// before the project root: outside tmux, and outside any project too (a
// hook can run anywhere), it reports not being in tmux, which status turns
// into a quiet no-op. An invalid status is refused before either.
func TestSetStatusOutsideTmuxFirst(t *testing.T) {
	svc := &tools.Service{StoreErr: errors.New("no project root"), TermErr: tmux.ErrNotInTmux}
	if err := svc.SetStatus(context.Background(), "ready"); !tools.NotInTmux(err) {
		t.Errorf("SetStatus outside tmux and a project = %v, want ErrNotInTmux", err)
	}
	if err := svc.SetStatus(context.Background(), "asleep"); err == nil || tools.NotInTmux(err) {
		t.Errorf("SetStatus(asleep) = %v, want the invalid status", err)
	}
}

// TestLockWait checks that send, receive and status give up on a lock that
// another process keeps, with an error that says so, after the service's
// lock wait, and change nothing.
func TestLockWait(t *testing.T) {
	term := &sessionTerm{Self: window(0, "alice"), Windows: []tmux.Window{window(0, "alice"), window(1, "bob")}}
	st := mailbox.New(t.TempDir())
	svc := &tools.Service{Store: st, Term: term, LockWait: 200 * time.Millisecond}
	ctx := context.Background()
	if _, err := st.Append(context.Background(), "bob", "alice", "for alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), "alice", "bob", "for bob"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetStatus(context.Background(), "alice", mailbox.StatusWork, "%0"); err != nil {
		t.Fatal(err)
	}
	hold := func(path string) func() {
		t.Helper()
		f, err := lockedfile.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return func() { f.Close() }
	}
	// Without the bound each call would hang; this fails the test instead.
	wantBusy := func(op, path string, call func() error) {
		t.Helper()
		release := hold(path)
		defer release()
		done := make(chan error, 1)
		go func() { done <- call() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s with a lock held still waiting after 5s", op)
		}
		if want := path + " is locked by another process: gave up after waiting 200ms"; err == nil || err.Error() != want {
			t.Errorf("%s with a lock held = %v, want %q", op, err, want)
		}
	}

	wantBusy("Send", st.MailboxPath("bob"), func() error {
		_, err := svc.Send(ctx, "bob", "never", "")
		return err
	})
	wantBusy("Receive", st.MailboxPath("alice"), func() error {
		_, err := svc.Receive(ctx, 0, nil)
		return err
	})
	wantBusy("SetStatus", st.StatesPath(), func() error { return svc.SetStatus(ctx, mailbox.StatusReady) })

	// Nothing changed: bob has one message, alice hers, still unread, and
	// her status is still work.
	if n, err := st.Unread(context.Background(), "bob"); n != 1 || err != nil {
		t.Errorf("bob's unread = %d, %v; want 1", n, err)
	}
	if m, err := svc.Receive(ctx, 0, nil); err != nil || m == nil || m.Message != "for alice" {
		t.Errorf("Receive after the lock was let go = %+v, %v; want alice's message", m, err)
	}
	states, err := st.States(context.Background())
	if err != nil || len(states) != 1 || states[0].Status != mailbox.StatusWork {
		t.Errorf("states = %+v, %v; want alice at work", states, err)
	}
}
