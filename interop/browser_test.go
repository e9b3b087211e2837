package interop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestBrowser drives the page of "agentmail web" in headless Chromium, as
// the person would: the server runs in a window of a tmux session whose
// agents are alice and bob, and the page, opened with the printed code,
// lists them, shows a message alice sends from the command line within a
// second without a reload, opens its thread, and writes to alice, who
// receives it. Bodies that are markup stay text and run no script, and a
// browser without the code gets 401. Screenshots of the main views go to
// $AGENTMAIL_SCREENSHOTS, or screenshots/ here.
func TestBrowser(t *testing.T) {
	bin := agentmailBin(t)
	exe := chromiumPath(t)
	tm := startTmux(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The person's own window is not an agent.
	if err := os.WriteFile(filepath.Join(root, ".agentmailignore"), []byte("web\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	login := startWeb(t, bin, root, tm)
	base := login[:strings.Index(login, "/?code=")]
	shots := screenshotDir(t)
	b := newBrowser(t, exe)
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot(t, shots, "failed")
		}
	})

	// Each step builds on the one before, so the first to fail ends the test.
	if !t.Run("agents", func(t *testing.T) {
		resp := run(t, b.ctx, chromedp.NavigateResponse(login))
		if resp.Status != 200 || resp.URL != base+"/" {
			t.Fatalf("opening %s: %d at %s, want 200 at %s/", login, resp.Status, resp.URL, base)
		}
		// The page fills its lists once its script has run, and again when
		// its event stream is live.
		names := run(t, b.ctx, chromedp.Poll[[]string](`document.querySelector("#live.on") &&
			document.querySelector('#agents li.agent[data-name="bob"]') &&
			[...document.querySelectorAll("#agents li.agent")].map((li) => li.dataset.name)`,
			chromedp.WithPollingInterval(10*time.Millisecond)))
		slices.Sort(names)
		if want := []string{"alice", "bob", "human"}; !slices.Equal(names, want) {
			t.Errorf("agents on the page: %q, want %q", names, want)
		}
		if who := run(t, b.ctx, chromedp.TextContent(chromedp.ID("person"))); who != "human" {
			t.Errorf("#person: %q, want human", who)
		}
		// The session cookie is HttpOnly: the page's script cannot read it.
		if c := run(t, b.ctx, chromedp.Evaluate[string](`document.cookie`)); c != "" {
			t.Errorf("document.cookie: %q, want none", c)
		}
	}) {
		return
	}

	var id string
	body := "the build is green at " + strconv.FormatInt(time.Now().UnixNano(), 36)
	if !t.Run("live", func(t *testing.T) {
		// A reload would clear this mark.
		run(t, b.ctx, chromedp.Evaluate[int](`window.agentmailMark = 1`))
		id = send(t, bin, root, tm, tm.alice, "bob", body)
		sent := time.Now()
		m, err := b.message(id, time.Second)
		if d := time.Since(sent); err != nil || d > time.Second {
			t.Fatalf("message %s not on the page %v after the send returned (want 1s): %v", id, d.Round(time.Millisecond), err)
		}
		t.Logf("on the page %v after the send returned", time.Since(sent).Round(time.Millisecond))
		if mark := run(t, b.ctx, chromedp.Evaluate[int](`window.agentmailMark || 0`)); mark != 1 {
			t.Error("the page was reloaded")
		}
		if m.Route != "alice → bob" || m.Line != body {
			t.Errorf("listed as %q %q, want %q %q", m.Route, m.Line, "alice → bob", body)
		}
		b.screenshot(t, shots, "1-agents-messages")
	}) {
		return
	}

	if !t.Run("thread", func(t *testing.T) {
		b.open(t, id)
		text := waitText(t, b.ctx, "#thread-text", body)
		for _, want := range []string{id, "alice", "bob", body} {
			if !strings.Contains(text, want) {
				t.Errorf("the thread lacks %q:\n%s", want, text)
			}
		}
		b.screenshot(t, shots, "2-thread")
	}) {
		return
	}

	if !t.Run("write", func(t *testing.T) {
		msg := "please look at the failing test, from the page"
		do(t, b.ctx, chromedp.Click(chromedp.ID("thread-close")), chromedp.WaitNotVisible(chromedp.ID("thread")),
			chromedp.SetValue(chromedp.ID("compose-to"), "alice"),
			chromedp.SendKeys(chromedp.ID("compose-body"), msg))
		b.screenshot(t, shots, "3-write")
		do(t, b.ctx, chromedp.Click(chromedp.ID("compose-submit")))
		status := waitText(t, b.ctx, "#compose-status", "Message #")
		if !strings.Contains(status, "sent") {
			t.Errorf("#compose-status: %q", status)
		}
		out := agentmail(t, bin, root, tm, tm.alice, "receive")
		if !strings.HasPrefix(out, "From: human\n") || !strings.Contains(out, "\n\n"+msg) {
			t.Errorf("alice's receive:\n%s\nwant the message from human", out)
		}
	}) {
		return
	}

	if !t.Run("markup", func(t *testing.T) {
		bodies := []string{`<img src=x onerror=alert(1)>`, `<script>window.__pwned=1</script>`}
		var ids []string
		for _, body := range bodies {
			ids = append(ids, send(t, bin, root, tm, tm.alice, "bob", body))
		}
		for i, id := range ids {
			m, err := b.message(id, 10*time.Second)
			if err != nil {
				t.Fatalf("message %s not on the page: %v", id, err)
			}
			if m.Line != bodies[i] {
				t.Errorf("first line %q, want the literal %q", m.Line, bodies[i])
			}
		}
		b.open(t, ids[0])
		waitText(t, b.ctx, "#thread-text", bodies[0])
		b.screenshot(t, shots, "4-markup")
		checks := []struct{ what, expr string }{
			{"an <img> element with src x", `document.querySelectorAll('img[src="x"]').length > 0`},
			{"a <script> element outside the head", `document.querySelectorAll("body script").length > 0`},
			{"an element in a first line or the thread", `document.querySelectorAll("#messages .line *, #thread-text *").length > 0`},
			{"the script of a body ran", `window.__pwned !== undefined`},
		}
		for _, c := range checks {
			if run(t, b.ctx, chromedp.Evaluate[bool](c.expr)) {
				t.Errorf("the page has %s", c.what)
			}
		}
		b.checkQuiet(t)
	}) {
		return
	}

	t.Run("no cookie", func(t *testing.T) {
		// A fresh browser context has no cookie; the code is used up.
		ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
		defer cancel()
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("opening a tab in a new browser context: %v", err)
		}
		for _, url := range []string{base + "/", base + "/static/app.js", base + "/api/messages", login} {
			resp := run(t, ctx, chromedp.NavigateResponse(url))
			if resp.Status != 401 {
				t.Errorf("GET %s without the cookie: %d, want 401", url, resp.Status)
			}
		}
	})
}

// startWeb runs "agentmail web" in a new window "web" of tm's session, in
// root, stops it with SIGTERM when the test ends, and returns the address
// with the one-time code that it prints.
func startWeb(t *testing.T, bin, root string, tm *tmuxServer) string {
	t.Helper()
	stderr := filepath.Join(t.TempDir(), "stderr")
	// exec makes the pane's process the server, so that its pid is known.
	pid := tm.run(t, "new-window", "-d", "-t", "proj:", "-n", "web", "-P", "-F", "#{pane_pid}",
		"cd '"+root+"' && exec '"+bin+"' web 2>'"+stderr+"'")
	if n, err := strconv.Atoi(pid); err == nil {
		t.Cleanup(func() { syscall.Kill(n, syscall.SIGTERM) })
	}
	re := regexp.MustCompile(`serving the page of human at (http://127\.0\.0\.1:[0-9]+/\?code=[0-9a-f]+)\n`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(stderr)
		if m := re.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentmail web printed no address: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chromiumPath finds Chromium. Without it the test is skipped, except
// under CI=true, where it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is required under CI=true but is not installed (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium)")
	return ""
}

// browser is one headless Chromium with one tab, and what the tab's
// scripts did that a test should know of.
type browser struct {
	ctx context.Context

	mu    sync.Mutex
	noise []string // uncaught exceptions, dialogs, blocked scripts
}

// newBrowser starts Chromium with a fresh profile (chromedp makes one in a
// temporary directory and removes it) and closes it when the test ends.
// The machine may have no network: everything that would reach out to one
// on its own is turned off, or it shows up as refused connections.
func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoSandbox, // needed as root, as in a CI container
		chromedp.NoFirstRun,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 800),
		// Without /dev/shm, Chromium keeps its shared memory in files of
		// $TMPDIR, and leaves some behind when it is stopped: they go to
		// the test's own directory.
		chromedp.Env("TMPDIR="+t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{ctx: ctx}
	// Listen starts the browser and opens the tab.
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			if d.Exception != nil && d.Exception.Description != "" {
				b.noise = append(b.noise, "exception: "+d.Exception.Description)
			} else {
				b.noise = append(b.noise, "exception: "+d.Text)
			}
		case *cdplog.EventEntryAdded:
			// A violation of the page's Content-Security-Policy: markup
			// tried to run a script and was stopped.
			if ev.Entry.Source == cdplog.EntrySourceSecurity {
				b.noise = append(b.noise, "blocked: "+ev.Entry.Text)
			}
		case *page.EventJavascriptDialogOpening:
			b.noise = append(b.noise, "dialog: "+string(ev.Type)+" "+ev.Message)
		}
	})
	if err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return b
}

// listed is a message as the page lists it, and where.
type listed struct {
	Route string  `json:"route"`
	Line  string  `json:"line"`
	X     float64 `json:"x"` // the middle of its line in the page
	Y     float64 `json:"y"`
}

// findMessage returns the message id as the page lists it, or null. The
// page builds its list anew on every change, so the test reads an entry
// in one step, never through a node it found before.
const findMessage = `(id) => {
	const li = [...document.querySelectorAll("#messages li.message")].find((li) => li.dataset.id === id);
	if (!li) return null;
	const r = li.getBoundingClientRect();
	return {
		route: li.querySelector(".route").textContent,
		line: li.querySelector(".line").textContent,
		x: r.x + r.width / 2,
		y: r.y + r.height / 2,
	};
}`

// message waits up to timeout for the message id to be listed, checking
// every 10 ms.
func (b *browser) message(id string, timeout time.Duration) (listed, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout+10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.PollFunction[listed](findMessage, chromedp.WithPollingArgs(id),
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
}

// open clicks the listed message id, as the person would, and waits for
// its thread to show. The page keeps its entries from one refresh to the
// next, so a click lands whenever its press and release fall; but one
// aimed just before a newer message is listed hits the entry that moved
// into its place. The person then clicks again, and so does open, twice
// at most.
func (b *browser) open(t *testing.T, id string) {
	t.Helper()
	for try := 1; ; try++ {
		m, err := b.message(id, 10*time.Second)
		if err != nil {
			t.Fatalf("message %s not on the page: %v", id, err)
		}
		do(t, b.ctx, chromedp.MouseClickXY(m.X, m.Y))
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		_, err = chromedp.Run(ctx, chromedp.PollFunction[bool](
			`(id) => !document.getElementById("thread").hidden && document.getElementById("thread-text").textContent.includes(id)`,
			chromedp.WithPollingArgs(id), chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(2*time.Second)))
		cancel()
		switch {
		case err == nil:
			return
		case try == 3:
			t.Fatalf("clicked message %s %d times, and its thread did not open: %v", id, try, err)
		}
		t.Logf("clicked message %s, and its thread did not open within 2s: clicking again", id)
	}
}

// checkQuiet fails the test if the page threw an exception, opened a
// dialog (alert) or had a script blocked so far.
func (b *browser) checkQuiet(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range b.noise {
		t.Errorf("the page: %s", n)
	}
}

// screenshot saves a PNG of the whole page as dir/name.png. It writes a
// temporary file and renames it, so that tests running at once never leave
// half a picture.
func (b *browser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	png := run(t, b.ctx, chromedp.FullScreenshot(100))
	f, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(png)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name+".png"))
	}
	if err != nil {
		os.Remove(f.Name())
		t.Fatalf("saving a screenshot: %v", err)
	}
}

// screenshotDir is where screenshots go: $AGENTMAIL_SCREENSHOTS, or
// screenshots/ in this directory, which git ignores.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTMAIL_SCREENSHOTS")
	if dir == "" {
		dir = "screenshots"
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatalf("the screenshots' folder: %v", err)
	}
	// A picture of an earlier failure would mislead; one of this run's
	// failures (of -count runs) stays.
	staleOnce.Do(func() { os.Remove(filepath.Join(dir, "failed.png")) })
	return dir
}

var staleOnce sync.Once

// run runs an action in the tab, failing the test after 10 seconds.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// do runs actions in the tab in order, failing the test after 10 seconds.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	run(t, ctx, chromedp.Steps(steps...))
}

// waitText waits until the text of the element sel contains want, and
// returns it.
func waitText(t *testing.T, ctx context.Context, sel, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.PollFunction[string](
		`(sel, want) => { const t = document.querySelector(sel).textContent; return t.includes(want) && t; }`,
		chromedp.WithPollingArgs(sel, want), chromedp.WithPollingInterval(10*time.Millisecond)))
	if err != nil {
		got, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
		t.Fatalf("%s: %q does not contain %q: %v", sel, got, want, err)
	}
	return text
}

var sentIDRE = regexp.MustCompile(`^Message #(\S+) sent`)

// send sends body to name as the agent of pane and returns the message's id.
func send(t *testing.T, bin, root string, tm *tmuxServer, pane, name, body string) string {
	t.Helper()
	out := agentmail(t, bin, root, tm, pane, "send", "-r", name, "-m", body)
	m := sentIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("send: %q", out)
	}
	return m[1]
}

// agentmail runs the command as the agent of pane and returns its output.
func agentmail(t *testing.T, bin, root string, tm *tmuxServer, pane string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Env = paneEnv(tm, pane)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = errors.New(err.Error() + ": " + string(ee.Stderr))
		}
		t.Fatalf("agentmail %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
