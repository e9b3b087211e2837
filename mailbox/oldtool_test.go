package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// oldToolID returns an id the way the earlier tool makes one: 8 characters
// from a 62-letter alphabet.
func oldToolID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 8)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// oldToolAppend appends a message the way the earlier tool does: an
// exclusive flock on the mailbox opened with O_APPEND, one write, no sync.
func oldToolAppend(path, from, to, body string) (string, error) {
	id := oldToolID()
	line, err := json.Marshal(oldMessage{ID: id, From: from, To: to, Message: body, CreatedAt: time.Now()})
	if err != nil {
		return "", err
	}
	f, err := lockedfile.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return id, err
}

// oldToolReceive receives the way the earlier tool does (decode every line,
// flip the first line with the id of the first unread one, truncate and
// rewrite the whole file in place), except that it holds one exclusive lock
// throughout: the earlier tool's own receive takes two locks and can
// deliver a message twice by itself (W1), which is not what is tested here.
// Any line that does not decode fails it, as it fails the earlier tool.
func oldToolReceive(path string) (*oldMessage, error) {
	f, err := lockedfile.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return oldToolRewrite(f.File, func(msgs []oldMessage) int {
		return slices.IndexFunc(msgs, func(m oldMessage) bool { return !m.ReadFlag })
	})
}

// oldToolRewrite is the earlier tool's mark-as-read on an open mailbox:
// decode every line, flip the first line with the id of the message pick
// chooses (none when it returns -1), truncate and write every line again, in
// place. It returns the chosen message as it now stands.
func oldToolRewrite(f *os.File, pick func([]oldMessage) int) (*oldMessage, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var msgs []oldMessage
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" {
			continue
		}
		var m oldMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			return nil, fmt.Errorf("the earlier tool cannot read %q: %w", l, err)
		}
		msgs = append(msgs, m)
	}
	i := pick(msgs)
	if i < 0 {
		return nil, nil
	}
	got := &msgs[i]
	for j := range msgs {
		if msgs[j].ID == got.ID {
			msgs[j].ReadFlag = true // The first line with the id, as it does.
			break
		}
	}
	var out []byte
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out = append(append(out, b...), '\n')
	}
	if err := f.Truncate(0); err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(out, 0); err != nil {
		return nil, err
	}
	m := *got
	return &m, nil
}

// TestOldToolRewrittenMailbox reads a mailbox as the earlier tool leaves it
// once it has rewritten it: created_at everywhere (zero for legacy lines),
// "true" without our trailing space, a duplicated id whose first copy is
// read and second is not (W6), escapes and unknown keys.
func TestOldToolRewrittenMailbox(t *testing.T) {
	s, w := newStore(t)
	path := s.MailboxPath("bob")
	orig := installFixture(t, "old-mailbox-rewritten.jsonl", path)

	wantUnread(t, s, "bob", 5)
	want := []Message{
		{ID: "DuP1dUp1", From: "carol", Message: "second copy of a duplicated id, unread", CreatedAt: time.Date(2026, 11, 21, 21, 26, 24, 0, time.UTC)},
		{ID: "Gt7Lt8Am", From: "alice", Message: "a > b && c < d, invalid \ufffd, tab\tquote\" backslash\\", CreatedAt: time.Date(2026, 11, 21, 21, 31, 9, 725466693, time.UTC)},
		{ID: "N3st3dXx", From: "alice", Message: "unknown keys", CreatedAt: time.Date(2026, 11, 21, 21, 26, 25, 0, time.UTC)},
		{ID: "NoSndr00", From: "", Message: "empty sender"},
		{ID: "LaSt0001", From: "dave", Message: "legacy, no created_at\nsecond line\n"},
	}
	wantDelivered(t, s, "bob", want)
	// The duplicated id does not come back, with or without the cursor, and
	// not after the earlier tool marks that id read (it flips the first copy,
	// which already is).
	if err := s.removeCursor("bob"); err != nil {
		t.Fatal(err)
	}
	wantNoMessage(t, s, "bob")
	after := readFile(t, path)
	if strings.ReplaceAll(after, `"read_flag":true `, `"read_flag":false`) != orig {
		t.Errorf("file changed beyond the flags:\n%s", after)
	}
	oldToolMarkRead(t, path, "DuP1dUp1")
	wantNoMessage(t, s, "bob")
	wantUnread(t, s, "bob", 0)
	wantNoWarnings(t, w)

	// Both tools keep working on the file: the earlier tool appends and we
	// receive; we append and the earlier tool receives.
	id, err := oldToolAppend(path, "alice", "bob", "from the earlier tool <b>")
	if err != nil {
		t.Fatal(err)
	}
	if got := mustReceive(t, s, "bob"); got.ID != id || got.Message != "from the earlier tool <b>" {
		t.Errorf("got %+v; want the earlier tool's message %s", got, id)
	}
	ours := mustAppend(t, s, "alice", "bob", "from us")
	got, err := oldToolReceive(path)
	if err != nil || got == nil || got.ID != ours.ID || got.Message != "from us" {
		t.Errorf("the earlier tool received %+v, %v; want %s", got, err, ours.ID)
	}
	wantNoMessage(t, s, "bob")
	if got, err := oldToolReceive(path); got != nil || err != nil {
		t.Errorf("the earlier tool received %+v, %v; want nothing", got, err)
	}
}

// TestOldToolLegacyStates updates a recipients.jsonl written by older
// versions of the earlier tool: an entry with an empty name (W15), an entry
// with the boolean "notified" and no notified_at, an entry with
// last_read_at.
func TestOldToolLegacyStates(t *testing.T) {
	s, w := newStore(t)
	path := s.StatesPath()
	orig := lines(installFixture(t, "old-recipients-legacy.jsonl", path))

	if a := stateOf(t, s, "agent1"); a.Status != "work" || !a.NotifiedAt.IsZero() || !a.UpdatedAt.Equal(time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)) {
		t.Errorf("agent1 = %+v", a)
	}
	if a := stateOf(t, s, "agent2"); a.LastReadAt != 1795296384732 || !a.UpdatedAt.Equal(time.Date(2026, 11, 21, 21, 26, 24, 1e8, time.UTC)) {
		t.Errorf("agent2 = %+v", a)
	}

	s.Now = func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	if err := s.SetStatus(context.Background(), "agent1", "ready", "%4"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(context.Background(), "agent2", "work", ""); err != nil {
		t.Fatal(err)
	}
	got := lines(readFile(t, path))
	if len(got) != 3 || got[0] != orig[0] {
		t.Fatalf("the entry with an empty name was not kept verbatim:\n%s", strings.Join(got, "\n"))
	}
	if want := `{"recipient":"agent1","status":"ready","updated_at":"2026-12-01T00:00:00Z","notified_at":"0001-01-01T00:00:00Z","pane":"%4","notified":true}`; got[1] != want {
		t.Errorf("agent1 is\n%s\nwant\n%s", got[1], want)
	}
	if want := `{"recipient":"agent2","status":"work","updated_at":"2026-12-01T00:00:00Z","notified_at":"0001-01-01T00:00:00Z","last_read_at":1795296384732}`; got[2] != want {
		t.Errorf("agent2 is\n%s\nwant\n%s", got[2], want)
	}
	for i, l := range got {
		var st oldState
		if err := json.Unmarshal([]byte(l), &st); err != nil {
			t.Errorf("line %d does not decode for the earlier tool: %v", i, err)
		}
	}
	wantNoWarnings(t, w)
}

// TestBothToolsAtOnce runs the earlier tool's append and (atomic) receive
// against ours on one mailbox at the same time. Every message is delivered
// exactly once by one of the two tools, and the earlier tool can read the
// whole file at every step (it fails on any line it cannot decode).
func TestBothToolsAtOnce(t *testing.T) {
	s, w := newStore(t)
	path := s.MailboxPath("bob")
	const perSender = 60
	var mu sync.Mutex
	sent := map[string]string{}
	delivered := map[string][]string{}
	record := func(m map[string][]string, id, by string) {
		mu.Lock()
		m[id] = append(m[id], by)
		mu.Unlock()
	}

	if err := os.MkdirAll(s.MailboxDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	var senders, receivers sync.WaitGroup
	var done atomic.Bool
	for g := range 2 {
		senders.Go(func() {
			for i := range perSender {
				m, err := s.Append(context.Background(), "alice", "bob", fmt.Sprintf("new %d-%d <x>", g, i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sent[m.ID] = m.Message
				mu.Unlock()
			}
		})
		senders.Go(func() {
			for i := range perSender {
				body := fmt.Sprintf("old %d-%d <x>", g, i)
				id, err := oldToolAppend(path, "carol", "bob", body)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sent[id] = body
				mu.Unlock()
			}
		})
	}
	var oldCount, newCount atomic.Int64
	for range 2 {
		receivers.Go(func() {
			err := receiveUntilDone(s, "bob", done.Load, func(m *Message) {
				record(delivered, m.ID, "new")
				newCount.Add(1)
			})
			if err != nil {
				t.Error(err)
			}
		})
		receivers.Go(func() {
			for {
				finished := done.Load()
				m, err := oldToolReceive(path)
				if os.IsNotExist(err) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if m != nil {
					record(delivered, m.ID, "old")
					oldCount.Add(1)
					continue
				}
				if finished {
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	senders.Wait()
	done.Store(true)
	receivers.Wait()

	if len(sent) != 4*perSender {
		t.Fatalf("%d messages sent; want %d (an 8-character id collided?)", len(sent), 4*perSender)
	}
	for id, body := range sent {
		if by := delivered[id]; len(by) != 1 {
			t.Errorf("%s (%s) delivered %d times, by %v", id, body, len(by), by)
		}
	}
	for id := range delivered {
		if _, ok := sent[id]; !ok {
			t.Errorf("delivered an unknown id %s", id)
		}
	}
	if got, err := oldToolReceive(path); got != nil || err != nil {
		t.Errorf("the earlier tool still found %+v, %v", got, err)
	}
	wantNoMessage(t, s, "bob")
	wantNoWarnings(t, w)
	t.Logf("%d delivered by the earlier tool, %d by us", oldCount.Load(), newCount.Load())
	if oldCount.Load() == 0 || newCount.Load() == 0 {
		t.Errorf("one tool delivered nothing: the race was not exercised")
	}
}
