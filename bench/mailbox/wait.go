package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentmail/mailbox"
)

// inboxUnread is how many messages of a filled mailbox are unread when the
// inbox is read: the same at every size, so that what grows is only the
// history the view must not read.
const inboxUnread = 20

// benchInbox measures reading the resource agentmail://inbox over MCP from
// bob's mailbox of n stored messages, inboxUnread of them unread.
func (p *project) benchInbox(n int) []time.Duration {
	p.fill(n, min(n, inboxUnread))
	c := p.startMCP(p.bobPane)
	defer c.close()
	var ds []time.Duration
	for range *mcpRunsFlag {
		start := time.Now()
		resp := c.call("resources/read", `{"uri":"agentmail://inbox"}`)
		ds = append(ds, time.Since(start))
		if !strings.Contains(resp, `# Inbox of bob`) {
			fatalf("inbox read answered %s", resp)
		}
	}
	return ds
}

// benchWake measures, over MCP and the CLI, the time from a message being
// stored to a receive that was waiting for it returning it.
func (p *project) benchWake(trials int) {
	st := mailbox.New(p.root)
	ctx := context.Background()
	// Start from an empty mailbox: every receive below must wait.
	p.fill(1, 0)

	c := p.startMCP(p.bobPane)
	var mcp []time.Duration
	for i := range trials {
		c.nextID++
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"receive","arguments":{"timeout_seconds":30}}}`+"\n", c.nextID)
		if _, err := io.WriteString(c.stdin, req); err != nil {
			fatalf("mcp: %v", err)
		}
		// Let the call start waiting; the figure is from the store on.
		time.Sleep(20 * time.Millisecond)
		if _, err := st.Append(ctx, "alice", "bob", fmt.Sprintf("wake %d", i)); err != nil {
			fatalf("%v", err)
		}
		stored := time.Now()
		line, err := c.stdout.ReadString('\n')
		if err != nil {
			fatalf("mcp: %v; stderr: %s", err, c.stderr.String())
		}
		mcp = append(mcp, time.Since(stored))
		if !strings.Contains(line, fmt.Sprintf(`wake %d"`, i)) {
			fatalf("waiting receive answered %s", line)
		}
	}
	c.close()

	var cli []time.Duration
	for i := range trials {
		cmd := p.command(p.bobPane, "receive", "--wait", "30s")
		out, err := cmd.StdoutPipe()
		if err != nil {
			fatalf("%v", err)
		}
		if err := cmd.Start(); err != nil {
			fatalf("%v", err)
		}
		watching(cmd.Process.Pid)
		if _, err := st.Append(ctx, "alice", "bob", fmt.Sprintf("wake %d", i)); err != nil {
			fatalf("%v", err)
		}
		stored := time.Now()
		line, err := bufio.NewReader(out).ReadString('\n')
		d := time.Since(stored)
		io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil || line != "From: alice\n" {
			fatalf("receive --wait: %v, first line %q", err, line)
		}
		cli = append(cli, d)
	}
	fmt.Printf("wake latency from a message stored to a waiting receive returning it (%d trials each; target p50 <= 10 ms, p99 <= 50 ms):\n", trials)
	fmt.Printf("  MCP receive timeout_seconds: p50 %s, p99 %s, max %s\n", fmtDur(pct(mcp, 50)), fmtDur(pct(mcp, 99)), fmtDur(pct(mcp, 100)))
	fmt.Printf("  CLI receive --wait:          p50 %s, p99 %s, max %s\n", fmtDur(pct(cli, 50)), fmtDur(pct(cli, 99)), fmtDur(pct(cli, 100)))
}

// idleWait runs a CLI receive that waits d on an empty mailbox, alone,
// and reports its CPU time beside that of a receive that does not wait
// (the start-up both pay).
func (p *project) idleWait(d time.Duration) {
	pane := p.tmux("new-window", "-d", "-t", "proj:", "-n", "carol", "-P", "-F", "#{pane_id}", "cat")
	cpu := func(args ...string) time.Duration {
		cmd := p.command(pane, args...)
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil || out.String() != "No unread messages\n" {
			fatalf("receive %v: %v, %q", args, err, out.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	waiting := cpu("receive", "--wait", d.String())
	var plain []time.Duration
	for range 20 {
		plain = append(plain, cpu("receive"))
	}
	fmt.Printf("CPU of a CLI receive waiting %v with no mail: %s; of a receive that does not wait: %s (median of 20);\n", d, fmtDur(waiting), fmtDur(pct(plain, 50)))
	fmt.Printf("  the wait itself: %s (target under 10 ms)\n\n", fmtDur(waiting-pct(plain, 50)))
}

var bodyRE = regexp.MustCompile(`"message":"(m[0-9]+)"`)

// benchWaiters runs one MCP server per mailbox, each receiving with a wait
// in a loop, while as many senders store messages round-robin, and checks
// that every message is delivered once and only once.
func (p *project) benchWaiters(agents, messages int) {
	st := mailbox.New(p.root)
	names := make([]string, agents)
	clients := make([]*mcpClient, agents)
	for i := range agents {
		names[i] = fmt.Sprintf("w%d", i)
		pane := p.tmux("new-window", "-d", "-t", "proj:", "-n", names[i], "-P", "-F", "#{pane_id}", "cat")
		clients[i] = p.startMCP(pane)
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	total := 0
	per := make([]int, agents)
	for i := range messages {
		per[i%agents]++
	}
	start := time.Now()
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < per[i]; {
				resp := c.call("tools/call", `{"name":"receive","arguments":{"timeout_seconds":30}}`)
				if strings.Contains(resp, `"timed_out":true`) {
					fatalf("%s: a waiting receive timed out with mail still to come", names[i])
				}
				m := bodyRE.FindStringSubmatch(resp)
				if m == nil {
					fatalf("%s: receive answered %s", names[i], resp)
				}
				body := m[1]
				mu.Lock()
				got[body]++
				total++
				mu.Unlock()
				n++
			}
		}()
	}
	var sw sync.WaitGroup
	for s := range agents {
		sw.Add(1)
		go func() {
			defer sw.Done()
			for i := s; i < messages; i += agents {
				if _, err := st.Append(context.Background(), "alice", names[i%agents], fmt.Sprintf("m%d", i)); err != nil {
					fatalf("%v", err)
				}
			}
		}()
	}
	sw.Wait()
	wg.Wait()
	elapsed := time.Since(start)
	for _, c := range clients {
		c.close()
	}
	twice := 0
	for _, n := range got {
		if n > 1 {
			twice++
		}
	}
	fmt.Printf("%d waiting MCP receivers on %d mailboxes, %d senders, %d messages in %v: %d delivered, %d distinct, %d more than once\n",
		agents, agents, agents, messages, elapsed.Round(time.Millisecond), total, len(got), twice)
	if total != messages || len(got) != messages || twice != 0 {
		fatalf("waiting receivers lost or duplicated messages")
	}
}

// watching waits until process pid has an inotify descriptor open, that is
// until a waiting receive watches its mailbox, and a little more for it to
// look at the mailbox once. Where /proc does not tell, it waits 100 ms.
func watching(pid int) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return
		}
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l == "anon_inode:inotify" {
				time.Sleep(5 * time.Millisecond)
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	fatalf("the waiting receive never watched its mailbox")
}
