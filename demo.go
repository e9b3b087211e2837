package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var demoCmd = &command{
	summary: "Show mail flowing between three scripted agents, on the web page",
	usage:   "agentmail demo [--port N] [--no-open] [--keep] [--pace DURATION]",
	help: `Start a throwaway project and a private tmux server with three scripted
agents, planner, coder and reviewer, which write to each other for about a
minute: a question, an answer in its thread, a wait, a review, and messages
to you. The web page (agentmail web) shows them as they go, and you can
write to any of them from it: each answers in the thread. Nothing needs to
be configured, and no assistant runs.

It prints the page's address, opens it in the desktop's browser, and says
how to watch the agents' panes. Ctrl-C (or SIGTERM) ends it: the tmux
server it started is killed and the project removed.

Flags:
  --port N          the page's port (default: a free one)
  --no-open         do not open the browser
  --keep            keep the project's directory at the end, and say where
  --pace DURATION   the pause between the agents' steps (default 5s)`,
	run: runDemo,
}

// demoAgents are the scripted agents, in the order of their windows.
var demoAgents = []string{"planner", "coder", "reviewer"}

type demoOptions struct {
	port       int
	open, keep bool
	pace       time.Duration
	dir        string // where to make the project; "" for a new temporary one
	agent      string // the scripted agent this process plays
}

func parseDemoFlags(args []string) (*demoOptions, error) {
	o := &demoOptions{}
	fs := newFlags("demo")
	fs.IntVar(&o.port, "port", 0, "")
	noOpen := fs.Bool("no-open", false, "")
	fs.BoolVar(&o.keep, "keep", false, "")
	fs.DurationVar(&o.pace, "pace", 5*time.Second, "")
	fs.StringVar(&o.dir, "dir", "", "")
	fs.StringVar(&o.agent, "play", "", "")
	if err := noArgs(fs, args); err != nil {
		return nil, err
	}
	if o.pace < 0 || o.port < 0 || o.port > 65535 {
		return nil, usagef("--pace must not be negative, and --port be 0 to 65535")
	}
	o.open = !*noOpen
	return o, nil
}

func runDemo(ctx context.Context, e *env, args []string) error {
	o, err := parseDemoFlags(args)
	if err != nil {
		return err
	}
	if o.agent != "" {
		return playAgent(ctx, o.agent, o.pace)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		return fmt.Errorf("the demo needs tmux: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		// The tmux socket lives here: its path must stay short.
		if dir, err = os.MkdirTemp("", "amdemo"); err != nil {
			return err
		}
	} else if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	d := &demo{dir: dir, root: filepath.Join(dir, "project"), sock: filepath.Join(dir, "s"), self: self, log: e.stderr}
	defer d.cleanUp(o.keep)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	url, err := d.start(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "agentmail demo: the page: %s\n", url)
	fmt.Fprintf(e.stderr, "agentmail demo: the agents' panes: tmux -S %s attach (detach with Ctrl-b d)\n", d.sock)
	fmt.Fprintf(e.stderr, "agentmail demo: the project: %s; Ctrl-C ends the demo and removes it\n", d.root)
	if o.open {
		openBrowser(url, func(format string, args ...any) { fmt.Fprintf(e.stderr, "agentmail demo: "+format+"\n", args...) })
	}
	select {
	case <-ctx.Done():
	case <-d.ended(ctx):
		fmt.Fprintln(e.stderr, "agentmail demo: its tmux server went away")
	}
	return nil
}

// demo is a running demo: its directory, project, tmux socket and binary.
type demo struct {
	dir, root, sock, self string
	log                   interface{ Write([]byte) (int, error) }
}

// start makes the project and the tmux session, with a window per agent
// and one for the page, and returns the page's address.
func (d *demo) start(ctx context.Context, o *demoOptions) (string, error) {
	if err := os.MkdirAll(filepath.Join(d.root, ".git"), 0o755); err != nil {
		return "", err
	}
	// The page's window is no agent.
	if err := os.WriteFile(filepath.Join(d.root, ".agentmailignore"), []byte("page\n"), 0o644); err != nil {
		return "", err
	}
	pageErr := filepath.Join(d.dir, "page.err")
	page := fmt.Sprintf("exec %s web --port %d 2>%s", shellQuote(d.self), o.port, shellQuote(pageErr))
	if err := d.tmux("-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", "160", "-y", "40", "-c", d.root, "-n", "page", page); err != nil {
		return "", err
	}
	for _, name := range demoAgents {
		play := fmt.Sprintf("exec %s demo --play %s --pace %s", shellQuote(d.self), name, o.pace)
		if err := d.tmux("new-window", "-d", "-t", "demo:", "-c", d.root, "-n", name, play); err != nil {
			return "", err
		}
	}
	return waitForURL(ctx, pageErr)
}

// tmux runs tmux on the demo's own socket. The server it starts, and so
// the agents, get none of agentmail's variables of the caller: they would
// point the agents at another project or hub.
func (d *demo) tmux(args ...string) error {
	cmd := exec.Command("tmux", append([]string{"-S", d.sock}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTMAIL_") && !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ended is closed when the demo's tmux server is gone.
func (d *demo) ended(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for ctx.Err() == nil {
			time.Sleep(time.Second)
			if d.tmux("has-session", "-t", "demo") != nil {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// cleanUp kills the demo's tmux server, which ends the agents and the
// page, and removes its directory unless keep.
func (d *demo) cleanUp(keep bool) {
	// Each pane's process leads a process group of its own, which holds
	// the commands it runs; they may still write to the project as they
	// end, so the project is removed once they are gone.
	cmd := exec.Command("tmux", "-S", d.sock, "list-panes", "-a", "-F", "#{pane_pid}")
	out, _ := cmd.Output()
	d.tmux("kill-server")
	deadline := time.Now().Add(3 * time.Second)
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		for err == nil && pid > 1 && syscall.Kill(-pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if keep {
		fmt.Fprintf(d.log, "agentmail demo: kept %s\n", d.root)
		return
	}
	os.RemoveAll(d.dir)
}

var pageURL = regexp.MustCompile(`serving the page of \S+ at (\S+)`)

// waitForURL waits for the page's address in its log.
func waitForURL(ctx context.Context, path string) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if m := pageURL.FindSubmatch(b); m != nil {
			return string(m[1]), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("the page did not start: %s", strings.TrimSpace(string(b)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// demoSteps are what each scripted agent does, in order: a step is a
// command of agentmail, run as the agent, where $ID and $FROM are the id
// and sender of the message the last "wait" took; "wait" waits for the
// next message and takes it; "pause" waits one pace.
var demoSteps = map[string][][]string{
	"planner": {
		{"status", "work"},
		{"send", "-r", "coder", "-m", "Could you add input validation to the signup form? Reply in this thread when it is done."},
		{"status", "ready"},
		{"wait"},
		{"status", "work"},
		{"pause"},
		{"send", "-r", "reviewer", "-m", "coder has finished the signup validation. Could you review it?"},
		{"send", "-r", "human", "-m", "Planner here: the signup validation is written and in review. Write to any of us from this page."},
		{"status", "ready"},
	},
	"coder": {
		{"status", "ready"},
		{"wait"},
		{"status", "work"},
		{"pause"},
		{"pause"},
		{"send", "--reply-to", "$ID", "-r", "$FROM", "-m", "Done: the form checks the email and the password length; the tests pass."},
		{"status", "ready"},
		{"wait"},
		{"status", "work"},
		{"pause"},
		{"send", "--reply-to", "$ID", "-r", "$FROM", "-m", "Good catch, fixed: the email is trimmed first."},
		{"status", "ready"},
	},
	"reviewer": {
		{"status", "ready"},
		{"wait"},
		{"status", "work"},
		{"pause"},
		{"send", "-r", "coder", "-m", "One nit: trim whitespace before checking the email."},
		{"status", "ready"},
		{"wait"},
		{"send", "-r", "human", "-m", "Review done: the signup validation looks good to me."},
		{"status", "ready"},
	},
}

// playAgent plays the scripted agent name in its pane, then answers
// whatever comes, in its thread, until its pane ends.
func playAgent(ctx context.Context, name string, pace time.Duration) error {
	steps, ok := demoSteps[name]
	if !ok {
		return usagef("no scripted agent %q", name)
	}
	var got demoMessage
	for _, step := range steps {
		var err error
		switch step[0] {
		case "pause":
			time.Sleep(pace)
		case "wait":
			got, err = demoReceive(ctx)
		default:
			args := make([]string, len(step))
			for i, a := range step {
				args[i] = strings.NewReplacer("$ID", got.id, "$FROM", got.from).Replace(a)
			}
			err = demoRun(ctx, args...)
		}
		if err != nil {
			return err
		}
		time.Sleep(pace / 4)
	}
	for {
		got, err := demoReceive(ctx)
		if err != nil {
			return err
		}
		time.Sleep(pace / 2)
		if err := demoRun(ctx, "send", "--reply-to", got.id, "-r", got.from, "-m", "Thanks, noted: "+name+" will take it into account."); err != nil {
			return err
		}
	}
}

// demoRun runs agentmail with args as this pane's agent, showing the
// command and its output in the pane.
func demoRun(ctx context.Context, args ...string) error {
	fmt.Printf("$ agentmail %s\n", strings.Join(args, " "))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	return cmd.Run()
}

// demoMessage is a message a scripted agent received.
type demoMessage struct{ id, from string }

// demoReceive waits for the next message, shows it, and returns its id
// and sender.
func demoReceive(ctx context.Context) (demoMessage, error) {
	self, err := os.Executable()
	if err != nil {
		return demoMessage{}, err
	}
	for ctx.Err() == nil {
		fmt.Println("$ agentmail receive --wait 1h")
		out, err := exec.CommandContext(ctx, self, "receive", "--wait", "10m").Output()
		os.Stdout.Write(out)
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return demoMessage{}, err
		}
		var m demoMessage
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "ID: "); ok && m.id == "" {
				m.id = v
			}
			if v, ok := strings.CutPrefix(sc.Text(), "From: "); ok && m.from == "" {
				m.from = v
			}
		}
		if m.id != "" && m.from != "" {
			return m, nil
		}
	}
	return demoMessage{}, ctx.Err()
}
