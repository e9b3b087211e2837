package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentmail/mailbox"
)

// benchNotify measures how long a message takes from the moment it is
// stored to the moment a wake reaches its recipient: a waiting
// watch --hook exiting with its notice, the mailman typing its ring, and
// the mailman queueing for a Codex session (a fake codex that records the
// time it was called). The mailman rings an agent at most once a minute,
// so each of its trials rings a window of its own.
func (p *project) benchNotify(trials int) {
	fmt.Printf("notification latency from a message stored to its wake (%d trials each):\n", trials)
	hook := p.notifyHook(trials)
	fmt.Printf("  watch --hook notice:     p50 %s, p99 %s, max %s\n", fmtDur(pct(hook, 50)), fmtDur(pct(hook, 99)), fmtDur(pct(hook, 100)))
	ring, queue := p.notifyMailman(trials)
	fmt.Printf("  mailman ring typed:      p50 %s, p99 %s, max %s\n", fmtDur(pct(ring, 50)), fmtDur(pct(ring, 99)), fmtDur(pct(ring, 100)))
	fmt.Printf("  mailman codex queue call: p50 %s, p99 %s, max %s\n", fmtDur(pct(queue, 50)), fmtDur(pct(queue, 99)), fmtDur(pct(queue, 100)))
}

// notifyHook times a message stored to watch --hook's exit with its notice.
func (p *project) notifyHook(trials int) []time.Duration {
	st := mailbox.New(p.root)
	p.fill(1, 0)
	var ds []time.Duration
	for i := range trials {
		cmd := p.command(p.bobPane, "watch", "--hook", "--timeout", "30s")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			fatalf("%v", err)
		}
		watching(cmd.Process.Pid)
		if _, err := st.Append(context.Background(), "alice", "bob", fmt.Sprintf("hook %d", i)); err != nil {
			fatalf("%v", err)
		}
		stored := time.Now()
		cmd.Wait()
		ds = append(ds, time.Since(stored))
		if !strings.Contains(stderr.String(), "You got 1 new message") {
			fatalf("watch --hook said %q", stderr.String())
		}
	}
	return ds
}

// notifyMailman times a message stored to the mailman's ring, typed into
// a pane of its own, and to its codex queue call, for agents whose hooks
// named a Codex session.
func (p *project) notifyMailman(trials int) (ring, queue []time.Duration) {
	bin, err := os.MkdirTemp("", "amfake")
	if err != nil {
		fatalf("%v", err)
	}
	atExit(func() { os.RemoveAll(bin) })
	calls := filepath.Join(bin, "calls")
	fake := "#!/bin/sh\ndate +%s%N >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(fake), 0o755); err != nil {
		fatalf("%v", err)
	}
	typed := make([]string, trials)
	coded := make([]string, trials)
	for i := range trials {
		typed[i] = p.readyWindow(fmt.Sprintf("t%d", i), "")
		coded[i] = p.readyWindow(fmt.Sprintf("c%d", i), fmt.Sprintf("s%d", i))
	}
	mm := p.command(p.alicePane, "mailman", "--enter-delay", "0")
	mm.Env = append(mm.Env, "PATH="+bin+":"+os.Getenv("PATH"))
	if err := mm.Start(); err != nil {
		fatalf("%v", err)
	}
	defer func() { mm.Process.Signal(os.Interrupt); mm.Wait() }()
	time.Sleep(500 * time.Millisecond) // the mailman's first pass
	st := mailbox.New(p.root)
	for i := range trials {
		ring = append(ring, p.timeNotice(st, fmt.Sprintf("t%d", i), func() bool {
			return strings.Contains(p.tmux("capture-pane", "-p", "-t", typed[i]), "Check your agentmail")
		}))
		n := i + 1
		queue = append(queue, p.timeNotice(st, fmt.Sprintf("c%d", i), func() bool {
			b, _ := os.ReadFile(calls)
			return bytes.Count(b, []byte("\n")) >= n
		}))
	}
	return ring, queue
}

// readyWindow opens a window named name and sets its agent ready, from a
// Codex hook naming session when session is not "".
func (p *project) readyWindow(name, session string) string {
	pane := p.tmux("new-window", "-d", "-t", "proj:", "-n", name, "-P", "-F", "#{pane_id}", "cat")
	args := []string{"status", "ready"}
	if session != "" {
		args = []string{"status", "--hook", "codex", "ready"}
	}
	cmd := p.command(pane, args...)
	cmd.Stdin = strings.NewReader(`{"session_id":"` + session + `"}`)
	if out, err := cmd.CombinedOutput(); err != nil {
		fatalf("status: %v: %s", err, out)
	}
	return pane
}

// timeNotice stores a message for name and returns how long it took until
// done says its wake happened.
func (p *project) timeNotice(st *mailbox.Store, name string, done func() bool) time.Duration {
	if _, err := st.Append(context.Background(), "alice", name, "wake up"); err != nil {
		fatalf("%v", err)
	}
	stored := time.Now()
	for deadline := stored.Add(10 * time.Second); !done(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			fatalf("no wake for %s within 10 s", name)
		}
	}
	return time.Since(stored)
}
