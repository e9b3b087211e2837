package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"

	"agentmail/mailbox"
	"agentmail/tmux"
	"agentmail/tools"
)

// aloneIn is a tmux session of one window, the caller's.
type aloneIn string

func (a aloneIn) Session(context.Context) (*tmux.Session, error) {
	w := tmux.Window{ID: "@1", Name: string(a), Pane: "%1"}
	return &tmux.Session{Self: w, Windows: []tmux.Window{w}}, nil
}

// gatedWriter blocks every Write until release is closed, saying on
// entered that one has begun, and then fails with err or keeps the bytes.
type gatedWriter struct {
	entered chan struct{}
	release chan struct{}
	err     error
	got     bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.entered <- struct{}{}
	<-w.release
	if w.err != nil {
		return 0, w.err
	}
	return w.got.Write(p)
}

// A receive whose write is still going after deliverWait lets go of the
// mailbox with the message unread, and marks it read only once the write
// is done: a write that then fails leaves it unread, and one that another
// receive beat to it was delivered twice, never lost. One it cannot mark
// read in time stays unread, with a warning that it will come again.
func TestReceiveSlowWrite(t *testing.T) {
	for _, tt := range []struct {
		name      string
		writeErr  error
		meanwhile bool // another receive takes the message while the write waits
		held      bool // another process holds the mailbox's lock when the write is done
		wantErr   bool
	}{
		{name: "written"},
		{name: "write fails", writeErr: errors.New("reader gone"), wantErr: true},
		{name: "received meanwhile", meanwhile: true},
		{name: "mailbox held at the marking", held: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := mailbox.New(t.TempDir())
			if _, err := store.Append(context.Background(), "bob", "alice", "hello"); err != nil {
				t.Fatal(err)
			}
			svc := &tools.Service{Store: store, Term: aloneIn("alice")}
			w := &gatedWriter{entered: make(chan struct{}, 1), release: make(chan struct{}), err: tt.writeErr}
			var warn bytes.Buffer
			mw := &messageWriter{w: w, warn: &warn, markWait: tools.DefaultLockWait}
			if tt.held {
				mw.markWait = 100 * time.Millisecond
			}
			type result struct {
				m   *mailbox.Message
				err error
			}
			done := make(chan result, 1)
			go func() {
				m, err := mw.receive(context.Background(), svc)
				done <- result{m, err}
			}()
			<-w.entered
			// HasUnread takes the mailbox's lock: it answers once the
			// receive has let go of it, after deliverWait.
			start := time.Now()
			if has, err := store.HasUnread("alice"); err != nil || !has {
				t.Fatalf("while the write waits: HasUnread = %v, %v; want true", has, err)
			}
			if d := time.Since(start); d > deliverWait+5*time.Second {
				t.Errorf("the mailbox stayed locked for %v", d)
			}
			if tt.meanwhile {
				if m, err := store.Receive(context.Background(), "alice", nil); err != nil || m == nil {
					t.Fatalf("the other receive got %v, %v; want the message", m, err)
				}
			}
			var holder *lockedfile.File
			if tt.held {
				var err error
				if holder, err = lockedfile.OpenFile(store.MailboxPath("alice"), os.O_RDWR, 0); err != nil {
					t.Fatal(err)
				}
			}
			close(w.release)
			r := <-done
			if tt.held {
				if want := "warning: the message was written but could not be marked read, so it will come again: "; !strings.HasPrefix(warn.String(), want) {
					t.Errorf("warned %q, want %q", warn.String(), want)
				}
				holder.Close()
				if has, err := store.HasUnread("alice"); err != nil || !has {
					t.Errorf("after a marking that gave up: HasUnread = %v, %v; want true", has, err)
				}
				return
			}
			if (r.err != nil) != tt.wantErr {
				t.Fatalf("receive = %v, %v; want an error: %v", r.m, r.err, tt.wantErr)
			}
			if !tt.wantErr && (r.m == nil || r.m.Message != "hello" || w.got.String() != tools.ReceivedText(r.m)+"\n") {
				t.Errorf("receive = %v, wrote %q; want the message", r.m, w.got.String())
			}
			if has, err := store.HasUnread("alice"); err != nil || has != tt.wantErr {
				t.Errorf("after the write: HasUnread = %v, %v; want %v", has, err, tt.wantErr)
			}
			if warn.Len() != 0 {
				t.Errorf("warned %q", warn.String())
			}
		})
	}
}

func TestVisibleControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode\n\tand a tab": "plain text, ünïcode\n\tand a tab",
		"\x1b[31mred\x1b]0;title\x07":      "^[[31mred^[]0;title^G",
		"over\rwrite\x00\x7f":              "over^Mwrite^@^?",
		"c1 \u009b2J \u0085":               "c1 M-^[2J M-^E",
	} {
		if got := visibleControls(in); got != want {
			t.Errorf("visibleControls(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWarningsOneLine checks that warnings of the mailbox, which can quote
// a path or a window name, are one line each with their control characters
// escaped, as the MCP server's other log lines are.
func TestWarningsOneLine(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir(".git", 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	e := &env{stderr: &stderr}
	svc := e.service("agentmail mcp: warning: ")
	if svc.Store == nil {
		t.Fatal(svc.StoreErr)
	}
	svc.Store.Warnf("skipping %s", "we\nird\x1b[2J \u0085")
	if got, want := stderr.String(), `agentmail mcp: warning: skipping we\nird\x1b[2J \u0085`+"\n"; got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
	for in, want := range map[string]string{
		"plain, ünïcode": "plain, ünïcode",
		"a\r\nb\tc\x00":  `a\r\nb\tc\x00`,
	} {
		if got := escapeControls(in); got != want {
			t.Errorf("escapeControls(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIsNull checks which outputs receive refuses to write a message into:
// the null device under any name, and /dev/zero, but not a file.
func TestIsNull(t *testing.T) {
	open := func(path string) *os.File {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	dir := t.TempDir()
	for path, want := range map[string]bool{
		os.DevNull:                     true,
		"/dev/zero":                    true,
		filepath.Join(dir, "file.txt"): false,
	} {
		if got := isNull(open(path)); got != want {
			t.Errorf("isNull(%s) = %v, want %v", path, got, want)
		}
	}
	// Another node of the null device, as a container or chroot has.
	node := filepath.Join(dir, "null")
	if err := exec.Command("mknod", node, "c", "1", "3").Run(); err != nil {
		t.Logf("another node of the null device not tried: mknod: %v", err)
		return
	}
	if !isNull(open(node)) {
		t.Errorf("isNull(%s, a node of the null device) = false", node)
	}
}

// TestDaemonLogRotates checks that the daemon's log, once it has reached
// maxLogSize, is renamed to mailman.log.1 (replacing the one before) and
// a new one is started, so that a mailman running for weeks does not
// fill the disk.
func TestDaemonLogRotates(t *testing.T) {
	defer func(n int64) { maxLogSize = n }(maxLogSize)
	maxLogSize = 100
	path := filepath.Join(t.TempDir(), "mailman.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	l := &daemonLog{path: path, f: f}
	defer func() { l.f.Close() }()
	line := strings.Repeat("x", 39) + "\n"
	for range 7 { // 280 bytes: two rotations
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range map[string]int{path: 40, path + ".1": 120} {
		fi, err := os.Stat(p)
		if err != nil || fi.Size() != int64(want) {
			t.Errorf("%s: %v, %v; want %d bytes", filepath.Base(p), fi, err, want)
		}
	}
}
