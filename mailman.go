package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/mailman"
)

// defaultEnterDelay is the pause between typing the ring and pressing
// Enter. Coding assistants with a terminal UI can take an Enter that comes
// in the same burst as the text as part of a paste and not submit it; a
// pause of a few hundred milliseconds makes it a key press of its own.
const defaultEnterDelay = 300 * time.Millisecond

// stopWait bounds how long "mailman stop" waits for the mailman to end.
const stopWait = 5 * time.Second

var mailmanCmd = &command{
	summary: "Ring idle agents when mail waits for them",
	usage:   "agentmail mailman [--daemon] [--enter-delay DURATION] | mailman stop | mailman status",
	help: `Run the mailman of this project: it types "Check your agentmail" into the
tmux pane of an agent whose status is ready and who has unread mail, then
presses Enter. It never types a message.

  - A ready agent is rung within a second of new mail, and again at most
    once a minute while the mail stays unread. Agents at work or offline
    are never rung.
  - An agent that never set a status is rung at most once a minute while
    a window of its name exists.
  - The pane is the one recorded by the agent's last "agentmail status",
    while it is still in a window of the agent's name; otherwise the
    active pane of the window with exactly that name. Windows named in
    .agentmailignore are never rung.
  - It serves the windows of the tmux session it is started from, or every
    session of the server when $TMUX_PANE is not set (set, it must be a
    pane id). It needs $TMUX, or $AGENTMAIL_TMUX_SOCKET naming the
    server's socket, and stops when that tmux server or session goes away.

One mailman runs per project: another start fails with "mailman already
running (PID: N)" and exit status 2. In the foreground it logs to standard
output and stops on Ctrl-C, SIGTERM or SIGHUP.

  agentmail mailman           run in the foreground
  agentmail mailman --daemon  run in the background; logs to .agentmail/mailman.log
  agentmail mailman stop      stop the running mailman (exit 1 if none runs)
  agentmail mailman status    say whether a mailman runs (exit 1 if none runs)

Flags:
  --daemon                 detach and run in the background
  --enter-delay DURATION   pause between the text and Enter (default 300ms)`,
	run: runMailman,
}

func runMailman(ctx context.Context, e *env, args []string) error {
	fs := newFlags("mailman")
	daemon := fs.Bool("daemon", false, "")
	enterDelay := fs.Duration("enter-delay", defaultEnterDelay, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *enterDelay < 0 {
		return usagef("--enter-delay must not be negative, not %v", *enterDelay)
	}
	action := "start"
	switch len(pos) {
	case 0:
	case 1:
		action = pos[0]
		if action != "stop" && action != "status" {
			return usagef("unknown mailman action %q (want stop or status)", action)
		}
		var flags []string
		fs.Visit(func(f *flag.Flag) { flags = append(flags, "--"+f.Name) })
		if len(flags) > 0 {
			return usagef("mailman %s takes no flags, got %s", action, strings.Join(flags, " "))
		}
	default:
		return usagef("unexpected argument %q", pos[1])
	}

	root, err := findRoot()
	if err != nil {
		return err
	}
	st := mailbox.New(root)
	pidPath := mailman.PIDPath(st)
	if action == "status" || action == "stop" {
		pid, done := 0, "running"
		if action == "status" {
			pid, err = mailman.Running(pidPath)
		} else {
			pid, err = mailman.Stop(pidPath, stopWait)
			done = "stopped"
		}
		if err != nil {
			return err
		}
		if pid == 0 {
			fmt.Fprintln(e.stdout, "Mailman is not running")
			return &exitError{code: 1}
		}
		fmt.Fprintf(e.stdout, "Mailman %s (PID: %d)\n", done, pid)
		return nil
	}

	report := mailman.ChildReport(os.Getenv)
	err = startMailman(ctx, e, st, pidPath, *daemon && report == nil, *enterDelay, report)
	var ee *exitError
	if err == nil || report == nil || errors.As(err, &ee) {
		return err
	}
	// A daemon child's output is the log, where the parent points the user;
	// the parent prints the error itself.
	report.Failed(err)
	(&logger{w: e.stdout}).printf("Mailman not started: %v", err)
	return &exitError{code: statusOf(err)}
}

// startMailman runs the mailman in the foreground, or starts it as a
// daemon when daemon is set. report, when not nil, is told how the start of
// a daemon child went.
func startMailman(ctx context.Context, e *env, st *mailbox.Store, pidPath string, daemon bool, enterDelay time.Duration, report *mailman.StartReport) error {
	term, scope, err := mailmanScope(ctx, enterDelay)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(st.Dir(), 0o700); err != nil {
		return err
	}
	if daemon {
		return spawnMailman(e, st, enterDelay)
	}
	lock, err := mailman.Acquire(pidPath)
	if err != nil {
		return err
	}
	release := sync.OnceFunc(func() {
		if err := lock.Release(); err != nil {
			fmt.Fprintf(e.stderr, "warning: releasing the mailman lock: %v\n", err)
		}
	})
	defer release()
	ctx, stoppedBy := mailmanSignals(ctx)
	log := mailmanLog(e, st, report != nil)
	m := &mailman.Mailman{Store: st, Term: term, Logf: log.printf, Guard: lock.Check, Queue: codexQueue}
	started := false
	err = m.Run(ctx, func() {
		started = true
		log.printf("Mailman started (PID: %d) for %s, ringing in %s", os.Getpid(), st.Root, scope)
		report.Started()
	})
	got := stoppedBy()
	// The lock goes before the last line, so that whoever reads that line
	// can start a new mailman at once.
	release()
	switch {
	case err != nil && !started:
		return err
	case err != nil:
		// Once started, the mailman reports through its log only.
		log.printf("Mailman stopped: %v", err)
		return &exitError{code: 1}
	case got != nil:
		log.printf("Mailman stopped (%v)", got)
	default:
		log.printf("Mailman stopped")
	}
	return nil
}

// mailmanScope finds the panes the mailman may ring: the session of
// $TMUX_PANE, or every session of the server. The scope is resolved once:
// a session id stays valid for the session's lifetime, even after the pane
// it was learned from closes.
func mailmanScope(ctx context.Context, enterDelay time.Duration) (term *mailman.Tmux, scope string, err error) {
	srv, err := findServer(os.Getenv, "")
	if err != nil {
		return nil, "", err
	}
	client := srv.client
	client.EnterDelay = enterDelay
	term = &mailman.Tmux{Client: client}
	if client.Pane == "" {
		_, err := client.ListPanes(ctx, "")
		return term, "every session of the tmux server", err
	}
	if term.Session, err = client.SessionOf(ctx, client.Pane); err != nil {
		return nil, "", fmt.Errorf("finding the tmux session of $TMUX_PANE: %w", err)
	}
	return term, "tmux session " + term.Session, nil
}

// mailmanSignals returns a context that ends on SIGINT, SIGTERM or SIGHUP,
// on which the mailman stops cleanly, and a function that ends it and
// says which signal came, if one did.
func mailmanSignals(ctx context.Context) (context.Context, func() os.Signal) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	stoppedBy := make(chan os.Signal, 1)
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
			cancel()
		case <-ctx.Done():
		}
		stoppedBy <- sig
	}()
	return ctx, func() os.Signal {
		cancel()
		signal.Stop(sigs)
		return <-stoppedBy
	}
}

// mailmanLog is where the mailman's lines go: standard output, or, for a
// daemon child, whose standard output is the log (spawnMailman), the log
// file it rotates. The store's warnings go there too, each damaged line
// once, since it is met again on every pass.
func mailmanLog(e *env, st *mailbox.Store, daemon bool) *logger {
	log := &logger{w: e.stdout}
	if daemon {
		log.w = &daemonLog{path: filepath.Join(st.Dir(), mailman.LogFileName), f: os.Stdout}
	}
	warned := map[string]bool{}
	st.Warnf = func(format string, args ...any) {
		msg := fmt.Sprintf("warning: "+format, args...)
		if !warned[msg] && len(warned) < 1000 {
			warned[msg] = true
			log.printf("%s", msg)
		}
	}
	return log
}

// spawnMailman starts this program again as a daemon mailman, logging to
// .agentmail/mailman.log, and prints its PID once it runs.
func spawnMailman(e *env, st *mailbox.Store, enterDelay time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program to start the daemon: %w", err)
	}
	logPath := filepath.Join(st.Dir(), mailman.LogFileName)
	logFile, _, err := mailbox.OpenOwn(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	d := &mailman.Daemon{
		Path: exe,
		// The same argv[0], which is also how the test scripts' copy of
		// this program knows what to run.
		Args: []string{os.Args[0], "mailman", "--enter-delay", enterDelay.String()},
		// The child finds the same root even though it runs from the root
		// and a relative $AGENTMAIL_ROOT would now mean something else (of
		// a repeated variable, the last one counts).
		Env: append(os.Environ(), mailbox.RootEnv+"="+st.Root),
		Dir: st.Root,
		Log: logFile,
	}
	pid, err := d.Spawn()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Mailman started in background (PID: %d)\n", pid)
	return nil
}

// daemonLog is a daemon's log: f, its standard output, while path still
// names that file, and otherwise the file at path, opened anew (the
// mailman puts .agentmail/ back when it is removed; without this its log
// would go on into the removed file). A log that has reached maxLogSize is
// renamed to path.1, replacing the one before, and a new one started: a
// mailman runs for weeks, and logs a line a minute for an agent it rings
// and that does not read its mail.
type daemonLog struct {
	path string
	f    *os.File
}

// maxLogSize is the size at which daemonLog starts a new log.
var maxLogSize int64 = 1 << 20

func (l *daemonLog) Write(p []byte) (int, error) {
	now, err := os.Lstat(l.path)
	if err == nil && now.Mode().IsRegular() && now.Size() >= maxLogSize {
		if rerr := os.Rename(l.path, l.path+".1"); rerr == nil {
			err = fs.ErrNotExist
		}
	}
	if was, werr := l.f.Stat(); err != nil || werr != nil || !os.SameFile(was, now) {
		if f, _, err := mailbox.OpenOwn(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			if l.f != os.Stdout {
				l.f.Close()
			}
			l.f = f
		}
	}
	return l.f.Write(p)
}

// logger writes timestamped lines, one Write each, from any goroutine.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) printf(format string, args ...any) {
	line := time.Now().Format("2006-01-02 15:04:05.000 ") + text.OneLine(fmt.Sprintf(format, args...)) + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, line)
}

// codexQueue queues text for a running Codex session, which takes it as
// its next input and resumes: the wake of an agent that runs Codex,
// without typing into its pane.
func codexQueue(ctx context.Context, session, msg string) error {
	path, err := exec.LookPath("codex")
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, path, "queue", "--thread="+session, "--message", msg, "--resume").CombinedOutput()
	if err != nil {
		return fmt.Errorf("codex queue: %v: %s", err, text.OneLine(string(out)))
	}
	return nil
}
