// Command mcp measures a built "agentmail mcp" from the outside, the way a
// coding assistant uses it: a real process on pipes, in a private tmux
// server, with a project root of its own. It prints
//
//   - cold start: spawn until the tools/list answer is read, for the legacy
//     handshake (initialize, initialized, tools/list) and for a modern
//     client (one tools/list carrying the 2026-07-28 _meta);
//   - ping and tools/list: latency of one request answered before the next
//     is sent, and the server's CPU time per request;
//   - each tool call's latency;
//   - the server's resident memory after 100 and after 10,000 tool calls.
//
// It reports numbers and asserts nothing. Usage:
//
//	CGO_ENABLED=0 go build -o agentmail . && CGO_ENABLED=0 go run ./bench/mcp -bin ./agentmail
//
// The floor is this program itself, so it is fair only when both are built
// the same way: a cgo build starts through the dynamic loader, which costs
// a few hundred microseconds here. The first lines printed say how each
// was built.
package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"agentmail/bench/internal/stats"
	"agentmail/mailbox"
)

// echoEnv, when set, makes this program a trivial server that answers
// every line it reads with an empty result: the floor against which the
// figures of agentmail can be read on the machine at hand.
const echoEnv = "AGENTMAIL_BENCH_ECHO"

func main() {
	if os.Getenv(echoEnv) != "" {
		echo()
		return
	}
	bin := flag.String("bin", "./agentmail", "the agentmail binary to measure")
	starts := flag.Int("starts", 100, "cold starts to measure for each era")
	pings := flag.Int("n", 20000, "requests per ping and tools/list measurement")
	calls := flag.Int("calls", 300, "calls per tool for the tool-call latencies")
	rssCalls := flag.Int("rss-calls", 10000, "tool calls before the second memory reading")
	other := flag.String("compare", "", "another MCP server of the four tools, such as the earlier agentmail, to measure beside -bin")
	flag.Parse()
	if err := run(*bin, *other, *starts, *pings, *calls, *rssCalls); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// Requests as a client sends them.
const (
	initLine   = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"
	initedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
)

func run(bin, other string, starts, pings, calls, rssCalls int) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("no binary to measure: %w (build it first: go build -o agentmail .)", err)
	}
	env, err := newEnv(abs)
	if err != nil {
		return err
	}
	defer env.close()
	// An interrupted run still kills its tmux server and removes its files.
	// One whose output is cut (go run ./bench/mcp | head) runs to its end
	// and cleans up there, instead of dying at its next line: writes to
	// a closed standard output only fail.
	signal.Ignore(syscall.SIGPIPE)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-sig
		env.close()
		os.Exit(1)
	}()

	fmt.Printf("agentmail mcp benchmark: %s\n", abs)
	fmt.Printf("%s, %d CPUs, %s\n", goVersion(abs), runtime.NumCPU(), time.Now().Format(time.DateOnly))

	// The floor: process start and a pipe round trip cost this much here
	// whatever the server does.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("measured binary: %s; floor program: %s\n\n", linkage(abs), linkage(self))
	echoCmd := func() *exec.Cmd {
		cmd := exec.Command(self)
		cmd.Env = []string{echoEnv + "=1"}
		return cmd
	}
	var ds []time.Duration
	for range starts {
		d, err := coldStart(echoCmd(), []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"}, false)
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	fmt.Printf("floor: a trivial Go program that answers each line with {} (no MCP, no tmux)\n  spawn until its first answer, %d starts: %s\n", starts, summary(ds))
	floor, err := startCmd(echoCmd())
	if err != nil {
		return err
	}
	if err := floor.measure("  answers", `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n", pings, 0); err != nil {
		return err
	}
	if err := floor.stop(); err != nil {
		return err
	}
	fmt.Println()

	// Cold start.
	for _, era := range []struct {
		name  string
		lines []string
	}{
		{"legacy: initialize, initialized, tools/list", []string{initLine, initedLine, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n"}},
		{"modern: tools/list with _meta", []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}` + "\n"}},
	} {
		var ds []time.Duration
		for range starts {
			d, err := coldStart(env.commandFor(env.bin, "alice"), era.lines, false)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
		fmt.Printf("cold start to tools/list answered (%s), %d starts:\n  %s\n", era.name, starts, summary(ds))
	}
	fmt.Println()

	// Requests that do no mail work.
	srv, err := env.startReady(env.bin)
	if err != nil {
		return err
	}
	// In its first second the watchdog's first check opens the server's
	// tmux control connection, once; idle is what it costs after that.
	first, err := srv.idleCPU(time.Second)
	if err != nil {
		return err
	}
	idle, err := srv.idleCPU(2 * time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("server CPU while idle (the tmux watchdog): %v in the first second after the handshake, then %v per second\n", first.Round(time.Microsecond), idle.Round(time.Microsecond))
	for _, r := range []struct{ name, line string }{
		{"ping", `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"},
		{"tools/list (legacy)", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}` + "\n"},
		{"tools/list (modern)", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + modernMeta + `}}` + "\n"},
	} {
		if err := srv.measure(r.name, r.line, pings, idle); err != nil {
			return err
		}
	}
	fmt.Println()

	// Tool calls. receive finds mail: the mailbox is filled beforehand.
	if err := env.fill("alice", calls); err != nil {
		return err
	}
	for _, c := range latencyCalls {
		ds, err := srv.repeat(c.line(), calls)
		if err != nil {
			return err
		}
		fmt.Printf("tools/call %s, %d calls: %s\n", c.name, calls, summary(ds))
	}
	emptyLine := `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"receive","arguments":{}}}` + "\n"
	ds, err = srv.repeat(emptyLine, calls)
	if err != nil {
		return err
	}
	fmt.Printf("tools/call receive (no mail), %d calls: %s\n", calls, summary(ds))
	if err := srv.stop(); err != nil {
		return err
	}
	fmt.Println()

	// Memory: a fresh server, the four tools in turn.
	mem, err := env.startReady(env.bin)
	if err != nil {
		return err
	}
	rss0, err := mem.rss()
	if err != nil {
		return err
	}
	mix := toolMix()
	done := 0
	callMix := func(upTo int) error {
		for ; done < upTo; done++ {
			if _, err := mem.roundTrip(mix[done%len(mix)]); err != nil {
				return err
			}
		}
		return nil
	}
	// Readings along the way show whether memory settles or keeps growing.
	var marks []int
	for _, n := range []int{100, 1000, 2500, 5000, 10000, 20000, 50000} {
		if n < rssCalls {
			marks = append(marks, n)
		}
	}
	marks = append(marks, rssCalls)
	anon0, err := mem.procStatus("RssAnon")
	if err != nil {
		return err
	}
	// RssAnon is the part that is the server's own memory (heap, stacks,
	// runtime metadata), not pages of the binary.
	fmt.Printf("memory (VmRSS; RssAnon in brackets), the four tools in turn:\n  after initialize %s [%s]\n", mb(rss0), mb(anon0))
	var rss100 int64
	t0 := time.Now()
	for _, n := range marks {
		if err := callMix(n); err != nil {
			return err
		}
		r, err := mem.rss()
		if err != nil {
			return err
		}
		anon, err := mem.procStatus("RssAnon")
		if err != nil {
			return err
		}
		if n == 100 {
			rss100 = r
		}
		fmt.Printf("  after %d calls %s [%s]", n, mb(r), mb(anon))
		if n > 100 && rss100 > 0 {
			fmt.Printf(" (%+.2f MB since 100 calls)", float64(r-rss100)/(1<<20))
		}
		fmt.Println()
	}
	fmt.Printf("  %.0f calls/s\n", float64(rssCalls)/time.Since(t0).Seconds())
	if err := mem.stop(); err != nil {
		return err
	}
	if other == "" {
		return nil
	}
	fmt.Println()
	abs, err = filepath.Abs(other)
	if err != nil {
		return err
	}
	return compare(env, abs, echoCmd, starts, pings, calls, rssCalls)
}

// measure sends line n times, each after the previous answer, after a
// warm-up, and prints the latencies and the server's CPU time per request,
// less what it spends per second when idle.
func (s *server) measure(name, line string, n int, idle time.Duration) error {
	if _, err := s.repeat(line, 1000); err != nil {
		return err
	}
	cpu0, err := s.cpu()
	if err != nil {
		return err
	}
	t0 := time.Now()
	ds, err := s.repeat(line, n)
	if err != nil {
		return err
	}
	wall := time.Since(t0)
	cpu1, err := s.cpu()
	if err != nil {
		return err
	}
	used := cpu1 - cpu0
	net := used - time.Duration(float64(idle)*wall.Seconds())
	fmt.Printf("%s, %d requests one at a time:\n  latency %s\n  server CPU %v per request",
		name, n, summary(ds), (net / time.Duration(n)).Round(10*time.Nanosecond))
	if idle > 0 {
		fmt.Printf(" (%v with the watchdog's share)", (used / time.Duration(n)).Round(10*time.Nanosecond))
	}
	fmt.Println()
	return nil
}

// echo answers every line read from stdin with an empty result.
func echo() {
	r := bufio.NewReader(os.Stdin)
	for {
		if _, err := r.ReadSlice('\n'); err != nil {
			return
		}
		if _, err := os.Stdout.WriteString(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"); err != nil {
			return
		}
	}
}

// env is a private tmux server with a session "proj" whose windows alice
// and bob run cat, and a project root.
type env struct {
	bin   string
	dir   string // holds the socket and the project root
	sock  string
	root  string
	panes map[string]string
}

func newEnv(bin string) (*env, error) {
	if _, err := exec.LookPath("tmux"); err != nil {
		return nil, fmt.Errorf("tmux is required: %w", err)
	}
	dir, err := os.MkdirTemp("", "ambench")
	if err != nil {
		return nil, err
	}
	e := &env{bin: bin, dir: dir, sock: filepath.Join(dir, "s"), root: filepath.Join(dir, "root"), panes: map[string]string{}}
	if err := os.MkdirAll(filepath.Join(e.root, ".git"), 0o755); err != nil {
		e.close()
		return nil, err
	}
	for i, name := range []string{"alice", "bob"} {
		args := []string{"new-window", "-d", "-t", "proj:", "-n", name, "-P", "-F", "#{pane_id}", "cat"}
		if i == 0 {
			args = []string{"-f", "/dev/null", "new-session", "-d", "-s", "proj", "-n", name, "-P", "-F", "#{pane_id}", "cat"}
		}
		out, err := exec.Command("tmux", append([]string{"-S", e.sock}, args...)...).Output()
		if err != nil {
			e.close()
			return nil, fmt.Errorf("tmux %s: %w", strings.Join(args, " "), err)
		}
		e.panes[name] = strings.TrimSpace(string(out))
	}
	return e, nil
}

func (e *env) close() {
	exec.Command("tmux", "-S", e.sock, "kill-server").Run()
	os.RemoveAll(e.dir)
}

// fill stores n messages from bob to name.
func (e *env) fill(name string, n int) error {
	st := mailbox.New(e.root)
	for i := range n {
		if _, err := st.Append(context.Background(), "bob", name, "message "+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// server is one running "agentmail mcp".
type server struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

// commandFor is "bin mcp" as the agent in the private tmux.
func (e *env) commandFor(bin, agent string) *exec.Cmd {
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = e.root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMUX=" + e.sock + ",0,0", "TMUX_PANE=" + e.panes[agent]}
	// The Go runtime's own settings pass through, so their effect on the
	// server can be measured (GOGC=50 go run ./bench/mcp …).
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	return cmd
}

// startReady starts bin's MCP server as alice and makes the legacy
// handshake with it.
func (e *env) startReady(bin string) (*server, error) {
	s, err := startCmd(e.commandFor(bin, "alice"))
	if err != nil {
		return nil, err
	}
	if err := s.handshake(); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	return s, nil
}

func startCmd(cmd *exec.Cmd) (*server, error) {
	s := &server{cmd: cmd}
	s.cmd.Stderr = &s.stderr
	in, err := s.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.in, s.out = in, bufio.NewReaderSize(out, 1<<16)
	return s, nil
}

// coldStart starts cmd, sends lines and returns the time from spawn until
// the answer to the last one has been read. Unless lax is set, a server
// that then fails to exit cleanly when its input ends is an error; the
// earlier tool may exit 1 there, which does not change what was measured.
func coldStart(cmd *exec.Cmd, lines []string, lax bool) (time.Duration, error) {
	t0 := time.Now()
	s, err := startCmd(cmd)
	if err != nil {
		return 0, err
	}
	for _, l := range lines {
		if _, err := io.WriteString(s.in, l); err != nil {
			return 0, err
		}
	}
	answers := 0
	for _, l := range lines {
		if strings.Contains(l, `"id":`) {
			answers++
		}
	}
	for range answers {
		if _, err := s.readLine(); err != nil {
			return 0, err
		}
	}
	d := time.Since(t0)
	if err := s.stop(); err != nil && !lax {
		return d, err
	}
	return d, nil
}

func (s *server) handshake() error {
	if _, err := s.roundTrip(initLine); err != nil {
		return err
	}
	_, err := io.WriteString(s.in, initedLine)
	return err
}

func (s *server) readLine() ([]byte, error) {
	line, err := s.out.ReadSlice('\n')
	if err != nil {
		return nil, fmt.Errorf("reading the server's answer: %w (stderr: %s)", err, s.stderr.String())
	}
	if bytes.Contains(line, []byte(`"error":`)) || bytes.Contains(line, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("the server answered with an error: %s", line)
	}
	return line, nil
}

// roundTrip sends one request and waits for its answer.
func (s *server) roundTrip(line string) (time.Duration, error) {
	t0 := time.Now()
	if _, err := io.WriteString(s.in, line); err != nil {
		return 0, err
	}
	if _, err := s.readLine(); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// repeat sends line n times, each after the previous answer, and returns
// each latency.
func (s *server) repeat(line string, n int) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		d, err := s.roundTrip(line)
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// stop closes the server's input and waits for it to exit.
func (s *server) stop() error {
	s.in.Close()
	err := s.cmd.Wait()
	if err != nil {
		return fmt.Errorf("server exit: %w (stderr: %s)", err, s.stderr.String())
	}
	return nil
}

// cpu returns the CPU time the server has used. It sums the run time of
// each of its threads from /proc/<pid>/task/*/schedstat, which counts
// nanoseconds; where that is missing it falls back on utime and stime from
// /proc/<pid>/stat, which count ticks of 10 ms.
func (s *server) cpu() (time.Duration, error) {
	pid := s.cmd.Process.Pid
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err == nil && len(tasks) > 0 {
		var total time.Duration
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // the thread has just exited
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", t, err)
			}
			total += time.Duration(ns)
		}
		return total, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces; fields resume
	// after its closing parenthesis, and utime and stime are fields 14
	// and 15 of the line.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	// Linux reports clock ticks of 1/100 s (USER_HZ) on every common
	// architecture.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// idleCPU returns the CPU the server uses per second while no request
// arrives: the watchdog asking tmux whether the pane is alive.
func (s *server) idleCPU(d time.Duration) (time.Duration, error) {
	c0, err := s.cpu()
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	c1, err := s.cpu()
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(c1-c0) / d.Seconds()), nil
}

// rss returns the server's resident set size in bytes.
func (s *server) rss() (int64, error) { return s.procStatus("VmRSS") }

// procStatus returns a size field of the server's /proc status, in bytes.
func (s *server) procStatus(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// Figures as the other benchmark programs render them.
var (
	summary  = stats.Summary
	quantile = stats.Quantile
	round    = stats.Round
	mb       = stats.MB
)

// linkage reports whether bin was built with cgo, which decides whether it
// starts through the dynamic loader.
func linkage(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "build unknown"
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			return "CGO_ENABLED=" + s.Value
		}
	}
	return "CGO_ENABLED unknown"
}

// goVersion reports the Go version the binary was built with.
func goVersion(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "Go version unknown"
	}
	return info.GoVersion
}
