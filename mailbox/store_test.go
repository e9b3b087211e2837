package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rogpeppe/go-internal/lockedfile"
)

func TestAppendReceiveRoundTrip(t *testing.T) {
	bodies := []string{
		"hello",
		"",
		"line one\nline two\n\nline four\n",
		"windows\r\nline",
		`she said "hi" and left \ a backslash`,
		"tabs\tand\tmore\t",
		"unicode: héllo wörld 日本語 🙂 \u2028 \u2029",
		"<html> & friends > escapes",
		`{"id":"fake","from":"x","to":"y","message":"json inside","read_flag":true}`,
		`"read_flag":false`,
		`","read_flag":false,"x":"`,
		"nul \x00 and bell \x07",
		strings.Repeat("x", MaxMessageSize),
		strings.Repeat("\x01", MaxMessageSize), // six bytes each once escaped
	}
	s, w := newStore(t)
	var sent []Message
	for _, b := range bodies {
		sent = append(sent, mustAppend(t, s, "alice", "bob", b))
	}
	wantUnread(t, s, "bob", len(bodies))
	for i, want := range sent {
		got := mustReceive(t, s, "bob")
		if got.ID != want.ID || got.From != "alice" || got.To != "bob" || got.Message != bodies[i] || !got.ReadFlag || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("message %d: got %+.80v\nwant %+.80v", i, *got, want)
		}
		wantUnread(t, s, "bob", len(bodies)-i-1)
	}
	wantNoMessage(t, s, "bob")
	if msgs := w.take(); len(msgs) != 0 {
		t.Errorf("unexpected warnings: %q", msgs)
	}

	// Every stored line is still one valid JSON object, now marked read.
	for i, line := range lines(readFile(t, s.MailboxPath("bob"))) {
		var m Message
		if err := json.Unmarshal([]byte(line), &m); err != nil || !m.ReadFlag || m.Message != bodies[i] {
			t.Errorf("line %d after receiving: %v, read_flag %v", i, err, m.ReadFlag)
		}
	}
}

func TestAppendLineFormat(t *testing.T) {
	s, _ := newStore(t)
	now := time.Date(2026, 11, 21, 21, 26, 23, 116269185, time.FixedZone("+05", 5*3600))
	s.Now = func() time.Time { return now }
	m := mustAppend(t, s, "alice", "bob", "a <b> & c")
	id, err := uuid.Parse(m.ID)
	if err != nil || id.Version() != 7 {
		t.Errorf("id %q is not a UUIDv7 (%v)", m.ID, err)
	}
	want := `{"id":"` + m.ID + `","from":"alice","to":"bob","message":"a \u003cb\u003e \u0026 c","read_flag":false,"created_at":"2026-11-21T21:26:23.116269185+05:00","thread_id":"` + m.ID + `"}` + "\n"
	if got := readFile(t, s.MailboxPath("bob")); got != want {
		t.Errorf("stored line:\n got %s\nwant %s", got, want)
	}
	before, err := os.Stat(s.MailboxPath("bob"))
	if err != nil {
		t.Fatal(err)
	}
	mustReceive(t, s, "bob")
	if after, err := os.Stat(s.MailboxPath("bob")); err != nil || !os.SameFile(before, after) {
		t.Errorf("receive replaced the mailbox file (%v)", err)
	}
	want = strings.Replace(want, `"read_flag":false`, `"read_flag":true `, 1)
	if got := readFile(t, s.MailboxPath("bob")); got != want {
		t.Errorf("after receive:\n got %s\nwant %s", got, want)
	}
}

// TestAppendReply checks that a reply carries the id it answers and the
// thread of that message, and that a reply to a line written without a
// thread (older mail) takes that line's id as the thread.
func TestAppendReply(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	first := mustAppend(t, s, "alice", "bob", "question")
	if first.ThreadID != first.ID || first.ReplyTo != "" {
		t.Errorf("a new message has thread %q and reply_to %q", first.ThreadID, first.ReplyTo)
	}
	answer, err := s.AppendReply(ctx, "bob", "alice", "answer", &first)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.AppendReply(ctx, "alice", "bob", "thanks", &answer)
	if err != nil {
		t.Fatal(err)
	}
	if answer.ReplyTo != first.ID || answer.ThreadID != first.ID || again.ReplyTo != answer.ID || again.ThreadID != first.ID {
		t.Errorf("replies: %+v, %+v", answer, again)
	}
	old := Message{ID: "abcd1234", From: "carol", To: "bob", Message: "from the earlier tool"}
	reply, err := s.AppendReply(ctx, "bob", "carol", "noted", &old)
	if err != nil || reply.ThreadID != "abcd1234" || reply.ReplyTo != "abcd1234" {
		t.Errorf("reply to a line without a thread: %+v, %v", reply, err)
	}
	got := mustReceive(t, s, "alice")
	if got.ReplyTo != first.ID || got.ThreadID != first.ID {
		t.Errorf("received reply has reply_to %q and thread %q", got.ReplyTo, got.ThreadID)
	}
}

func TestReceiveFIFO(t *testing.T) {
	s, _ := newStore(t)
	for i := range 20 {
		mustAppend(t, s, "alice", "bob", string(rune('a'+i)))
		if i%3 == 0 {
			mustAppend(t, s, "alice", "carol", "other mailbox")
		}
	}
	for i := range 20 {
		if got := mustReceive(t, s, "bob").Message; got != string(rune('a'+i)) {
			t.Fatalf("receive %d = %q; want %q", i, got, string(rune('a'+i)))
		}
	}
	wantNoMessage(t, s, "bob")
	wantUnread(t, s, "carol", 7)
}

func TestSizeLimit(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.Append(context.Background(), "alice", "bob", strings.Repeat("x", MaxMessageSize+1))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append of %d bytes: %v; want ErrTooLarge", MaxMessageSize+1, err)
	}
	if err.Error() != "message exceeds maximum size of 64KB (65536 bytes)" {
		t.Errorf("error text %q", err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, ".agentmail")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused message created .agentmail (%v)", err)
	}
	mustAppend(t, s, "alice", "bob", strings.Repeat("x", MaxMessageSize))
}

func TestInvalidNamesWriteNothing(t *testing.T) {
	s, _ := newStore(t)
	for _, bad := range []string{"", "../x", "a/b", ".", "..", "a\nb", strings.Repeat("n", 250)} {
		if _, err := s.Append(context.Background(), "alice", bad, "hi"); err == nil {
			t.Errorf("Append to %s succeeded", shortQuote(bad))
		}
		if _, err := s.Append(context.Background(), bad, "bob", "hi"); err == nil {
			t.Errorf("Append from %s succeeded", shortQuote(bad))
		}
		if _, err := s.Receive(context.Background(), bad, nil); err == nil {
			t.Errorf("Receive(%s) succeeded", shortQuote(bad))
		}
		if _, err := s.Unread(context.Background(), bad); err == nil {
			t.Errorf("Unread(%s) succeeded", shortQuote(bad))
		}
		if err := s.SetStatus(context.Background(), bad, "ready", ""); err == nil {
			t.Errorf("SetStatus(%s) succeeded", shortQuote(bad))
		}
	}
	entries, err := os.ReadDir(s.Root)
	if err != nil || len(entries) != 0 {
		t.Errorf("root holds %v (%v); want nothing", entries, err)
	}
}

func TestUnusualValidNames(t *testing.T) {
	s, _ := newStore(t)
	names := []string{"..x", "7", "-dash", "a:b", "my win", "w.1", "日本"}
	for _, n := range names {
		mustAppend(t, s, n, n, "to "+n)
	}
	got, err := s.Mailboxes()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Errorf("Mailboxes() = %q; want %q", got, want)
	}
	for _, n := range names {
		if m := mustReceive(t, s, n); m.Message != "to "+n || m.From != n {
			t.Errorf("mailbox %q delivered %+v", n, m)
		}
	}
}

func TestPermissionsAndNothingOutside(t *testing.T) {
	s, _ := newStore(t)
	mustAppend(t, s, "alice", "bob", "hi")
	mustAppend(t, s, "alice", "bob", "there")
	mustReceive(t, s, "bob")
	if err := s.SetStatus(context.Background(), "bob", "ready", "%1"); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{
		".agentmail":                     fs.ModeDir | 0o700,
		".agentmail/mailboxes":           fs.ModeDir | 0o700,
		".agentmail/mailboxes/bob.jsonl": 0o600,
		".agentmail/cursors":             fs.ModeDir | 0o700,
		".agentmail/cursors/bob":         0o600,
		".agentmail/recipients.jsonl":    0o600,
		".agentmail/recipients.lock":     0o600,
	}
	got := map[string]fs.FileMode{}
	err := filepath.WalkDir(s.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == s.Root {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.Root, path)
		got[filepath.ToSlash(rel)] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files under the root:\n got %v\nwant %v", got, want)
	}
}

func TestReceiveWithoutMailboxCreatesNothing(t *testing.T) {
	s, _ := newStore(t)
	wantNoMessage(t, s, "bob")
	wantUnread(t, s, "bob", 0)
	if names, err := s.Mailboxes(); err != nil || names != nil {
		t.Errorf("Mailboxes() = %q, %v", names, err)
	}
	if states, err := s.States(context.Background()); err != nil || states != nil {
		t.Errorf("States() = %v, %v", states, err)
	}
	entries, err := os.ReadDir(s.Root)
	if err != nil || len(entries) != 0 {
		t.Errorf("root holds %v (%v); want nothing", entries, err)
	}
}

func TestMailboxesSkipsOtherFiles(t *testing.T) {
	s, _ := newStore(t)
	writeMailbox(t, s, "a", "")
	writeMailbox(t, s, "b", "")
	dir := s.MailboxDir()
	// ".jsonl" and "..jsonl" end in .jsonl, but "" and "." name no agent.
	for _, f := range []string{"notes.txt", ".tmp-123", "c.jsonl.bak", ".jsonl", "..jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := s.Mailboxes()
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Mailboxes() = %q, %v; want [a b]", got, err)
	}
}

func TestIgnored(t *testing.T) {
	s, _ := newStore(t)
	got, err := s.Ignored()
	if err != nil || len(got) != 0 {
		t.Fatalf("Ignored() without a file = %v, %v; want an empty set", got, err)
	}
	content := " alice \r\n\n\t\n# bob\n\tcarol\nmy win\n"
	if err := os.WriteFile(filepath.Join(s.Root, ".agentmailignore"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = s.Ignored()
	want := map[string]bool{"alice": true, "# bob": true, "carol": true, "my win": true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Ignored() = %v, %v; want %v", got, err, want)
	}

	// A byte order mark, as a Windows editor may write it, starts the file
	// and only there is it not part of a name.
	content = "\uFEFFalice\r\n\uFEFFbob\r\n"
	if err := os.WriteFile(filepath.Join(s.Root, ".agentmailignore"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = s.Ignored()
	want = map[string]bool{"alice": true, "\uFEFFbob": true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Ignored() with a byte order mark = %+q, %v; want %+q", slices.Collect(maps.Keys(got)), err, slices.Collect(maps.Keys(want)))
	}
}

// TestReceiveDeliverFails checks that a message that could not be handed on
// stays unread: deliver sees it before it is marked read, and its error
// leaves the mailbox as it was.
func TestReceiveDeliverFails(t *testing.T) {
	s, w := newStore(t)
	first, err := s.Append(context.Background(), "alice", "bob", "first")
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(s.MailboxPath("bob"))
	if err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	var seen *Message
	m, err := s.Receive(context.Background(), "bob", func(m *Message) error {
		seen = m
		return full
	})
	if m != nil || !errors.Is(err, full) {
		t.Fatalf("Receive = %+v, %v; want nil and the deliver error", m, err)
	}
	if seen == nil || seen.ID != first.ID || seen.Message != "first" {
		t.Fatalf("deliver saw %+v, want the first message", seen)
	}
	after, err := os.ReadFile(s.MailboxPath("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatalf("mailbox changed by a failed delivery:\nbefore %q\nafter  %q", before, after)
	}
	// Delivered the next time, once.
	var delivered []string
	m, err = s.Receive(context.Background(), "bob", func(m *Message) error {
		delivered = append(delivered, m.ID)
		return nil
	})
	if err != nil || m == nil || m.ID != first.ID || len(delivered) != 1 {
		t.Fatalf("second Receive = %+v, %v (delivered %q); want the first message, delivered once", m, err, delivered)
	}
	wantNoMessage(t, s, "bob")
	wantNoWarnings(t, w)
}

// TestContextLockWait checks that a receive or a send waiting for a lock
// that another holder keeps gives up when its context ends, changes
// nothing, and lets go of the lock when it gets it later.
func TestContextLockWait(t *testing.T) {
	s, _ := newStore(t)
	if _, err := s.Append(context.Background(), "alice", "bob", "waiting"); err != nil {
		t.Fatal(err)
	}
	holder, err := lockedfile.OpenFile(s.MailboxPath("bob"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A wait that ignores its context would hang until the holder lets go,
	// which it never does; within fails the test instead.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var m *Message
	within(t, "Receive with the lock held", func() { m, err = s.Receive(ctx, "bob", nil) })
	if m != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive with the lock held = %+v, %v; want nil, DeadlineExceeded", m, err)
	}
	before, err := os.ReadFile(s.MailboxPath("bob"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	within(t, "Append with the lock held", func() { _, err = s.Append(ctx, "alice", "bob", "never") })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append with the lock held = %v; want DeadlineExceeded", err)
	}
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Path != s.MailboxPath("bob") || err.Error() != s.MailboxPath("bob")+" is locked by another process" {
		t.Errorf("Append with the lock held = %v; want a BusyError naming the mailbox", err)
	}
	if after, err := os.ReadFile(s.MailboxPath("bob")); err != nil || string(after) != string(before) {
		t.Fatalf("mailbox changed by a send that gave up: %q, %v", after, err)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	// A context that is done already changes nothing, even with the lock
	// free, and says why rather than that the file is locked.
	gone, stop := context.WithCancel(context.Background())
	stop()
	if _, err := s.Append(gone, "alice", "bob", "never"); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context = %v; want context.Canceled", err)
	}
	if m, err := s.Receive(gone, "bob", nil); m != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Receive with a cancelled context = %+v, %v; want nil, context.Canceled", m, err)
	}
	if after, err := os.ReadFile(s.MailboxPath("bob")); err != nil || string(after) != string(before) {
		t.Fatalf("mailbox changed by calls with a cancelled context: %q, %v", after, err)
	}
	// The abandoned attempt gets the lock now and must release it at once
	// without touching anything: a plain Receive finds the message unread.
	type received struct {
		m   *Message
		err error
	}
	done := make(chan received, 1)
	go func() {
		m, err := s.Receive(context.Background(), "bob", nil)
		done <- received{m, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.m == nil || r.m.Message != "waiting" {
			t.Fatalf("Receive = %+v, %v; want the message, unread", r.m, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned attempts kept the lock")
	}
}

// MarkRead marks the unread message it is given read, and only it;
// a message already read, an unknown one and a missing mailbox report false
// and change nothing.
func TestMarkRead(t *testing.T) {
	s, w := newStore(t)
	ctx := context.Background()
	if ok, err := s.MarkRead(ctx, "bob", &Message{ID: "no-such-id"}); ok || err != nil {
		t.Fatalf("without a mailbox: MarkRead = %v, %v; want false, nil", ok, err)
	}
	first := mustAppend(t, s, "alice", "bob", "first")
	second := mustAppend(t, s, "alice", "bob", "second")
	handOnLater := errors.New("handed on later")
	if _, err := s.Receive(ctx, "bob", func(*Message) error { return handOnLater }); !errors.Is(err, handOnLater) {
		t.Fatalf("Receive = %v, want the deliver error", err)
	}
	if ok, err := s.MarkRead(ctx, "bob", &second); !ok || err != nil {
		t.Fatalf("MarkRead(second) = %v, %v; want true, nil", ok, err)
	}
	for _, m := range []*Message{&second, {ID: "no-such-id"}} {
		if ok, err := s.MarkRead(ctx, "bob", m); ok || err != nil {
			t.Errorf("MarkRead(%s) = %v, %v; want false, nil", m.ID, ok, err)
		}
	}
	if m := mustReceive(t, s, "bob"); m == nil || m.ID != first.ID {
		t.Fatalf("Receive = %v, want the first message", m)
	}
	if m, err := s.Receive(context.Background(), "bob", nil); m != nil || err != nil {
		t.Errorf("Receive = %v, %v; want nothing: the second was marked read", m, err)
	}
	if _, err := s.MarkRead(ctx, "../bob", &first); err == nil {
		t.Error("MarkRead with an invalid name succeeded")
	}
	if got := w.take(); len(got) != 0 {
		t.Errorf("warnings: %q", got)
	}
}

// TestMarkReadSameID checks that a late marking never takes another
// message with the same id for the one it was given: here the first was
// delivered again, and marked read, before its late marking came.
func TestMarkReadSameID(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a := `{"id":"dup","from":"alice","to":"bob","message":"A","read_flag":false,"created_at":"2026-01-01T00:00:00Z"}`
	b := `{"id":"dup","from":"alice","to":"bob","message":"B","read_flag":false,"created_at":"2026-01-01T00:00:00Z"}`
	writeMailbox(t, s, "bob", a+"\n"+b+"\n")
	var late Message
	handOnLater := errors.New("handed on later")
	if _, err := s.Receive(ctx, "bob", func(m *Message) error { late = *m; return handOnLater }); !errors.Is(err, handOnLater) {
		t.Fatalf("Receive = %v, want the deliver error", err)
	}
	if m := mustReceive(t, s, "bob"); m == nil || m.Message != "A" {
		t.Fatalf("Receive = %v, want A again", m)
	}
	if ok, err := s.MarkRead(ctx, "bob", &late); ok || err != nil {
		t.Errorf("late MarkRead(A) = %v, %v; want false, nil", ok, err)
	}
	if m := mustReceive(t, s, "bob"); m == nil || m.Message != "B" {
		t.Errorf("Receive = %v, want B", m)
	}
}

// TestAbandonedLockWaitsDoNotPileUp checks that waits given up on while
// another process holds a lock do not each leave a goroutine (and with it
// an OS thread and a descriptor) blocked on the lock: later waits for the
// same file wait for the one already blocked. Once the lock is let go,
// the next wait gets it and nothing is left behind.
func TestAbandonedLockWaitsDoNotPileUp(t *testing.T) {
	s, _ := newStore(t)
	mustAppend(t, s, "alice", "bob", "hi")
	path := s.MailboxPath("bob")
	// blocked counts the goroutines blocked taking a lock; counting all
	// goroutines would count those of other tests too.
	blocked := func() int {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		return bytes.Count(buf, []byte("agentmail/mailbox.openLocked("))
	}
	// Waits that earlier tests gave up on end once their locks are let go.
	settle := func() {
		for deadline := time.Now().Add(10 * time.Second); blocked() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	settle()
	holder, err := lockedfile.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		_, _, err := openLockedContext(ctx, path, os.O_RDWR, 0)
		cancel()
		var busy *BusyError
		if !errors.As(err, &busy) {
			t.Fatalf("openLockedContext with the lock held = %v, want a BusyError", err)
		}
	}
	if n := blocked(); n > 1 {
		t.Errorf("%d goroutines left waiting for the lock after 50 waits given up on, want 1", n)
	}
	holder.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, _, err := openLockedContext(ctx, path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("openLockedContext after the lock was let go = %v", err)
	}
	f.Close()
	settle()
	if n := blocked(); n > 0 {
		t.Errorf("%d goroutines still waiting for the lock after it was let go", n)
	}
}

// TestManyLockWaitsOneThread checks that many waits at once for one lock
// that another process holds put one goroutine in flock, not one each: a
// goroutine blocked in flock holds an OS thread, which the runtime keeps
// afterwards. Once the lock is let go, every wait gets it in turn.
func TestManyLockWaitsOneThread(t *testing.T) {
	s, _ := newStore(t)
	mustAppend(t, s, "alice", "carol", "hi")
	path := s.MailboxPath("carol")
	blocked := func() int {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		return bytes.Count(buf, []byte("agentmail/mailbox.openLocked("))
	}
	holder, err := lockedfile.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	const waits = 200
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make(chan error, waits)
	for range waits {
		go func() {
			f, _, err := openLockedContext(ctx, path, os.O_RDWR, 0)
			if err == nil {
				f.Close()
			}
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them all start waiting
	if n := blocked(); n > 1 {
		t.Errorf("%d goroutines waiting in flock for one lock, want 1", n)
	}
	holder.Close()
	for range waits {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
