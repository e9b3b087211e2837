package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tools"
)

const (
	initLine    = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"
	receiveLine = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"receive","arguments":{}}}` + "\n"
)

// answerWriter hands each written line to check, and fails the write when
// check returns an error.
type answerWriter struct {
	out   bytes.Buffer
	check func(line string) error
}

func (w *answerWriter) Write(p []byte) (int, error) {
	if err := w.check(string(p)); err != nil {
		return 0, err
	}
	return w.out.Write(p)
}

// mailForAlice returns a service for alice with one message from bob.
func mailForAlice(t *testing.T) (*tools.Service, *mailbox.Store) {
	t.Helper()
	store := mailbox.New(quietTempDir(t))
	if _, err := store.Append(context.Background(), "bob", "alice", "for alice"); err != nil {
		t.Fatal(err)
	}
	return &tools.Service{Store: store, Term: newFakeTerm("alice", "alice", "bob")}, store
}

// quietTempDir is t.TempDir for a mailbox that a cancelled wait may still
// write its read cursor into (a cache) just after the test returns: its
// removal is retried for a while instead of failing the test.
func quietTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "mcp-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("removing the test's directory: %v", err)
	})
	return dir
}

func unread(t *testing.T, store *mailbox.Store) int {
	t.Helper()
	n, err := store.Unread(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The receive tool's answer is written while the message is still unread:
// marking it read comes after.
func TestReceiveAnswersBeforeMarkingRead(t *testing.T) {
	svc, store := mailForAlice(t)
	answered := false
	w := &answerWriter{check: func(line string) error {
		if !strings.Contains(line, `"id":1,`) {
			return nil
		}
		answered = true
		if !strings.Contains(line, "for alice") {
			t.Errorf("answer %s lacks the message", line)
		}
		data, err := os.ReadFile(store.MailboxPath("alice"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(`"read_flag":false`)) {
			t.Errorf("the message was marked read before its answer was written:\n%s", data)
		}
		return nil
	}}
	if err := mcp.NewServer("test", nil).ServeStdio(context.Background(), strings.NewReader(initLine+receiveLine), w, svc); err != nil {
		t.Fatal(err)
	}
	if !answered {
		t.Fatalf("no answer to the receive call; output:\n%s", w.out.String())
	}
	if n := unread(t, store); n != 0 {
		t.Errorf("%d unread after the answer went out, want 0", n)
	}
}

// A receive whose answer cannot be written leaves the message unread, for
// the next receive, as the CLI does.
func TestReceiveAnswerLostStaysUnread(t *testing.T) {
	svc, store := mailForAlice(t)
	w := &answerWriter{check: func(line string) error {
		if strings.Contains(line, `"id":1,`) {
			return errors.New("broken pipe")
		}
		return nil
	}}
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	if err := mcp.NewServer("test", logf).ServeStdio(context.Background(), strings.NewReader(initLine+receiveLine), w, svc); err != nil {
		t.Fatal(err)
	}
	if n := unread(t, store); n != 1 {
		t.Fatalf("%d unread after the answer was lost, want 1", n)
	}
	if !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "broken pipe") }) {
		t.Errorf("logged %q, want the write error", logged)
	}

	var out bytes.Buffer
	if err := mcp.NewServer("test", nil).ServeStdio(context.Background(), strings.NewReader(initLine+receiveLine), &out, svc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "for alice") {
		t.Errorf("the next receive did not get the message:\n%s", out.String())
	}
}

// A receive whose answer the client does not read within a second leaves
// its message unread and says so, whether the answer had started out (it
// still reaches the client later) or was waiting behind one that had.
func TestReceiveClientNotReading(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the one-second write wait twice")
	}
	svc, store := mailForAlice(t)
	if _, err := store.Append(context.Background(), "bob", "alice", "second for alice"); err != nil {
		t.Fatal(err)
	}
	// The first answer stays blocked until both receives have given up,
	// which each logs; the input stays open until the second answer is out.
	open := make(chan struct{})
	var mu sync.Mutex
	gaveUp := 0
	logf := func(format string, args ...any) {
		if !strings.Contains(fmt.Sprintf(format, args...), "stays unread") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if gaveUp++; gaveUp == 2 {
			close(open)
		}
	}
	pr, pw := io.Pipe()
	w := &answerWriter{check: func(line string) error {
		switch {
		case strings.Contains(line, `"id":1,`):
			<-open
		case strings.Contains(line, `"id":2,`):
			defer pw.Close()
		}
		return nil
	}}
	second := strings.Replace(receiveLine, `"id":1,`, `"id":2,`, 1)
	go io.WriteString(pw, initLine+receiveLine+second)
	if err := mcp.NewServer("test", logf).ServeStdio(context.Background(), pr, w, svc); err != nil {
		t.Fatal(err)
	}
	out := w.out.String()
	if !strings.Contains(out, `"text":"From: bob\nID: `) || !strings.Contains(out, `"id":2,"result":{"content":[{"type":"text","text":"jsonrpc: the client is not reading its answers; the message stays unread"}],"isError":true}`) {
		t.Errorf("want the first message, then an error saying the message stays unread:\n%s", out)
	}
	if n := unread(t, store); n != 2 {
		t.Errorf("%d unread, want 2: no answer was read in time", n)
	}
}

// In a 2025-03-26 batch, receive works as on its own line when it is the
// batch's last request: the array holding its answer is written while the
// message is still unread, and an array that cannot be written leaves it
// unread. Followed by another request, it refuses and leaves the message
// unread, since the array could go out only after that request has run.
func TestReceiveInBatch(t *testing.T) {
	const init2503 = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"
	const receiveThenPing = `[` + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"receive","arguments":{}}}` +
		`,{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n"
	const pingThenReceive = `[{"jsonrpc":"2.0","id":2,"method":"ping"},` +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"receive","arguments":{}}}]` + "\n"
	for _, tt := range []struct {
		name       string
		batch      string
		failWrite  bool
		wantText   string
		wantUnread int
	}{
		{"last", pingThenReceive, false, `"text":"From: bob\nID: `, 0},
		{"last, array not written", pingThenReceive, true, "", 1},
		{"followed by another request", receiveThenPing, false, `"text":"only the last request of a batch can be answered before the batch has run`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := mailForAlice(t)
			w := &answerWriter{check: func(line string) error {
				if !strings.HasPrefix(line, "[") {
					return nil
				}
				// receive holds the mailbox's lock meanwhile: read the file.
				data, err := os.ReadFile(store.MailboxPath("alice"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(data, []byte(`"read_flag":false`)) {
					t.Errorf("the message was marked read before the array was written:\n%s", data)
				}
				if tt.failWrite {
					return errors.New("broken pipe")
				}
				return nil
			}}
			if err := mcp.NewServer("test", nil).ServeStdio(context.Background(), strings.NewReader(init2503+tt.batch), w, svc); err != nil {
				t.Fatal(err)
			}
			if out := w.out.String(); !strings.Contains(out, tt.wantText) {
				t.Errorf("output lacks %s:\n%s", tt.wantText, out)
			}
			if n := unread(t, store); n != tt.wantUnread {
				t.Errorf("%d unread after the batch, want %d", n, tt.wantUnread)
			}
		})
	}
}

// A receive that waits inside a 2025-03-26 batch holds the batch up, and
// the connection with it, since the batch's array cannot go out before
// it: the lines after the batch are read once its wait is over, and the
// end of the input is acted on then.
func TestReceiveWaitInBatchHoldsTheBatch(t *testing.T) {
	svc, store := mailForAlice(t)
	if _, err := store.Receive(context.Background(), "alice", func(*mailbox.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	const init2503 = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"
	const batch = `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"receive","arguments":{"timeout_seconds":0.2}}}]` + "\n"
	const after = `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"
	var out bytes.Buffer
	start := time.Now()
	if err := mcp.NewServer("test", nil).ServeStdio(context.Background(), strings.NewReader(init2503+batch+after), &out, svc); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("Serve returned after %v, before the wait was over", d)
	}
	got := out.String()
	waited := strings.Index(got, `[{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"No unread messages"}]`)
	pong := strings.Index(got, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	if waited < 0 || pong < waited {
		t.Errorf("want the batch's timed-out receive, then the ping's answer:\n%s", got)
	}
}
