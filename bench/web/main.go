// Command web measures "agentmail web" from the outside, as the person's
// browser uses it. It prints
//
//   - the page's weight: the bytes of the page, its script and its style;
//   - the time from a CLI send (the start of "agentmail send") to the
//     server-sent event that tells the page, and to the message being in
//     the page's next read of /api/messages, over -sends sends;
//   - the time of a page of /api/messages and of /api/agents with 10
//     messages stored and with -many, read and notified as in real use.
//
// It reports numbers and asserts nothing. Usage:
//
//	go build -o agentmail . && go run ./bench/web -bin ./agentmail [-sends 100] [-many 10000]
//
// It needs tmux. It starts a private tmux server on a socket of its own,
// with windows alice, bob and web (where the server runs), and kills that
// server and the agentmail server, and removes its files, when it ends.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"agentmail/bench/internal/cleanup"
	"agentmail/bench/internal/stats"
)

func main() {
	bin := flag.String("bin", "", "the agentmail binary to measure")
	sends := flag.Int("sends", 100, "sends timed from the CLI to the page")
	many := flag.Int("many", 10000, "messages in the long history")
	flag.Parse()
	if *bin == "" {
		cleanup.Fatalf("give -bin, the agentmail binary")
	}
	cleanup.OnSignals()
	defer cleanup.Finish()
	abs, err := filepath.Abs(*bin)
	check(err)
	p := newProject(abs)
	c := p.startWeb()
	fmt.Printf("page weight: %d bytes (/, app.js, app.css)\n", c.weight())
	latency(p, c, *sends)
	for _, n := range []int{10, *many} {
		p.fill(n)
		fmt.Printf("%6d messages: /api/messages first page  %s\n", n, stats.Summary(c.times("/api/messages?limit=50", 50)))
		deep := c.deepCursor(n)
		fmt.Printf("%6d messages: /api/messages oldest page %s\n", n, stats.Summary(c.times("/api/messages?limit=50&cursor="+deep, 50)))
		fmt.Printf("%6d messages: /api/agents               %s\n", n, stats.Summary(c.times("/api/agents", 50)))
	}
}

// latency times sends from the CLI to the page: to the event, and to the
// message being in the first page of messages read after it.
func latency(p *project, c *client, n int) {
	events := c.events()
	var toEvent, toShown, cli []time.Duration
	for i := range n {
		drain(events)
		body := fmt.Sprintf("bench message %d", i)
		start := time.Now()
		p.agentmail(p.alice, "send", "bob", body)
		cli = append(cli, time.Since(start))
		// The message's first event; a later one (the mailbox's close)
		// is drained before the next send.
		select {
		case at := <-events:
			toEvent = append(toEvent, at.Sub(start))
		case <-time.After(5 * time.Second):
			cleanup.Fatalf("no event within 5s of send %d", i)
		}
		if !strings.Contains(c.get("/api/messages?limit=50"), body) {
			cleanup.Fatalf("send %d is not in the page after its event", i)
		}
		toShown = append(toShown, time.Since(start))
	}
	fmt.Printf("CLI send, process start to exit (%d): %s\n", n, stats.Summary(cli))
	fmt.Printf("CLI send start to SSE event     (%d): %s\n", n, stats.Summary(toEvent))
	fmt.Printf("CLI send start to message read  (%d): %s\n", n, stats.Summary(toShown))
}

func drain(ch <-chan time.Time) {
	for {
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

// project is a temporary project with a private tmux session.
type project struct {
	bin, root, sock     string
	alice, bob, webPane string
}

func newProject(bin string) *project {
	root, err := os.MkdirTemp("", "amweb")
	check(err)
	cleanup.AtExit(func() { os.RemoveAll(root) })
	check(os.Mkdir(filepath.Join(root, ".git"), 0o755))
	p := &project{bin: bin, root: root, sock: filepath.Join(root, "s")}
	p.alice = p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "bench", "-n", "alice", "-P", "-F", "#{pane_id}", "cat")
	cleanup.AtExit(func() { exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	p.bob = p.tmux("new-window", "-d", "-t", "bench:", "-n", "bob", "-P", "-F", "#{pane_id}", "cat")
	p.webPane = p.tmux("new-window", "-d", "-t", "bench:", "-n", "web", "-P", "-F", "#{pane_id}", "cat")
	return p
}

func (p *project) tmux(args ...string) string {
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).Output()
	check(err)
	return strings.TrimSpace(string(out))
}

func (p *project) env(pane string) []string {
	return append(os.Environ(), "TMUX="+p.sock+",0,0", "TMUX_PANE="+pane, "AGENTMAIL_ROOT="+p.root)
}

func (p *project) agentmail(pane string, args ...string) {
	cmd := exec.Command(p.bin, args...)
	cmd.Dir, cmd.Env = p.root, p.env(pane)
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup.Fatalf("agentmail %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// fill replaces the mailboxes with n messages between alice, bob and
// carol, in time order, with a delivery record in which every message was
// notified and all but the newest tenth read, as a long-running project's.
func (p *project) fill(n int) {
	dir := filepath.Join(p.root, ".agentmail", "mailboxes")
	check(os.RemoveAll(dir))
	check(os.MkdirAll(dir, 0o700))
	names := []string{"alice", "bob", "carol"}
	files := map[string]*bufio.Writer{}
	for _, name := range names {
		f, err := os.OpenFile(filepath.Join(dir, name+".jsonl"), os.O_WRONLY|os.O_CREATE, 0o600)
		check(err)
		w := bufio.NewWriter(f)
		files[name] = w
		defer func() { check(w.Flush()); check(f.Close()) }()
	}
	df, err := os.Create(filepath.Join(p.root, ".agentmail", "delivery.jsonl"))
	check(err)
	dw := bufio.NewWriter(df)
	defer func() { check(dw.Flush()); check(df.Close()) }()
	t0 := time.Now().Add(-time.Duration(n) * time.Second)
	for i := range n {
		from, to := names[i%3], names[(i+1)%3]
		id := fmt.Sprintf("%08x-0000-7000-8000-%012x", i, i)
		at := t0.Add(time.Duration(i) * time.Second)
		read := i < n*9/10
		line, _ := json.Marshal(map[string]any{"id": id, "from": from, "to": to, "message": fmt.Sprintf("message %d: %s", i, strings.Repeat("words ", 30)),
			"read_flag": read, "created_at": at, "thread_id": id})
		fmt.Fprintf(files[to], "%s\n", line)
		fmt.Fprintf(dw, `{"id":%q,"to":%q,"state":"notified","at":%q,"by":"mailman"}`+"\n", id, to, at.Format(time.RFC3339Nano))
		if read {
			fmt.Fprintf(dw, `{"id":%q,"to":%q,"state":"read","at":%q}`+"\n", id, to, at.Format(time.RFC3339Nano))
		}
	}
}

// client is the person's browser, logged in.
type client struct {
	base string
	c    *http.Client
}

var addr = regexp.MustCompile(`(http://[^/\s]+)/\?code=[0-9a-f]+`)

func (p *project) startWeb() *client {
	cmd := exec.Command(p.bin, "web")
	cmd.Dir, cmd.Env = p.root, p.env(p.webPane)
	stderr, err := cmd.StderrPipe()
	check(err)
	check(cmd.Start())
	cleanup.AtExit(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	check(err)
	go io.Copy(io.Discard, stderr)
	m := addr.FindStringSubmatch(line)
	if m == nil {
		cleanup.Fatalf("agentmail web printed %q", line)
	}
	jar, _ := cookiejar.New(nil)
	c := &client{base: m[1], c: &http.Client{Jar: jar}}
	resp, err := c.c.Get(m[0])
	check(err)
	resp.Body.Close()
	return c
}

func (c *client) get(path string) string {
	resp, err := c.c.Get(c.base + path)
	check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	check(err)
	if resp.StatusCode != http.StatusOK {
		cleanup.Fatalf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b)
}

func (c *client) weight() int {
	n := 0
	for _, path := range []string{"/", "/static/app.js", "/static/app.css"} {
		n += len(c.get(path))
	}
	return n
}

func (c *client) times(path string, n int) []time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		c.get(path)
		ds[i] = time.Since(start)
	}
	return ds
}

// deepCursor pages to the last page of n messages and returns its cursor.
func (c *client) deepCursor(n int) string {
	cursor := ""
	for range max(0, (n-1)/500) {
		var page struct{ Next string }
		check(json.Unmarshal([]byte(c.get("/api/messages?limit=500&cursor="+cursor)), &page))
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	return cursor
}

// events reads the page's event stream and reports when each change
// arrived.
func (c *client) events() <-chan time.Time {
	req, _ := http.NewRequestWithContext(context.Background(), "GET", c.base+"/api/events", nil)
	resp, err := c.c.Do(req)
	check(err)
	ch := make(chan time.Time, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() == "event: change" {
				ch <- time.Now()
			}
		}
	}()
	return ch
}

func check(err error) {
	if err != nil {
		cleanup.Fatalf("%v", err)
	}
}
