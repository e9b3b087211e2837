package mailbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// within runs fn, on the test's goroutine so that it may fail the test, and
// ends the whole test binary with a message naming what when fn has not
// returned after a few seconds, as an open that waits on a named pipe, or
// a lock wait that ignores its context, never would.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	timer := time.AfterFunc(5*time.Second, func() {
		panic(fmt.Sprintf("%s: %s still blocked after 5s", t.Name(), what))
	})
	defer timer.Stop()
	fn()
}

// warnings collects what a Store reports through Warnf.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warnf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, fmt.Sprintf(format, args...))
}

// wantNoWarnings fails the test if the store has warned since the last take.
func wantNoWarnings(t testing.TB, w *warnings) {
	t.Helper()
	if msgs := w.take(); len(msgs) != 0 {
		t.Errorf("warnings %q", msgs)
	}
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// newStore returns a Store on a fresh root and the warnings it reports.
func newStore(t testing.TB) (*Store, *warnings) {
	t.Helper()
	w := &warnings{}
	s := New(t.TempDir())
	s.Warnf = w.warnf
	return s, w
}

// writeMailbox writes a raw mailbox file, creating the directories.
func writeMailbox(t testing.TB, s *Store, name, content string) string {
	t.Helper()
	path := s.MailboxPath(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// appendRaw appends text to an existing file as it is, as another writer
// (or a cut-short one) would leave it.
func appendRaw(t testing.TB, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustAppend(t testing.TB, s *Store, from, to, body string) Message {
	t.Helper()
	m, err := s.Append(context.Background(), from, to, body)
	if err != nil {
		t.Fatalf("Append(%q, %q): %v", from, to, err)
	}
	return m
}

// mustReceive receives one message and fails the test when there is none.
func mustReceive(t testing.TB, s *Store, name string) *Message {
	t.Helper()
	m, err := s.Receive(context.Background(), name, nil)
	if err != nil {
		t.Fatalf("Receive(%q): %v", name, err)
	}
	if m == nil {
		t.Fatalf("Receive(%q): no message, want one", name)
	}
	return m
}

// wantDelivered receives every message of want from name's mailbox, in
// order, checks each (To must be name, and it comes back read), and then
// that nothing is left.
func wantDelivered(t testing.TB, s *Store, name string, want []Message) {
	t.Helper()
	for i, wm := range want {
		wantMessage(t, i, mustReceive(t, s, name), name, wm)
	}
	wantNoMessage(t, s, name)
}

// wantMessage checks that got, the i-th message received from name's
// mailbox, is want, addressed to name and read.
func wantMessage(t testing.TB, i int, got *Message, name string, want Message) {
	t.Helper()
	if got.ID != want.ID || got.From != want.From || got.To != name || got.Message != want.Message || !got.ReadFlag || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("message %d:\n got %+v\nwant %+v", i, *got, want)
	}
}

func wantNoMessage(t testing.TB, s *Store, name string) {
	t.Helper()
	m, err := s.Receive(context.Background(), name, nil)
	if err != nil || m != nil {
		t.Fatalf("Receive(%q) = %+v, %v; want nil, nil", name, m, err)
	}
}

// wantUnread checks the number of unread lines, and HasUnread with it.
func wantUnread(t testing.TB, s *Store, name string, want int) {
	t.Helper()
	if n := unreadLines(t, s, name); n != want {
		t.Fatalf("%s holds %d unread lines; want %d", name, n, want)
	}
	if has, err := s.HasUnread(name); err != nil || has != (want > 0) {
		t.Fatalf("HasUnread(%q) = %v, %v; want %v", name, has, err, want > 0)
	}
}

// lines splits a file's content into its lines, without newlines.
func lines(content string) []string {
	return strings.Split(strings.TrimSuffix(content, "\n"), "\n")
}

// saveCursor records c for name's mailbox; the caller holds its lock.
func (s *Store) saveCursor(name string, c cursor) error {
	cf := s.openCursor(name, true)
	defer cf.close()
	return cf.save(c)
}

// unreadLines counts the complete lines of name's mailbox that a receive
// would deliver, reading the whole file without its lock or cursor.
func unreadLines(t testing.TB, s *Store, name string) int {
	t.Helper()
	data, err := os.ReadFile(s.MailboxPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range bytes.Lines(data) {
		if body, ok := bytes.CutSuffix(line, []byte("\n")); ok {
			if kind, _, _, _ := classifyLine(body); kind == lineUnread {
				n++
			}
		}
	}
	return n
}
