package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the real tmux, each against a server of its own on a
// private socket, so they never touch the user's server. $TMUX is pointed at
// that socket with t.Setenv, exactly as a pane inside it would see it, which
// is also why none of them can run in parallel.

// server is a tmux server started for one test.
type server struct {
	t    *testing.T
	sock string
}

// requireTmux skips the test when tmux is not installed, except under CI,
// where a missing tmux must fail the run rather than let it pass by skipping.
func requireTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required when CI is set: %v", err)
		}
		t.Skipf("tmux not found: %v", err)
	}
}

// startServer starts a tmux server on a new private socket with one session,
// "proj", whose first window "alice" runs cat, and points $TMUX at it. It
// returns the server and alice's pane. The server is killed when the test ends.
func startServer(t *testing.T) (*server, string) {
	t.Helper()
	requireTmux(t)
	// A unix socket path must fit in about 104 bytes, which t.TempDir's long
	// names can exceed, so the socket lives in a short directory of its own.
	dir, err := os.MkdirTemp("", "tm")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, sock: dir + "/s"}
	t.Cleanup(func() {
		// The test may have killed the server already; that is fine.
		_ = s.command("kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	pane := s.tmux("-f", "/dev/null", "new-session", "-d", "-s", "proj", "-n", "alice", "-P", "-F", "#{pane_id}", "cat")
	t.Setenv("TMUX", s.sock+",0,0")
	t.Setenv("TMUX_PANE", "")
	return s, pane
}

// command builds a tmux command aimed at the test's server by its socket. It
// drops $TMUX and $TMUX_PANE from the environment so that tmux cannot take the
// test process for a client nested in some other session.
func (s *server) command(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=")
	})
	return cmd
}

// tmux runs a tmux command on the test's server and returns its output
// without the final newline, failing the test if the command fails.
func (s *server) tmux(args ...string) string {
	s.t.Helper()
	cmd := s.command(args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("tmux %q: %v: %s", args, err, stderr.String())
	}
	return strings.TrimSuffix(string(out), "\n")
}

// window opens a window running cat in session "proj" (at index, when index
// is not empty) without selecting it, and returns its pane.
func (s *server) window(name, index string) string {
	s.t.Helper()
	return s.tmux("new-window", "-d", "-t", "proj:"+index, "-n", name, "-P", "-F", "#{pane_id}", "cat")
}

// windowOf returns the window id of pane.
func (s *server) windowOf(pane string) string {
	s.t.Helper()
	return s.tmux("display-message", "-p", "-t", pane, "#{window_id}")
}

// lines returns the lines pane shows, with trailing blanks trimmed.
func (s *server) lines(pane string) []string {
	s.t.Helper()
	var lines []string
	for _, l := range strings.Split(s.tmux("capture-pane", "-p", "-t", pane), "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return lines
}

// count returns how many lines of pane are exactly text.
func (s *server) count(pane, text string) int {
	s.t.Helper()
	n := 0
	for _, l := range s.lines(pane) {
		if l == text {
			n++
		}
	}
	return n
}

// waitCount waits up to two seconds for pane to show text on exactly n lines
// and fails the test with the pane's content if it does not. A pane running
// cat shows a typed line twice once Enter is pressed: once echoed by the
// terminal as it is typed, once written back by cat when it reads the line.
func (s *server) waitCount(pane, text string, n int) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if s.count(pane, text) == n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("pane %s never showed %q on %d lines; it shows:\n%s", pane, text, n, strings.Join(s.lines(pane), "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSessionListsWindowsInOrder(t *testing.T) {
	s, alice := startServer(t)
	names := []string{"alice", "7", "-dash", "a:b", "w.1", "my", "my win", "tab\there", "new\nline", "pipe|bar", "  spaced  ", "héllo ✉", "\x01ctl"}
	panes := []string{alice}
	for _, name := range names[1:] {
		panes = append(panes, s.window(name, ""))
	}

	c := &Client{Pane: alice}
	got, err := c.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want []Window
	for i, name := range names {
		want = append(want, Window{ID: s.windowOf(panes[i]), Name: name, Pane: panes[i]})
	}
	if !slices.Equal(got.Windows, want) {
		t.Errorf("Windows\n got %#v\nwant %#v", got.Windows, want)
	}
	if got.Self != want[0] {
		t.Errorf("Self = %#v, want %#v", got.Self, want[0])
	}
}

// tmux writes '_' for every character outside ASCII to a client whose
// locale is not UTF-8 (LANG=C, or no locale at all, as in many hook and CI
// environments), unless the client is started with -u or finds $TMUX set,
// as ours always does. Names must arrive as they are whatever the locale.
func TestSessionNamesInAnyLocale(t *testing.T) {
	s, alice := startServer(t)
	t.Setenv("LC_ALL", "C")
	t.Setenv("LANG", "C")
	pane := s.window("héllo ✉", "")
	got, err := (&Client{Pane: pane}).Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Self.Name != "héllo ✉" {
		t.Errorf("own name = %q, want %q", got.Self.Name, "héllo ✉")
	}
	if len(got.Windows) != 2 || got.Windows[0].Pane != alice || got.Windows[1].Name != "héllo ✉" {
		t.Errorf("Windows = %#v", got.Windows)
	}
}

func TestSessionSelfIsTheCallersPane(t *testing.T) {
	s, alice := startServer(t)
	bob := s.window("bob", "")
	carol := s.window("carol", "")
	// The caller is a second pane of bob's window, which is not bob's active
	// pane, while carol's window is the session's current one.
	bob2 := s.tmux("split-window", "-d", "-t", bob, "-P", "-F", "#{pane_id}", "cat")
	s.tmux("select-window", "-t", s.windowOf(carol))

	got, err := (&Client{Pane: bob2}).Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Window{ID: s.windowOf(bob), Name: "bob", Pane: bob2}); got.Self != want {
		t.Errorf("Self = %#v, want %#v", got.Self, want)
	}
	want := []Window{
		{ID: s.windowOf(alice), Name: "alice", Pane: alice},
		{ID: s.windowOf(bob), Name: "bob", Pane: bob},
		{ID: s.windowOf(carol), Name: "carol", Pane: carol},
	}
	if !slices.Equal(got.Windows, want) {
		t.Errorf("Windows\n got %#v\nwant %#v", got.Windows, want)
	}
}

func TestSessionIgnoresOtherSessions(t *testing.T) {
	s, alice := startServer(t)
	bob := s.window("bob", "")
	dave := s.tmux("new-session", "-d", "-s", "other", "-n", "dave", "-P", "-F", "#{pane_id}", "cat")
	s.tmux("new-window", "-d", "-t", "other:", "-n", "bob", "cat")

	got, err := (&Client{Pane: alice}).Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{
		{ID: s.windowOf(alice), Name: "alice", Pane: alice},
		{ID: s.windowOf(bob), Name: "bob", Pane: bob},
	}
	if !slices.Equal(got.Windows, want) {
		t.Errorf("Windows of proj\n got %#v\nwant %#v", got.Windows, want)
	}

	got, err = (&Client{Pane: dave}).Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got.Windows {
		names = append(names, w.Name)
	}
	if want := []string{"dave", "bob"}; !slices.Equal(names, want) || got.Self.Name != "dave" {
		t.Errorf("session other: Self %q, windows %q; want dave and %q", got.Self.Name, names, want)
	}
}

func TestSessionPaneGone(t *testing.T) {
	s, _ := startServer(t)
	bob := s.window("bob", "")
	s.tmux("kill-window", "-t", s.windowOf(bob))

	for _, pane := range []string{bob, "%999"} {
		_, err := (&Client{Pane: pane}).Session(context.Background())
		if !errors.Is(err, ErrNotInTmux) {
			t.Errorf("Session for %s: err = %v, want ErrNotInTmux", pane, err)
		}
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Stderr, "can't find pane") {
			t.Errorf("Session for %s: err = %v, want a RunError saying tmux can't find the pane", pane, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "tmux pane "+pane+" not found: tmux list-panes -s -t "+pane+" -F …: exit status 1: can't find pane") {
			t.Errorf("Session for %s: message %q", pane, err)
		}
	}
}

func TestSessionServerGone(t *testing.T) {
	s, alice := startServer(t)
	s.tmux("kill-server")

	_, err := (&Client{Pane: alice}).Session(context.Background())
	if !errors.Is(err, ErrNotInTmux) {
		t.Fatalf("err = %v, want ErrNotInTmux", err)
	}
	var re *RunError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a RunError inside", err)
	}
	if re.Args[0] != "list-panes" || re.Stderr == "" {
		t.Errorf("RunError = %#v, want list-panes with tmux's message", re)
	}
	if msg := err.Error(); !strings.Contains(msg, "tmux server is gone: tmux list-panes -s -t "+alice+" -F …: exit status 1: ") || strings.Contains(msg, "\n") {
		t.Errorf("message %q does not carry the command, status and stderr on one line", msg)
	}
}

func TestSessionEmptyOwnName(t *testing.T) {
	s, alice := startServer(t)
	bob := s.window("bob", "")
	s.tmux("rename-window", "-t", s.windowOf(alice), "")

	_, err := (&Client{Pane: alice}).Session(context.Background())
	if err == nil || !strings.Contains(err.Error(), "empty name") {
		t.Fatalf("err = %v, want an empty-name error", err)
	}

	// Another window's empty name is reported as it is.
	got, err := (&Client{Pane: bob}).Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Self.Name != "bob" || len(got.Windows) != 2 || got.Windows[0].Name != "" {
		t.Errorf("Session from bob = %#v", got)
	}
}

func TestAlive(t *testing.T) {
	ctx := context.Background()
	s, alice := startServer(t)
	// A second session keeps the server up when proj is killed.
	s.tmux("new-session", "-d", "-s", "keep", "cat")

	c := &Client{Pane: alice}
	if err := c.Alive(ctx); err != nil {
		t.Fatalf("Alive on a live pane: %v", err)
	}

	// tmux answers display-message for a pane that never existed with exit
	// status 0 and an empty line.
	err := (&Client{Pane: "%999"}).Alive(ctx)
	if !errors.Is(err, ErrNotInTmux) || !strings.Contains(err.Error(), "tmux pane %999 not found") {
		t.Errorf("Alive(%%999) = %v, want pane not found", err)
	}

	s.tmux("kill-session", "-t", "proj")
	if err := c.Alive(ctx); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive after kill-session = %v, want ErrNotInTmux", err)
	}

	s.tmux("kill-server")
	err = c.Alive(ctx)
	if !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive after kill-server = %v, want ErrNotInTmux", err)
	}
	var re *RunError
	if !errors.As(err, &re) || re.Args[0] != "display-message" {
		t.Errorf("Alive after kill-server = %v, want the failed command's RunError", err)
	}
}

func TestAliveLastSessionKilled(t *testing.T) {
	s, alice := startServer(t)
	// Killing the only session makes the server exit too.
	s.tmux("kill-session", "-t", "proj")
	if err := (&Client{Pane: alice}).Alive(context.Background()); !errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive = %v, want ErrNotInTmux", err)
	}
}

// TestAliveServerEnded: a server whose process has ended is gone, told by
// the system without a tmux command (the binary here does not exist).
func TestAliveServerEnded(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	c := &Client{Bin: filepath.Join(t.TempDir(), "tmux"), Pane: "%1", ServerPID: pid}
	if err := c.Alive(context.Background()); !errors.Is(err, ErrNotInTmux) || !strings.Contains(err.Error(), "tmux server "+pid+" is gone") {
		t.Errorf("Alive with an ended server = %v, want the server gone", err)
	}
}

func TestAliveBadPane(t *testing.T) {
	// No tmux is needed: the pane id is refused before any command runs.
	for _, pane := range []string{"", "alice", "@1"} {
		if err := (&Client{Pane: pane}).Alive(context.Background()); !errors.Is(err, ErrNotInTmux) {
			t.Errorf("Alive with pane %q = %v, want ErrNotInTmux", pane, err)
		}
	}
}

func TestTypeTargetsOnlyThePane(t *testing.T) {
	s, alice := startServer(t)
	panes := map[string]string{"alice": alice}
	for _, name := range []string{"7", "-dash", "my win", "my", "a:b"} {
		panes[name] = s.window(name, "")
	}
	// tmux would read "-t 7" as this window's index, not as the window "7".
	panes["x:y"] = s.window("x:y", "7")
	if got := s.tmux("display-message", "-p", "-t", panes["x:y"], "#{window_index}"); got != "7" {
		t.Fatalf("x:y has index %s, want 7", got)
	}

	c := &Client{}
	ctx := context.Background()
	for _, target := range []string{"7", "-dash", "my", "a:b"} {
		text := "mail for " + target
		if err := c.Type(ctx, panes[target], text); err != nil {
			t.Fatalf("Type into %q: %v", target, err)
		}
		s.waitCount(panes[target], text, 2)
		for name, pane := range panes {
			if name != target && s.count(pane, text) != 0 {
				t.Errorf("text for %q also reached window %q", target, name)
			}
		}
	}
}

func TestTypeIsLiteral(t *testing.T) {
	s, alice := startServer(t)
	c := &Client{}
	for _, text := range []string{
		"-R hi; Enter C-c x",
		"ends with a semicolon;",
		`ends with an escaped one\;`,
		";",
		"--",
		"#{pane_id} $HOME ~ {",
		"héllo ✉ 世界",
	} {
		if err := c.Type(context.Background(), alice, text); err != nil {
			t.Fatalf("Type(%q): %v", text, err)
		}
		s.waitCount(alice, text, 2)
	}
}

func TestTypeEnterDelay(t *testing.T) {
	s, alice := startServer(t)
	c := &Client{EnterDelay: 50 * time.Millisecond}
	start := time.Now()
	if err := c.Type(context.Background(), alice, "after a pause"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Type took %v, less than its 50ms Enter delay", d)
	}
	s.waitCount(alice, "after a pause", 2)
}

// A ring cut off between its text and its Enter would leave the text in the
// agent's prompt, to be sent with whatever is typed there next. When ctx ends
// after the text is typed, Type still presses Enter: after the rest of a short
// pause, or at most lateEnterDelay after ctx ended when the pause is long.
func TestTypeFinishesWhenContextEnds(t *testing.T) {
	for _, tc := range []struct {
		delay    time.Duration
		min, max time.Duration // how long Type may take after ctx ends
	}{
		{delay: 700 * time.Millisecond, min: 300 * time.Millisecond, max: 700*time.Millisecond + keyTimeout},
		{delay: time.Hour, min: lateEnterDelay, max: lateEnterDelay + keyTimeout},
	} {
		t.Run(tc.delay.String(), func(t *testing.T) {
			s, alice := startServer(t)
			c := &Client{EnterDelay: tc.delay}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const text = "still entered"
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- c.Type(ctx, alice, text) }()
			// The terminal echoes the text as it is typed; cat writes it
			// back only once Enter arrives.
			s.waitCount(alice, text, 1)
			if time.Since(start) > tc.delay/2 {
				t.Skip("typing took too long for the cancel to fall in the pause")
			}
			cancel()
			canceled := time.Now()
			if err := <-done; err != nil {
				t.Fatalf("Type = %v, want nil: the Enter was still to be pressed", err)
			}
			if d := time.Since(canceled); d < tc.min || d > tc.max {
				t.Errorf("Type returned %v after its context ended, want between %v and %v", d, tc.min, tc.max)
			}
			s.waitCount(alice, text, 2)
		})
	}
}

// A ring stopped before it starts types nothing.
func TestTypeTypesNothingAfterContextEnds(t *testing.T) {
	s, alice := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := (&Client{}).Type(ctx, alice, "never typed")
	var re *RunError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || re.Args[0] != "send-keys" {
		t.Errorf("Type = %v, want the send-keys command's RunError for context.Canceled", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := s.count(alice, "never typed"); n != 0 {
		t.Errorf("text shown %d times, want 0", n)
	}
}

func TestTypeErrors(t *testing.T) {
	startServer(t)
	c := &Client{}
	for _, pane := range []string{"", "alice", "@0", "7", "%1 ", "-t"} {
		if err := c.Type(context.Background(), pane, "x"); err == nil || !strings.Contains(err.Error(), "not a pane id") {
			t.Errorf("Type into %q: err = %v, want a refusal", pane, err)
		}
	}
	err := c.Type(context.Background(), "%999", "x")
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(re.Stderr, "can't find pane") {
		t.Errorf("Type into %%999: err = %v, want a RunError saying tmux can't find the pane", err)
	}
}

func TestFromEnvRealPane(t *testing.T) {
	_, alice := startServer(t)
	t.Setenv("TMUX_PANE", alice)
	c, err := FromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Alive(context.Background()); err != nil {
		t.Errorf("Alive: %v", err)
	}
	got, err := c.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Self.Name != "alice" || got.Self.Pane != alice {
		t.Errorf("Self = %#v", got.Self)
	}
}

// TestStoppedServer stops the tmux server with SIGSTOP: a tmux client then
// waits for it forever, and leaves its output pipe open in the server when
// killed. Every query must still give up within the query timeout, with an
// error that says so, on its own process and on the control connection.
func TestStoppedServer(t *testing.T) {
	s, pane := startServer(t)
	pid, err := strconv.Atoi(s.tmux("display-message", "-p", "#{pid}"))
	if err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { queryTimeout = d }(queryTimeout)
	queryTimeout = 300 * time.Millisecond
	withControl := &Client{Pane: pane, Control: &Control{}}
	defer withControl.Control.Close()
	if _, err := withControl.Session(context.Background()); err != nil {
		t.Fatal(err) // opens the control connection while the server runs
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Let the server go on before the cleanup kills it.
	defer syscall.Kill(pid, syscall.SIGCONT)

	// The control connection's own wait may come first (controlTimeout);
	// then the process fallback has what is left of the query timeout.
	limit := controlTimeout + queryTimeout + pipeWait + time.Second
	for _, c := range []*Client{{Pane: pane}, withControl} {
		done := make(chan error, 1)
		go func() {
			_, err := c.Session(context.Background())
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, errNoAnswer) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotInTmux) {
				t.Errorf("Session (control %v) with the server stopped = %v, want errNoAnswer", c.Control != nil, err)
			}
		case <-time.After(limit):
			t.Fatalf("Session (control %v) still waits after %v with the server stopped", c.Control != nil, limit)
		}
	}
}

// TestServerRestarted kills the caller's tmux server and starts another on
// the same socket, whose first pane has the caller's pane id: with
// ServerPID set, as $TMUX gives it, the caller's pane counts as gone
// whether asked through processes or a control connection, instead of
// being taken for that other window.
func TestServerRestarted(t *testing.T) {
	ctx := context.Background()
	s, alice := startServer(t)
	pid := s.tmux("display-message", "-p", "#{pid}")
	k := &Control{}
	defer k.Close()
	for _, c := range []*Client{{Pane: alice, ServerPID: pid}, {Pane: alice, ServerPID: pid, Control: k}} {
		if err := c.Alive(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Session(ctx); err != nil {
			t.Fatal(err)
		}
	}

	s.tmux("kill-server")
	// The old server may take a moment to let go of its socket.
	var bob string
	for i := 0; ; i++ {
		out, err := s.command("-f", "/dev/null", "new-session", "-d", "-s", "work", "-n", "bob", "-P", "-F", "#{pane_id}", "cat").Output()
		if err == nil {
			bob = strings.TrimSuffix(string(out), "\n")
			break
		}
		if i == 50 {
			t.Fatalf("starting a new server on the socket: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bob != alice {
		t.Fatalf("the new server's first pane is %s, not %s as the test needs", bob, alice)
	}
	for _, c := range []*Client{{Pane: alice, ServerPID: pid}, {Pane: alice, ServerPID: pid, Control: k}} {
		if err := c.Alive(ctx); !errors.Is(err, ErrNotInTmux) || !strings.Contains(fmt.Sprint(err), "tmux server "+pid+" is gone") {
			t.Errorf("Alive (control %v) after the restart = %v, want the server gone", c.Control != nil, err)
		}
		if sess, err := c.Session(ctx); !errors.Is(err, ErrNotInTmux) {
			t.Errorf("Session (control %v) after the restart = %+v, %v; want the server gone", c.Control != nil, sess, err)
		}
	}
	// Without ServerPID, the pane id is all there is to go by.
	if err := (&Client{Pane: alice}).Alive(ctx); err != nil {
		t.Errorf("Alive without ServerPID = %v, want nil", err)
	}
}
