package mailbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The test binary doubles as a helper process, so that receivers and
// appenders can race across processes and not only goroutines.
const (
	helperEnv     = "MAILBOX_TEST_HELPER" // "append" or "receive"
	helperRootEnv = "MAILBOX_TEST_ROOT"
	helperArgEnv  = "MAILBOX_TEST_ARG" // append: "<tag> <count>"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "append":
		os.Exit(helperAppend())
	case "receive":
		os.Exit(helperReceive())
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(3)
	}
}

func helperAppend() int {
	s := New(os.Getenv(helperRootEnv))
	tag, count, _ := strings.Cut(os.Getenv(helperArgEnv), " ")
	n, _ := strconv.Atoi(count)
	for i := range n {
		if _, err := s.Append(context.Background(), "sender", "bob", fmt.Sprintf("%s-%d", tag, i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// helperReceive receives from bob's mailbox and prints each body on a line
// of its own, until the done file exists and the mailbox is empty.
func helperReceive() int {
	root := os.Getenv(helperRootEnv)
	s := New(root)
	s.Warnf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	err := receiveUntilDone(s, "bob", func() bool {
		_, err := os.Stat(filepath.Join(root, "done"))
		return err == nil
	}, func(m *Message) { fmt.Fprintln(out, m.Message) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// receiveUntilDone receives until done reports true and a receive after
// that finds nothing.
func receiveUntilDone(s *Store, name string, done func() bool, got func(*Message)) error {
	for {
		finished := done() // Before the receive: nothing is appended after it.
		m, err := s.Receive(context.Background(), name, nil)
		if err != nil {
			return err
		}
		if m != nil {
			got(m)
			continue
		}
		if finished {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

func helperCmd(t *testing.T, root, role, arg string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, helperRootEnv+"="+root, helperArgEnv+"="+arg)
	cmd.Stderr = &testWriter{t: t, prefix: role + ": "}
	return cmd
}

type testWriter struct {
	t      *testing.T
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Errorf("%s%s", w.prefix, p)
	return len(p), nil
}

// TestReceiveExactlyOnce sends 400 messages from appender processes and
// goroutines while receiver processes and goroutines drain the mailbox:
// every message must come out exactly once.
func TestReceiveExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const (
		procs      = 3  // of each kind
		goroutines = 3  // of each kind
		perSender  = 67 // (3+3) * 67 = 402 messages
	)
	s, w := newStore(t)
	root := s.Root
	var want []string

	var receivers []*exec.Cmd
	var outputs []*bytes.Buffer
	for range procs {
		cmd := helperCmd(t, root, "receive", "")
		out := &bytes.Buffer{}
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		receivers = append(receivers, cmd)
		outputs = append(outputs, out)
	}
	var done atomic.Bool
	var mu sync.Mutex
	var inProc []string
	var recvWG sync.WaitGroup
	for range goroutines {
		recvWG.Go(func() {
			err := receiveUntilDone(s, "bob", done.Load, func(m *Message) {
				mu.Lock()
				inProc = append(inProc, m.Message)
				mu.Unlock()
			})
			if err != nil {
				t.Error(err)
			}
		})
	}

	var sendWG sync.WaitGroup
	for p := range procs {
		tag := fmt.Sprintf("proc%d", p)
		for i := range perSender {
			want = append(want, fmt.Sprintf("%s-%d", tag, i))
		}
		cmd := helperCmd(t, root, "append", fmt.Sprintf("%s %d", tag, perSender))
		sendWG.Go(func() {
			if err := cmd.Run(); err != nil {
				t.Errorf("appender: %v", err)
			}
		})
	}
	for g := range goroutines {
		tag := fmt.Sprintf("goroutine%d", g)
		for i := range perSender {
			want = append(want, fmt.Sprintf("%s-%d", tag, i))
		}
		sendWG.Go(func() {
			for i := range perSender {
				if _, err := s.Append(context.Background(), "sender", "bob", fmt.Sprintf("%s-%d", tag, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	sendWG.Wait()
	if err := os.WriteFile(filepath.Join(root, "done"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done.Store(true)
	recvWG.Wait()
	for _, cmd := range receivers {
		if err := cmd.Wait(); err != nil {
			t.Errorf("receiver: %v", err)
		}
	}

	count := map[string]int{}
	for _, b := range inProc {
		count[b]++
	}
	byProc := 0
	for _, out := range outputs {
		for _, b := range lines(out.String()) {
			if b != "" {
				count[b]++
				byProc++
			}
		}
	}
	for _, b := range want {
		if count[b] != 1 {
			t.Errorf("%s delivered %d times", b, count[b])
		}
		delete(count, b)
	}
	for b, n := range count {
		t.Errorf("unexpected message %q delivered %d times", b, n)
	}
	wantUnread(t, s, "bob", 0)
	if n := len(lines(readFile(t, s.MailboxPath("bob")))); n != len(want) {
		t.Errorf("mailbox has %d lines; want %d", n, len(want))
	}
	wantNoWarnings(t, w)
	t.Logf("%d messages: %d received by processes, %d by goroutines", len(want), byProc, len(inProc))
}

// TestCleanupNeverLosesConcurrentMail runs Cleanup in a loop, so that it
// keeps rewriting and removing the mailbox, while messages are appended and
// received: every message must be received exactly once.
func TestCleanupNeverLosesConcurrentMail(t *testing.T) {
	s, w := newStore(t)
	// The cleaner lives an hour ahead, so every read message is old to it.
	cleaner := New(s.Root)
	cleaner.Now = func() time.Time { return time.Now().Add(time.Hour) }
	const rounds, senders, perRound = 5, 3, 30

	var done, stop atomic.Bool
	var got []string
	var receiver, bg sync.WaitGroup
	var cleanups, removed, mailboxesRemoved atomic.Int64
	receiver.Go(func() {
		err := receiveUntilDone(s, "bob", done.Load, func(m *Message) { got = append(got, m.Message) })
		if err != nil {
			t.Error(err)
		}
	})
	bg.Go(func() {
		for !stop.Load() {
			rep, err := cleaner.Cleanup(CleanupOptions{StaleAfter: time.Hour, DeliveredAfter: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			cleanups.Add(1)
			removed.Add(int64(rep.Messages))
			mailboxesRemoved.Add(int64(rep.Mailboxes))
		}
	})
	// Rounds: within a round the senders race the receiver and the
	// cleaner; between rounds the mailbox is left to run empty, so the
	// cleaner removes it and the next round's appends recreate it.
	for r := range rounds {
		var sendWG sync.WaitGroup
		for g := range senders {
			sendWG.Go(func() {
				for i := range perRound {
					if _, err := s.Append(context.Background(), "alice", "bob", fmt.Sprintf("%d-%d-%d", r, g, i)); err != nil {
						t.Error(err)
						return
					}
					if i%10 == 9 {
						time.Sleep(time.Millisecond) // Let the mailbox run empty now and then.
					}
				}
			})
		}
		sendWG.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(s.MailboxPath("bob")); errors.Is(err, fs.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("round %d: the drained mailbox was never removed", r)
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	done.Store(true)
	receiver.Wait()
	stop.Store(true)
	bg.Wait()

	count := map[string]int{}
	for _, b := range got {
		count[b]++
	}
	for r := range rounds {
		for g := range senders {
			for i := range perRound {
				if b := fmt.Sprintf("%d-%d-%d", r, g, i); count[b] != 1 {
					t.Errorf("%s received %d times", b, count[b])
				}
			}
		}
	}
	if len(got) != rounds*senders*perRound {
		t.Errorf("received %d messages; want %d", len(got), rounds*senders*perRound)
	}
	if _, err := os.Stat(s.MailboxPath("bob")); err == nil {
		if has, err := s.HasUnread("bob"); err != nil || has {
			t.Errorf("HasUnread = %v, %v", has, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Error(err)
	}
	wantNoWarnings(t, w)
	t.Logf("%d cleanups removed %d messages and %d mailboxes", cleanups.Load(), removed.Load(), mailboxesRemoved.Load())
	if removed.Load() == 0 || mailboxesRemoved.Load() < rounds {
		t.Errorf("cleanup removed %d messages and %d mailboxes: the race was not exercised", removed.Load(), mailboxesRemoved.Load())
	}
}
