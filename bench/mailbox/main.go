// Command mailbox measures the agentmail binary end to end: the latency of
// CLI send and receive and of MCP receive as the mailbox grows from 100 to
// 100,000 stored messages, the throughput of concurrent CLI senders, and the
// peak memory of the processes.
//
// Usage:
//
//	go build -o /tmp/am/agentmail . && go run ./bench/mailbox -bin /tmp/am/agentmail
//
// It needs tmux. It builds a temporary project with a private tmux server
// (windows alice and bob, each running cat) on a socket of its own, and
// kills that server and removes the project when it ends, also on an
// interrupt or a panic. Mailboxes are filled by writing their lines
// directly, in the exact format agentmail writes: "read_flag":true (with
// the trailing space of an in-place flip) for read messages, then unread
// ones.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"agentmail/bench/internal/cleanup"
	"agentmail/mailbox"
)

var (
	binFlag     = flag.String("bin", "", "path of the agentmail binary to measure (required)")
	sizesFlag   = flag.String("sizes", "100,10000,100000", "comma-separated numbers of stored messages")
	runsFlag    = flag.Int("runs", 200, "CLI sends and CLI receives measured at each size")
	mcpRunsFlag = flag.Int("mcp-runs", 300, "MCP receive round trips measured at each size")
	unreadFlag  = flag.Int("unread", 300, "unread messages at the end of a filled mailbox (at most the size)")
	procsFlag   = flag.Int("procs", 8, "concurrent sending processes in the throughput test")
	wakeFlag    = flag.Int("wake", 200, "trials of the wake latency of a waiting receive, over MCP and over the CLI")
	idleFlag    = flag.Duration("idle", 60*time.Second, "how long the idle waiting receive waits, to measure its CPU")
	perProcFlag = flag.Int("per-proc", 100, "sends per process in the throughput test")
)

// The clean-ups of this program, run at exit whatever the way out.
var (
	atExit = cleanup.AtExit
	fatalf = cleanup.Fatalf
)

func main() {
	if os.Getenv(launcherEnv) != "" {
		runLauncher()
		return
	}
	flag.Parse()
	if *binFlag == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/mailbox -bin path/to/agentmail [-sizes 100,10000,100000] [-runs N] [-mcp-runs N]")
		os.Exit(2)
	}
	var sizes []int
	for _, f := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: bad size %q\n", f)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	if *runsFlag <= 0 || *mcpRunsFlag <= 0 || *unreadFlag < 2 || *procsFlag <= 0 || *perProcFlag <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -runs, -mcp-runs, -procs and -per-proc must be positive and -unread at least 2")
		os.Exit(2)
	}

	cleanup.OnSignals()
	defer cleanup.Finish()

	bin, err := filepath.Abs(*binFlag)
	if err != nil {
		fatalf("%v", err)
	}
	p := setup(bin, startLauncher())
	fmt.Printf("agentmail mailbox bench: %s, %s/%s, %d CPUs, %s\n", bin, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().Format(time.RFC3339))
	fmt.Printf("per size: %d CLI sends, %d CLI receives, %d MCP receives; mailbox: stored messages, the last %d of them unread\n\n",
		*runsFlag, *runsFlag, *mcpRunsFlag, *unreadFlag)

	p.idleWait(*idleFlag)

	type row struct {
		size                   int
		send, recv, mcp, inbox []time.Duration
		scan                   []time.Duration // first receives after a fill
		sendRSS, recvRSS, mRSS rss
	}
	var rows []row
	fmt.Printf("%9s  %14s  %14s  %14s  %14s  %14s  %14s\n", "stored", "send p50", "send p99", "receive p50", "receive p99", "MCP recv p50", "MCP recv p99")
	for _, n := range sizes {
		r := row{size: n}
		r.send, r.sendRSS = p.benchSend(n)
		r.recv, r.scan, r.recvRSS = p.benchReceive(n)
		r.mcp, r.mRSS = p.benchMCP(n)
		r.inbox = p.benchInbox(n)
		fmt.Printf("%9d  %14s  %14s  %14s  %14s  %14s  %14s\n", n,
			fmtDur(pct(r.send, 50)), fmtDur(pct(r.send, 99)),
			fmtDur(pct(r.recv, 50)), fmtDur(pct(r.recv, 99)),
			fmtDur(pct(r.mcp, 50)), fmtDur(pct(r.mcp, 99)))
		rows = append(rows, r)
	}
	first, last := rows[0], rows[len(rows)-1]
	if len(rows) > 1 {
		fmt.Printf("\nratio p50 at %d / p50 at %d stored: CLI send %.2fx, CLI receive %.2fx, MCP receive %.2fx (target: receive at most 1.50x)\n",
			last.size, first.size,
			ratio(last.send, first.send), ratio(last.recv, first.recv), ratio(last.mcp, first.mcp))
	}

	fmt.Printf("MCP resources/read agentmail://inbox (%d of the stored messages unread), p50:", inboxUnread)
	for i, r := range rows {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Printf("%s %s at %d", sep, fmtDur(pct(r.inbox, 50)), r.size)
	}
	if len(rows) > 1 {
		fmt.Printf(" (%.2fx; target at most 1.50x)", ratio(last.inbox, first.inbox))
	}
	fmt.Println()

	fmt.Print("a CLI receive without a valid read cursor (the first after the mailbox was replaced) scans the whole file:")
	for i, r := range rows {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Printf("%s %s at %d", sep, fmtDur(slices.Max(r.scan)), r.size)
	}
	fmt.Println(" (slowest of each size; not in the table)")

	p.benchThroughput()
	p.benchWake(*wakeFlag)
	p.benchNotify(20)
	p.benchWaiters(8, 1000)

	fmt.Printf("peak RSS at %d stored: CLI send %s, CLI receive %s, MCP server %s\n",
		last.size, last.sendRSS, last.recvRSS, last.mRSS)
	var all rss
	for _, r := range rows {
		all = all.merge(r.sendRSS).merge(r.recvRSS).merge(r.mRSS)
	}
	fmt.Printf("peak RSS of any measured process: %s\n", all)
	fmt.Println("(\"<=\": the figure is the process's ru_maxrss, which Linux makes at least the resident size of")
	fmt.Println("its parent, the launcher, at the fork; it is then an upper bound. The MCP figure is the server's VmHWM.)")
}

// project is the temporary project and its tmux server.
type project struct {
	launcher  *launcher
	bin       string
	root      string
	sock      string
	alicePane string
	bobPane   string
}

func setup(bin string, l *launcher) *project {
	if _, err := exec.LookPath("tmux"); err != nil {
		fatalf("tmux is required: %v", err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		fatalf("-bin %s: not a file (%v)", bin, err)
	}
	root, err := os.MkdirTemp("", "agentmail-bench-")
	if err != nil {
		fatalf("%v", err)
	}
	atExit(func() { os.RemoveAll(root) })
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		fatalf("%v", err)
	}
	// A socket path must fit in about 108 bytes: keep it short.
	sockDir, err := os.MkdirTemp("/tmp", "amb")
	if err != nil {
		fatalf("%v", err)
	}
	atExit(func() { os.RemoveAll(sockDir) })
	p := &project{launcher: l, bin: bin, root: root, sock: filepath.Join(sockDir, "s")}
	p.alicePane = p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "proj", "-x", "200", "-y", "50", "-n", "alice", "-P", "-F", "#{pane_id}", "cat")
	atExit(func() { exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	p.bobPane = p.tmux("new-window", "-d", "-t", "proj:", "-n", "bob", "-P", "-F", "#{pane_id}", "cat")
	return p
}

func (p *project) tmux(args ...string) string {
	cmd := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// command returns agentmail with args, run in the project as the agent of
// pane.
func (p *project) command(pane string, args ...string) *exec.Cmd {
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.root
	env := []string{"TMUX=" + p.sock + ",0,0", "TMUX_PANE=" + pane}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	return cmd
}

// run runs an agentmail command to completion through the launcher and
// returns its stdout, its wall time (fork and exec included) and its peak
// RSS.
func (p *project) run(pane string, args ...string) (string, time.Duration, rss) {
	r := p.launcher.run(p.command(pane, args...))
	if r.Err != "" {
		fatalf("agentmail %s: %s: %s", strings.Join(args, " "), r.Err, r.Stderr)
	}
	if r.Stderr != "" {
		fatalf("agentmail %s wrote on stderr: %s", strings.Join(args, " "), r.Stderr)
	}
	return r.Stdout, time.Duration(r.NS), r.rss()
}

// rss is a peak resident set size. Linux starts a child's ru_maxrss at its
// parent's resident size when it forks, so a figure no larger than the
// parent's peak says only that the child's own peak was not larger.
type rss struct {
	kib     int64
	bounded bool // kib is an upper bound
}

func (a rss) merge(b rss) rss {
	switch {
	case b.kib > a.kib:
		return b
	case b.kib == a.kib:
		return rss{a.kib, a.bounded && b.bounded}
	}
	return a
}

func (a rss) String() string {
	if a.bounded {
		return fmt.Sprintf("<= %.1f MiB", float64(a.kib)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(a.kib)/1024)
}

func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss) // KiB on Linux
	}
	return 0
}

func (p *project) mailboxPath(name string) string {
	return mailbox.New(p.root).MailboxPath(name)
}

// fill replaces bob's mailbox with n messages, the last unread of them
// unread, and removes its read cursor. The file is written beside the
// mailbox and renamed over it, as cleanup does.
func (p *project) fill(n, unread int) {
	dir := filepath.Dir(p.mailboxPath("bob"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fatalf("%v", err)
	}
	// The lines are streamed to the file, so that this process stays
	// small: a child's peak RSS includes its parent's at the fork.
	tmp := filepath.Join(dir, ".bench-fill")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fatalf("%v", err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	created := time.Now().Add(-time.Hour)
	body := "Please review the change in mailbox/store.go and tell me what you think of it."
	for i := range n {
		m := mailbox.Message{ID: uuid.Must(uuid.NewV7()).String(), From: "alice", To: "bob", Message: fmt.Sprintf("%d %s", i, body), CreatedAt: created}
		line, err := json.Marshal(m)
		if err != nil {
			fatalf("%v", err)
		}
		if i < n-unread {
			line = bytes.Replace(line, []byte(`"read_flag":false`), []byte(`"read_flag":true `), 1)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		fatalf("%v", err)
	}
	if err := f.Close(); err != nil {
		fatalf("%v", err)
	}
	if err := os.Rename(tmp, p.mailboxPath("bob")); err != nil {
		fatalf("%v", err)
	}
	if err := os.Remove(filepath.Join(p.root, ".agentmail", "cursors", "bob")); err != nil && !errors.Is(err, os.ErrNotExist) {
		fatalf("%v", err)
	}
}

var sentRE = regexp.MustCompile(`^Message #([0-9a-f-]{36}) sent\n$`)

// benchSend measures CLI sends from alice to bob, whose mailbox holds n
// messages.
func (p *project) benchSend(n int) ([]time.Duration, rss) {
	p.fill(n, min(n, *unreadFlag))
	var ds []time.Duration
	var peak rss
	for i := range *runsFlag {
		out, d, r := p.run(p.alicePane, "send", "bob", fmt.Sprintf("bench send %d", i))
		if !sentRE.MatchString(out) {
			fatalf("send printed %q", out)
		}
		ds = append(ds, d)
		peak = peak.merge(r)
	}
	return ds, peak
}

// benchReceive measures CLI receives by bob from a mailbox of n messages.
// When the unread ones run out it fills the mailbox again. The first
// receive after a fill finds no read cursor and scans the file up to the
// first unread line; its latency is returned in scans, not in ds.
func (p *project) benchReceive(n int) (ds, scans []time.Duration, peak rss) {
	unread := min(n, *unreadFlag)
	left := 0
	for len(ds) < *runsFlag {
		if left == 0 {
			p.fill(n, unread)
			scans = append(scans, p.receiveOnce())
			left = unread - 1
		}
		out, d, r := p.run(p.bobPane, "receive")
		if !strings.HasPrefix(out, "From: alice\nID: ") {
			fatalf("receive printed %q", out)
		}
		left--
		ds = append(ds, d)
		peak = peak.merge(r)
	}
	return ds, scans, peak
}

// receiveOnce runs one CLI receive and returns its latency.
func (p *project) receiveOnce() time.Duration {
	out, d, _ := p.run(p.bobPane, "receive")
	if !strings.HasPrefix(out, "From: ") {
		fatalf("receive printed %q", out)
	}
	return d
}

// mcpClient talks to one "agentmail mcp" over its stdin and stdout.
type mcpClient struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr bytes.Buffer
	nextID int
}

func (p *project) startMCP(pane string) *mcpClient {
	c := &mcpClient{cmd: p.command(pane, "mcp")}
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		fatalf("%v", err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		fatalf("%v", err)
	}
	c.stdout = bufio.NewReaderSize(out, 64<<10)
	if err := c.cmd.Start(); err != nil {
		fatalf("%v", err)
	}
	atExit(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}`)
	if _, err := io.WriteString(c.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		fatalf("mcp: %v", err)
	}
	return c
}

// call sends one request and returns the text of its response.
func (c *mcpClient) call(method, params string) string {
	c.nextID++
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.nextID, method, params)
	if _, err := io.WriteString(c.stdin, req); err != nil {
		fatalf("mcp: writing a request: %v; stderr: %s", err, c.stderr.String())
	}
	idKey := fmt.Sprintf(`"id":%d,`, c.nextID)
	for {
		line, err := c.stdout.ReadString('\n')
		if err != nil {
			fatalf("mcp: reading the response to %s: %v; stderr: %s", method, err, c.stderr.String())
		}
		if strings.Contains(line, idKey) {
			if strings.Contains(line, `"error":`) {
				fatalf("mcp: %s failed: %s", method, line)
			}
			return line
		}
	}
}

func (c *mcpClient) receive() string {
	return c.call("tools/call", `{"name":"receive","arguments":{}}`)
}

// close ends the server by closing its stdin and returns its peak RSS:
// VmHWM from /proc when there is one, read just before the end, and
// otherwise the rusage of the ended process.
func (c *mcpClient) close() rss {
	hwm := vmHWM(c.cmd.Process.Pid)
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		fatalf("mcp: %v; stderr: %s", err, c.stderr.String())
	}
	if c.stderr.Len() > 0 {
		fatalf("mcp wrote on stderr: %s", c.stderr.String())
	}
	if hwm > 0 {
		return rss{kib: hwm}
	}
	return rss{kib: maxRSS(c.cmd.ProcessState), bounded: true}
}

// vmHWM returns the peak RSS in KiB of a live process from
// /proc/<pid>/status, or 0 when it cannot.
func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// benchMCP measures receive round trips over MCP, one server for all, from
// a mailbox of n messages, refilled (with an unmeasured first receive) like
// benchReceive does.
func (p *project) benchMCP(n int) ([]time.Duration, rss) {
	c := p.startMCP(p.bobPane)
	unread := min(n, *unreadFlag)
	left := 0
	var ds []time.Duration
	for len(ds) < *mcpRunsFlag {
		if left == 0 {
			p.fill(n, unread)
			if !strings.Contains(c.receive(), `"text":"From: alice`) {
				fatalf("mcp receive found no message after a fill")
			}
			left = unread - 1
		}
		start := time.Now()
		resp := c.receive()
		d := time.Since(start)
		if !strings.Contains(resp, `"text":"From: alice\nID: `) {
			fatalf("mcp receive answered %s", resp)
		}
		left--
		ds = append(ds, d)
	}
	return ds, c.close()
}

// benchThroughput runs procs goroutines, each running perProc CLI sends in
// a row, against an empty mailbox, then counts what was stored.
func (p *project) benchThroughput() {
	procs, per := *procsFlag, *perProcFlag
	if err := os.Remove(p.mailboxPath("bob")); err != nil && !errors.Is(err, os.ErrNotExist) {
		fatalf("%v", err)
	}
	var mu sync.Mutex
	acked := map[string]int{}
	failed := 0
	var peak rss
	var wg sync.WaitGroup
	start := time.Now()
	for g := range procs {
		wg.Go(func() {
			for i := range per {
				r := p.launcher.run(p.command(p.alicePane, "send", "bob", fmt.Sprintf("throughput %d-%d", g, i)))
				m := sentRE.FindStringSubmatch(r.Stdout)
				mu.Lock()
				if r.Err != "" || m == nil {
					failed++
					if failed == 1 {
						fmt.Fprintf(os.Stderr, "bench: a send failed: %s: %s%s\n", r.Err, r.Stdout, r.Stderr)
					}
				} else {
					acked[m[1]]++
				}
				peak = peak.merge(r.rss())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	data, err := os.ReadFile(p.mailboxPath("bob"))
	if err != nil {
		fatalf("%v", err)
	}
	stored := map[string]int{}
	lines, bad := 0, 0
	for line := range bytes.Lines(data) {
		lines++
		var m mailbox.Message
		if err := json.Unmarshal(line, &m); err != nil {
			bad++
			continue
		}
		stored[m.ID]++
	}
	lost, dup := 0, 0
	for id := range acked {
		if stored[id] == 0 {
			lost++
		}
	}
	for _, c := range stored {
		if c > 1 {
			dup += c - 1
		}
	}
	total := procs * per
	fmt.Printf("\nthroughput: %d processes x %d CLI sends at once: %d sends in %s = %.0f sends/s; %d acknowledged, %d lines stored, lost %d, duplicated %d, unparsable lines %d, failed sends %d; peak RSS of a send %s\n",
		procs, per, total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		len(acked), lines, lost, dup, bad, failed, peak)
}

// pct returns the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

func ratio(a, b []time.Duration) float64 {
	return float64(pct(a, 50)) / float64(pct(b, 50))
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// The CLI processes are started by a launcher: a second, small process of
// this program. Linux counts a parent's resident pages in a child's
// ru_maxrss at the fork, so children of this process, which fills
// mailboxes, would report its size instead of their own.
const launcherEnv = "AGENTMAIL_BENCH_LAUNCHER"

type launchReq struct {
	ID   int
	Path string
	Args []string
	Env  []string
	Dir  string
}

type launchResp struct {
	ID             int
	Stdout, Stderr string
	Err            string // why the command failed, "" on success
	NS             int64  // wall time of fork, exec and wait
	RSS            int64  // ru_maxrss in KiB
	Floor          int64  // the launcher's VmHWM in KiB when it started the command
}

func (r launchResp) rss() rss {
	return rss{kib: r.RSS, bounded: r.RSS <= r.Floor}
}

// runLauncher is the launcher's main: it runs the commands it reads from
// stdin, concurrently, and writes their results to stdout, until stdin ends.
func runLauncher() {
	// Keep the heap, and with it the pages counted in every child, small.
	debug.SetGCPercent(10)
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	enc := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for {
		var req launchReq
		if err := dec.Decode(&req); err != nil {
			break
		}
		wg.Go(func() {
			cmd := exec.Command(req.Path, req.Args...)
			cmd.Env, cmd.Dir = req.Env, req.Dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			floor := vmHWM(os.Getpid())
			start := time.Now()
			err := cmd.Run()
			resp := launchResp{ID: req.ID, Stdout: stdout.String(), Stderr: stderr.String(), NS: int64(time.Since(start)), Floor: floor}
			if err != nil {
				resp.Err = err.Error()
			}
			if cmd.ProcessState != nil {
				resp.RSS = maxRSS(cmd.ProcessState)
			}
			mu.Lock()
			enc.Encode(resp)
			mu.Unlock()
		})
	}
	wg.Wait()
}

// launcher is the client side of the launcher process.
type launcher struct {
	mu      sync.Mutex // guards enc, next and waiting
	enc     *json.Encoder
	next    int
	waiting map[int]chan launchResp
}

func startLauncher() *launcher {
	self, err := os.Executable()
	if err != nil {
		fatalf("%v", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), launcherEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fatalf("%v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		fatalf("starting the launcher: %v", err)
	}
	atExit(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() {
			cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	l := &launcher{enc: json.NewEncoder(stdin), waiting: map[int]chan launchResp{}}
	go func() {
		dec := json.NewDecoder(stdout)
		for {
			var r launchResp
			if err := dec.Decode(&r); err != nil {
				return
			}
			l.mu.Lock()
			ch := l.waiting[r.ID]
			delete(l.waiting, r.ID)
			l.mu.Unlock()
			ch <- r
		}
	}()
	return l
}

// run has the launcher run cmd and waits for the result.
func (l *launcher) run(cmd *exec.Cmd) launchResp {
	ch := make(chan launchResp, 1)
	l.mu.Lock()
	l.next++
	id := l.next
	l.waiting[id] = ch
	err := l.enc.Encode(launchReq{ID: id, Path: cmd.Path, Args: cmd.Args[1:], Env: cmd.Env, Dir: cmd.Dir})
	l.mu.Unlock()
	if err != nil {
		fatalf("launcher: %v", err)
	}
	select {
	case r := <-ch:
		return r
	case <-time.After(time.Minute):
		fatalf("launcher: no answer for %s within a minute", strings.Join(cmd.Args, " "))
		panic("unreachable")
	}
}
