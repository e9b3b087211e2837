// Command http measures "agentmail mcp --transport http" from the outside,
// the way coding assistants use it: one server process for every agent of a
// tmux session, each agent a keep-alive HTTP client that names itself by its
// pane. It prints
//
//   - the floor: a loopback POST to a trivial Go HTTP server, no MCP, no tmux;
//   - tool-call latency, one call at a time: list-recipients, send, receive
//     and a send followed by the recipient's receive;
//   - a load run: many agents at once, each sending to another and
//     receiving, one call at a time each, for a while: calls per second,
//     latency, errors, whether every acknowledged message was received or
//     is still unread exactly once, and the server's memory and CPU.
//
// It reports numbers and asserts nothing. Usage:
//
//	CGO_ENABLED=0 go build -o agentmail . && CGO_ENABLED=0 go run ./bench/http -bin ./agentmail [-duration 5s]
//
// It needs tmux. It starts a private tmux server on a socket of its own,
// with a window for the server and one running cat for each agent, and
// kills that server, the agentmail server and the floor program, and
// removes its files, when it ends, also on an interrupt or a panic.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentmail/bench/internal/cleanup"
	"agentmail/bench/internal/stats"
	"agentmail/mailbox"
)

// floorEnv, when set, makes this program the floor: a trivial HTTP server
// on a loopback port that answers every POST with an empty result.
const floorEnv = "AGENTMAIL_BENCH_HTTP_FLOOR"

var (
	binFlag      = flag.String("bin", "", "path of the agentmail binary to measure (required)")
	callsFlag    = flag.Int("n", 1000, "calls of each kind in the latency measurements")
	agentsFlag   = flag.Int("agents", 50, "concurrent agents (tmux windows) in the load run")
	durationFlag = flag.Duration("duration", 30*time.Second, "length of the load run")
	waitsFlag    = flag.Int("waits", 1000, "receives waiting at once in the waits run")
	namedFlag    = flag.Int("named", 1000, "named agents in the hub run (0 skips it)")
)

// The protocol revision the agents' sessions use: the newest with
// sessions, as the clients of today negotiate it.
const protocol = "2025-11-25"

// The clean-ups of this program, run at exit whatever the way out.
var (
	atExit = cleanup.AtExit
	fatalf = cleanup.Fatalf
)

// Figures as the other benchmark programs render them.
var (
	summary  = stats.Summary
	quantile = stats.Quantile
	round    = stats.Round
	mb       = stats.MB
)

func main() {
	if os.Getenv(floorEnv) != "" {
		serveFloor()
		return
	}
	flag.Parse()
	if *binFlag == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/http -bin path/to/agentmail [-n 1000] [-agents 50] [-duration 30s] [-waits 1000]")
		os.Exit(2)
	}
	if *callsFlag <= 0 || *agentsFlag < 2 || *durationFlag <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -n and -duration must be positive and -agents at least 2")
		os.Exit(2)
	}

	cleanup.OnSignals()
	defer cleanup.Finish()

	bin, err := filepath.Abs(*binFlag)
	if err != nil {
		fatalf("%v", err)
	}
	p := setup(bin, *agentsFlag)
	fmt.Printf("agentmail HTTP bench: %s\n", bin)
	fmt.Printf("%s/%s, %d CPUs, %s; the bench's clients run on the same CPUs as the server\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("one server, agentmail mcp --transport http --port 0, for %d agent windows; protocol %s with a session per agent\n\n",
		len(p.agents), protocol)

	n := *callsFlag
	floor := startFloor()
	fmt.Printf("floor: a trivial Go HTTP server on loopback answering every POST with {} (no MCP, no tmux)\n  %d POSTs one at a time: %s\n", n, summary(floor.repeat(n)))

	srv := p.startServer()
	latency(srv, p, n)
	fmt.Println()
	load(srv, p, *agentsFlag, *durationFlag)
	fmt.Println()
	waits(srv, p, *waitsFlag, 5*time.Second)
	if *namedFlag > 0 {
		fmt.Println()
		named(srv, p, *namedFlag, *agentsFlag, 200, *durationFlag)
	}
	srv.stop()
}

// latency measures tool calls one at a time, as one agent makes them.
func latency(srv *server, p *project, n int) {
	a, b := srv.agent(p.agents[0]), srv.agent(p.agents[1])
	a.initialize()
	b.initialize()
	list := toolCall("list-recipients", map[string]any{})
	recv := toolCall("receive", map[string]any{})
	// The first calls open the connections, and the server's tmux control
	// connection and file caches: not what a call costs afterwards.
	for range 100 {
		a.mustCall(list)
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		a.mustCall(list)
		ds = append(ds, time.Since(t0))
	}
	fmt.Printf("tools/call list-recipients, %d calls one at a time:\n  %s (target: median ≤ 1 ms)\n", n, summary(ds))

	var sends, receives, trips []time.Duration
	for i := range n {
		t0 := time.Now()
		text := a.mustCall(toolCall("send", map[string]any{"recipient": b.name, "message": "latency " + strconv.Itoa(i)}))
		t1 := time.Now()
		if _, ok := sentID(text); !ok {
			fatalf("send answered %q", text)
		}
		text = b.mustCall(recv)
		t2 := time.Now()
		if m, ok := receivedMessage(text); !ok || m.from != a.name {
			fatalf("receive answered %q", text)
		}
		sends, receives, trips = append(sends, t1.Sub(t0)), append(receives, t2.Sub(t1)), append(trips, t2.Sub(t0))
	}
	fmt.Printf("tools/call send, %d calls:\n  %s\n", n, summary(sends))
	fmt.Printf("tools/call receive, one message waiting, %d calls:\n  %s\n", n, summary(receives))
	fmt.Printf("send, then the recipient's receive, %d round trips:\n  %s\n", n, summary(trips))
}

// record is one call of the load run.
type record struct {
	d    time.Duration
	send bool
}

// sent is a message the server acknowledged.
type sent struct{ id, from, to string }

// got is a message an agent received.
type got struct{ id, from, to string }

// load runs agents at once for d, each sending to a random other agent and
// then receiving, one call at a time, and prints what it measured.
func load(srv *server, p *project, agents int, d time.Duration) {
	as := make([]*agent, agents)
	for i := range as {
		as[i] = srv.agent(p.agents[i])
		as[i].initialize()
	}
	loadAgents(srv, p, as, d, "one tmux window each")
}

// loadAgents is the load run of the agents as, whose mailboxes p.agents
// names, which the line of figures calls what.
func loadAgents(srv *server, p *project, as []*agent, d time.Duration, what string) {
	agents := len(as)
	type result struct {
		calls  []record
		sent   []sent
		got    []got
		errors map[string]int
	}
	results := make([]result, agents)
	// The server's tmux answers its questions about panes and windows:
	// its CPU is part of what a call costs.
	tmuxPID, _ := strconv.Atoi(p.tmuxPID)
	cpu0, ok0 := procCPU(srv.cmd.Process.Pid)
	tmux0, tok0 := procCPU(tmuxPID)
	self0 := selfCPU()
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.errors = map[string]int{}
			// Each agent's choices are its own and the same from run to
			// run.
			rng := mrand.New(mrand.NewPCG(uint64(i), 1))
			for seq := 0; time.Now().Before(deadline); seq++ {
				to := as[(i+1+rng.IntN(agents-1))%agents].name
				t0 := time.Now()
				text, err := a.call(toolCall("send", map[string]any{"recipient": to, "message": fmt.Sprintf("load %s %d", a.name, seq)}))
				r.calls = append(r.calls, record{time.Since(t0), true})
				if err == nil {
					if id, ok := sentID(text); ok {
						r.sent = append(r.sent, sent{id, a.name, to})
					} else {
						err = fmt.Errorf("send answered %q", text)
					}
				}
				if err != nil {
					r.errors[errorKind(err)]++
				}
				t0 = time.Now()
				text, err = a.call(toolCall("receive", map[string]any{}))
				r.calls = append(r.calls, record{time.Since(t0), false})
				if err == nil && text != "No unread messages" {
					if m, ok := receivedMessage(text); ok {
						r.got = append(r.got, got{m.id, m.from, a.name})
					} else {
						err = fmt.Errorf("receive answered %q", text)
					}
				}
				if err != nil {
					r.errors[errorKind(err)]++
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, ok1 := procCPU(srv.cmd.Process.Pid)
	tmux1, tok1 := procCPU(tmuxPID)
	self1 := selfCPU()
	rss, hwm := srv.procStatus("VmRSS"), srv.procStatus("VmHWM")

	var all, sends, receives []time.Duration
	var acked []sent
	var gots []got
	errs := map[string]int{}
	for _, r := range results {
		for _, c := range r.calls {
			all = append(all, c.d)
			if c.send {
				sends = append(sends, c.d)
			} else {
				receives = append(receives, c.d)
			}
		}
		acked = append(acked, r.sent...)
		gots = append(gots, r.got...)
		for k, v := range r.errors {
			errs[k] += v
		}
	}
	fmt.Printf("load: %d agents (%s), each sending to a random other agent and then receiving, one call at a time, for %v:\n", agents, what, d)
	fmt.Printf("  calls     %d in %.2f s: %.0f calls/s (target ≥ 2,000)\n", len(all), elapsed.Seconds(), float64(len(all))/elapsed.Seconds())
	fmt.Printf("  latency   all: median %v  p99 %v  max %v (target: p99 ≤ 50 ms)\n", round(quantile(all, 0.5)), round(quantile(all, 0.99)), round(slices.Max(all)))
	fmt.Printf("            send: median %v  p99 %v; receive: median %v  p99 %v\n",
		round(quantile(sends, 0.5)), round(quantile(sends, 0.99)), round(quantile(receives, 0.5)), round(quantile(receives, 0.99)))
	nerr := 0
	for _, v := range errs {
		nerr += v
	}
	fmt.Printf("  errors    %d", nerr)
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		fmt.Printf("; %d× %s", errs[k], k)
	}
	fmt.Println()
	check(p, acked, gots)
	fmt.Printf("  server    VmRSS %s at the end (VmHWM %s)", mb(rss), mb(hwm))
	perCall := func(d time.Duration) string {
		return fmt.Sprintf("CPU %.1f s in %.1f s (%.0f µs a call)", d.Seconds(), elapsed.Seconds(), float64(d.Microseconds())/float64(len(all)))
	}
	if ok0 && ok1 {
		fmt.Printf("; %s", perCall(cpu1-cpu0))
	}
	fmt.Println()
	if tok0 && tok1 {
		fmt.Printf("  tmux      %s (the tmux server, answering the server's questions)\n", perCall(tmux1-tmux0))
	}
	fmt.Printf("  clients   %s (this program, on the same %d CPUs)\n", perCall(self1-self0), runtime.NumCPU())
	fmt.Println("  for comparison, the most popular HTTP agent-mail server publishes about 49 requests/s at p99 2.6 s")
}

// check accounts for every message the server acknowledged: each must have
// been received exactly once, or be unread in its recipient's mailbox,
// and nowhere else. It also counts messages received or stored that no
// acknowledged send accounts for, such as one whose answer was lost.
func check(p *project, acked []sent, gots []got) {
	want := map[string]sent{}
	for _, s := range acked {
		want[s.id] = s
	}
	seen := map[string]int{} // received, plus unread in a mailbox
	misdelivered, unknown := 0, 0
	place := func(id, from, to string) {
		seen[id]++
		s, ok := want[id]
		switch {
		case !ok:
			unknown++
		case s.from != from || s.to != to:
			misdelivered++
		}
	}
	for _, g := range gots {
		place(g.id, g.from, g.to)
	}
	st := mailbox.New(p.root)
	unread := 0
	for _, name := range p.agents {
		err := st.Messages(context.Background(), name.name, func(m *mailbox.Message) bool {
			if !m.ReadFlag && strings.HasPrefix(m.Message, "load ") {
				unread++
				place(m.ID, m.From, m.To)
			}
			return true
		})
		if err != nil {
			fatalf("reading %s's mailbox: %v", name.name, err)
		}
	}
	lost, dup := 0, 0
	for id := range want {
		switch n := seen[id]; {
		case n == 0:
			lost++
		case n > 1:
			dup++
		}
	}
	fmt.Printf("  messages  %d sends acknowledged: %d received, %d left unread; %d lost, %d duplicated, %d misdelivered, %d not acknowledged (target: none lost or duplicated)\n",
		len(acked), len(gots), unread, lost, dup, misdelivered, unknown)
}

// project is the temporary project and its private tmux server: a window
// "server" for the agentmail server, and one per agent, each running cat.
type project struct {
	bin        string
	root       string
	sock       string
	tmuxPID    string
	serverPane string
	agents     []window
}

// window is an agent's tmux window.
type window struct{ name, pane string }

func setup(bin string, agents int) *project {
	if _, err := exec.LookPath("tmux"); err != nil {
		fatalf("tmux is required: %v", err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		fatalf("-bin %s: not a file (%v)", bin, err)
	}
	// A socket path must fit in about 108 bytes: keep it short.
	dir, err := os.MkdirTemp("/tmp", "amh")
	if err != nil {
		fatalf("%v", err)
	}
	atExit(func() { os.RemoveAll(dir) })
	p := &project{bin: bin, root: filepath.Join(dir, "root"), sock: filepath.Join(dir, "s")}
	if err := os.MkdirAll(filepath.Join(p.root, ".git"), 0o755); err != nil {
		fatalf("%v", err)
	}
	p.serverPane = p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "proj", "-x", "200", "-y", "50", "-n", "server", "-P", "-F", "#{pane_id}", "cat")
	atExit(func() { exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	p.tmuxPID = p.tmux("display-message", "-p", "-t", p.serverPane, "#{pid}")
	for i := range agents {
		name := fmt.Sprintf("agent%02d", i)
		pane := p.tmux("new-window", "-d", "-t", "proj:", "-n", name, "-P", "-F", "#{pane_id}", "cat")
		p.agents = append(p.agents, window{name, pane})
	}
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

// server is the running "agentmail mcp --transport http".
type server struct {
	cmd    *exec.Cmd
	url    string
	token  string
	client *http.Client
	stderr *tail
}

// startServer starts the server as the process of the window "server",
// as a user starts it in a window of the session, and reads the URL it
// prints.
func (p *project) startServer() *server {
	token := rand.Text()
	cmd := exec.Command(p.bin, "mcp", "--transport", "http", "--port", "0")
	cmd.Dir = p.root
	cmd.Env = []string{"TMUX=" + p.sock + "," + p.tmuxPID + ",0", "TMUX_PANE=" + p.serverPane, "AGENTMAIL_TOKEN=" + token}
	// The Go runtime's own settings pass through, so that their effect on
	// the server can be measured (GOGC=50 go run ./bench/http …).
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		fatalf("%v", err)
	}
	atExit(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	s := &server{cmd: cmd, token: token, stderr: &tail{}}
	r := bufio.NewReader(errPipe)
	urls := make(chan string, 1)
	go func() {
		const serving = "agentmail mcp: serving Streamable HTTP at "
		for {
			line, err := r.ReadString('\n')
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), serving); ok {
				urls <- u
			} else {
				s.stderr.Write([]byte(line))
			}
			if err != nil {
				close(urls)
				return
			}
		}
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			fatalf("the server ended before it printed its URL: %s", s.stderr)
		}
		s.url = u
	case <-time.After(10 * time.Second):
		fatalf("the server printed no URL in 10 s: %s", s.stderr)
	}
	s.client = &http.Client{
		Transport: &http.Transport{
			Proxy:       nil,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			// Every agent keeps its connection between calls, as a
			// client's HTTP library does; the default keeps only two
			// idle connections to a host.
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
		Timeout: 30 * time.Second,
	}
	return s
}

// stop ends the server with SIGTERM, as a user's Ctrl-C does, and waits
// for it.
func (s *server) stop() {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		fatalf("stopping the server: %v", err)
	}
	if err := s.cmd.Wait(); err != nil {
		fatalf("server exit: %v: %s", err, s.stderr)
	}
}

// procStatus returns a size field of the server's /proc status, in bytes,
// or -1 where there is none.
func (s *server) procStatus(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

// procCPU returns the CPU time, user and system, process pid has used,
// from /proc/<pid>/stat, which counts ticks of 10 ms: enough for a run of
// seconds.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces; utime and stime
	// are the 12th and 13th fields after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if errors.Join(err1, err2) != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// selfCPU returns the CPU time this program has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tail keeps the last few kilobytes written to it: the server's stderr,
// for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 4096; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// agent is one agent's client: its window and its MCP session.
type agent struct {
	*server
	name, pane string
	// own is a named agent's token, sent instead of the server's, with
	// no pane.
	own     string
	session string
	id      int
}

func (s *server) agent(w window) *agent { return &agent{server: s, name: w.name, pane: w.pane} }

// initialize opens the agent's session, as a client does once at start.
func (a *agent) initialize() {
	hdr, _, err := a.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocol + `","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
	if err != nil {
		fatalf("%s: initialize: %v", a.name, err)
	}
	if a.session = hdr.Get("Mcp-Session-Id"); a.session == "" {
		fatalf("%s: initialize gave no session id", a.name)
	}
	if _, _, err := a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		fatalf("%s: notifications/initialized: %v", a.name, err)
	}
}

// post sends one message with the headers a client sends and returns the
// answer's headers and body, or an error for any status but 200 and 202.
func (a *agent) post(body string) (http.Header, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, a.url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if a.own != "" {
		req.Header.Set("Authorization", "Bearer "+a.own)
	} else {
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Header.Set("Agentmail-Pane", a.pane)
	}
	if a.session != "" {
		req.Header.Set("Mcp-Session-Id", a.session)
		req.Header.Set("MCP-Protocol-Version", protocol)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	// Reading the body to its end lets the connection be used again.
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return nil, nil, &statusError{resp.StatusCode, strings.TrimSpace(string(b))}
	}
	return resp.Header, b, nil
}

type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// toolError is a tools/call answered with isError, or a JSON-RPC error.
type toolError struct {
	rpc  bool
	text string
}

func (e *toolError) Error() string {
	if e.rpc {
		return "JSON-RPC error: " + e.text
	}
	return "tool error: " + e.text
}

// errorKind names the kind of a failed call, for the error counts, with
// the first words of its message.
func errorKind(err error) string {
	msg := err.Error()
	if len(msg) > 100 {
		msg = msg[:100] + "…"
	}
	return msg
}

// toolCall is the tools/call params of tool with args.
func toolCall(tool string, args map[string]any) map[string]any {
	return map[string]any{"name": tool, "arguments": args}
}

// call makes one tools/call and returns the text of its answer.
func (a *agent) call(params map[string]any) (string, error) {
	a.id++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": a.id, "method": "tools/call", "params": params})
	if err != nil {
		return "", err
	}
	_, b, err := a.post(string(body))
	if err != nil {
		return "", err
	}
	var resp struct {
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return "", fmt.Errorf("undecodable answer %q: %w", b, err)
	}
	switch {
	case resp.Error != nil:
		return "", &toolError{rpc: true, text: fmt.Sprintf("%d %s", resp.Error.Code, resp.Error.Message)}
	case resp.Result == nil || len(resp.Result.Content) == 0:
		return "", fmt.Errorf("answer without content: %s", b)
	case resp.Result.IsError:
		return "", &toolError{text: resp.Result.Content[0].Text}
	}
	return resp.Result.Content[0].Text, nil
}

func (a *agent) mustCall(params map[string]any) string {
	text, err := a.call(params)
	if err != nil {
		fatalf("%s: %v (server stderr: %s)", a.name, err, a.stderr)
	}
	return text
}

// sentID returns the message id of send's text, "Message #<id> sent".
func sentID(text string) (string, bool) {
	id, ok := strings.CutPrefix(text, "Message #")
	if !ok {
		return "", false
	}
	// A note may follow, when nothing wakes the recipient.
	id, rest, ok := strings.Cut(id, " sent")
	return id, ok && id != "" && (rest == "" || strings.HasPrefix(rest, " ("))
}

// receivedMessage parses receive's text: "From: <name>\nID: <id>\n\n<body>".
func receivedMessage(text string) (got, bool) {
	head, _, ok := strings.Cut(text, "\n\n")
	if !ok {
		return got{}, false
	}
	var m got
	for _, l := range strings.Split(head, "\n") {
		if v, ok := strings.CutPrefix(l, "From: "); ok {
			m.from = v
		} else if v, ok := strings.CutPrefix(l, "ID: "); ok {
			m.id = v
		}
	}
	return m, m.from != "" && m.id != ""
}

// floor is the running floor program.
type floor struct {
	url    string
	client *http.Client
}

// startFloor starts this program as the floor and reads the URL it prints.
func startFloor() *floor {
	self, err := os.Executable()
	if err != nil {
		fatalf("%v", err)
	}
	cmd := exec.Command(self)
	cmd.Env = []string{floorEnv + "=1"}
	for _, k := range []string{"GOGC", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		fatalf("floor program: %v", err)
	}
	atExit(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		fatalf("floor program: %v", err)
	}
	return &floor{url: strings.TrimSpace(line), client: &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}}
}

// repeat POSTs a ping n times, each after the previous answer, after a
// warm-up, and returns each latency.
func (f *floor) repeat(n int) []time.Duration {
	post := func() time.Duration {
		t0 := time.Now()
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := f.client.Do(req)
		if err != nil {
			fatalf("floor program: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(t0)
	}
	for range 100 {
		post()
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		ds = append(ds, post())
	}
	return ds
}

// serveFloor is the floor program: it serves on a loopback port, prints
// its URL and answers every request with an empty result until killed.
func serveFloor() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	}))
}
