package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/tmux"
	"agentmail/tools"
	"agentmail/web"
)

// sessionTerm is a tmux session of fixed windows.
type sessionTerm tmux.Session

func (t *sessionTerm) Session(context.Context) (*tmux.Session, error) {
	s := tmux.Session(*t)
	return &s, nil
}

// fixture is a page served for the person "human" beside the agents
// alice and bob, and the store behind it.
type fixture struct {
	t     *testing.T
	st    *mailbox.Store
	srv   *web.Server
	ts    *httptest.Server
	code  string
	alice *tools.Service
}

func newFixture(t *testing.T) *fixture {
	st := mailbox.New(t.TempDir())
	if err := st.AddPerson("human"); err != nil {
		t.Fatal(err)
	}
	term := &sessionTerm{Self: tmux.Window{ID: "@0", Name: "alice", Pane: "%0"},
		Windows: []tmux.Window{{ID: "@0", Name: "alice", Pane: "%0"}, {ID: "@1", Name: "bob", Pane: "%1"}}}
	svc := &tools.Service{Store: st, Term: tools.AsPerson(term, "human")}
	ts := httptest.NewUnstartedServer(nil)
	srv, err := web.New(web.Options{Service: svc, Person: "human", Addr: ts.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(func() { srv.Close(); ts.Close() })
	return &fixture{t: t, st: st, srv: srv, ts: ts, code: srv.Code(), alice: &tools.Service{Store: st, Term: term}}
}

// client returns an HTTP client that follows no redirect and keeps
// cookies, logged in with the code.
func (f *fixture) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(f.ts.URL + "/?code=" + f.code)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("login: %s", resp.Status)
	}
	return c
}

func (f *fixture) do(c *http.Client, method, path, body string, header ...string) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Origin", f.ts.URL)
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestAuth(t *testing.T) {
	f := newFixture(t)
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/", "/static/app.js", "/api/agents", "/api/messages", "/api/events", "/?code=wrong"} {
		if resp, _ := f.do(anon, "GET", path, ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the cookie: %s, want 401", path, resp.Status)
		}
	}
	resp, _ := f.do(anon, "GET", "/?code="+f.code, "")
	cookie := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("the code: %s to %q, want 303 to /", resp.Status, resp.Header.Get("Location"))
	}
	for _, want := range []string{web.CookieName + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie %q lacks %q", cookie, want)
		}
	}
	if resp, _ := f.do(anon, "GET", "/?code="+f.code, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the code used again: %s, want 401", resp.Status)
	}
	if resp, _ := f.do(anon, "GET", "/api/agents", "", "Cookie", web.CookieName+"=forged"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %s, want 401", resp.Status)
	}
	c := &http.Client{}
	cookieHeader := strings.Split(cookie, ";")[0]
	resp, body := f.do(c, "GET", "/", "", "Cookie", cookieHeader)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="messages"`) {
		t.Errorf("the page with the cookie: %s", resp.Status)
	}
	if got := resp.Header.Get("Content-Security-Policy"); got != web.CSP || !strings.Contains(got, "script-src 'self'") {
		t.Errorf("CSP = %q", got)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", got)
	}
	addr := f.ts.Listener.Addr().String()
	port := addr[strings.LastIndexByte(addr, ':'):]
	for _, c := range []struct {
		name   string
		method string
		header []string
		want   int
	}{
		{"another Origin", "GET", []string{"Origin", "http://evil.example"}, 403},
		{"a POST from another Origin", "POST", []string{"Origin", "http://evil.example"}, 403},
		{"a POST without Origin", "POST", []string{"Origin", ""}, 403},
		{"a rebound Host", "GET", []string{"Host", "evil.example" + port}, 403},
		{"another port", "GET", []string{"Host", "127.0.0.1:1"}, 403},
		{"localhost", "GET", []string{"Host", "localhost" + port}, 200},
	} {
		path := "/api/agents"
		if c.method == "POST" {
			path = "/api/send"
		}
		h := append([]string{"Cookie", cookieHeader}, c.header...)
		if resp, _ := f.do(&http.Client{}, c.method, path, `{"to":["bob"],"message":"x"}`, h...); resp.StatusCode != c.want {
			t.Errorf("%s: %s, want %d", c.name, resp.Status, c.want)
		}
	}
}

func TestAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.client()
	evil := "<img src=x onerror=alert(1)> and <script>alert(2)</script>"
	m, err := f.alice.Send(ctx, "human", evil, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := f.do(c, "GET", "/api/agents", "")
	if resp.StatusCode != 200 || !strings.Contains(body, `{"name":"human","kind":"person","you":true,"unread":1,`) ||
		!strings.Contains(body, `{"name":"bob","kind":"window","unread":0,"wake":"none"}`) {
		t.Errorf("agents: %s %s", resp.Status, body)
	}
	_, body = f.do(c, "GET", "/api/messages?agent=human", "")
	if strings.Contains(body, "<") {
		t.Errorf("the JSON holds a raw <: %s", body)
	}
	var page tools.Page
	if err := json.Unmarshal([]byte(body), &page); err != nil || len(page.Messages) != 1 || page.Messages[0].FirstLine != evil {
		t.Fatalf("messages: %v %s", err, body)
	}
	resp, body = f.do(c, "GET", "/api/thread?id="+url.QueryEscape(m.ID), "")
	th, _ := f.alice.Thread(ctx, m.ID)
	if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || body != tools.ThreadText(th) {
		t.Errorf("thread: %s\n%s", resp.Header.Get("Content-Type"), body)
	}
	if resp, _ := f.do(c, "GET", "/api/thread?id=nope", ""); resp.StatusCode != 404 {
		t.Errorf("unknown thread: %s", resp.Status)
	}
	// The person answers alice, then writes to bob, and reads alice's.
	resp, body = f.do(c, "POST", "/api/send", `{"to":["alice"],"message":"seen","reply_to":"`+m.ID+`"}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"ids":[`) {
		t.Fatalf("send: %s %s", resp.Status, body)
	}
	if resp, body := f.do(c, "POST", "/api/send", `{"to":["nobody"],"message":"x"}`); resp.StatusCode != 400 || !strings.Contains(body, "recipient not found") {
		t.Errorf("send to nobody: %s %s", resp.Status, body)
	}
	if resp, body := f.do(c, "POST", "/api/read", `{"thread_id":"`+m.ID+`"}`); resp.StatusCode != 200 || body != "{\"marked\":1}\n" {
		t.Errorf("read: %s %s", resp.Status, body)
	}
	got, err := f.alice.Receive(ctx, 0, nil)
	if err != nil || got == nil || got.From != "human" || got.Thread() != m.ID || got.Message != "seen" {
		t.Errorf("alice received %+v, %v", got, err)
	}
	_, body = f.do(c, "GET", "/api/messages?limit=1", "")
	if !strings.Contains(body, `"next":"`) || !strings.Contains(body, `"state":"read"`) {
		t.Errorf("first page of one: %s", body)
	}
}

// TestEvents has the page's event stream tell of a message stored by
// another process's way of storing it, the mailbox, within a second.
func TestEvents(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/api/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- name
			}
		}
		close(events)
	}()
	if ev := <-events; ev != "ready" {
		t.Fatalf("first event %q, want ready", ev)
	}
	sent := time.Now()
	if _, err := f.alice.Send(context.Background(), "bob", "hello", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev != "change" {
			t.Errorf("event %q, want change", ev)
		}
		t.Logf("change event %v after the send", time.Since(sent))
	case <-time.After(time.Second):
		t.Fatal("no event within 1s of a new message")
	}
}

// TestPageText checks the page's files: no way in them to put text in
// the page as HTML, no inline script or handler, and under 100 KB.
func TestPageText(t *testing.T) {
	dir := "static"
	total := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		total += len(b)
		text := string(b)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s uses %s: put text in the page with textContent", path, bad)
			}
		}
		if strings.HasSuffix(path, ".html") {
			if regexp.MustCompile(`<script[^>]*>[^<]`).MatchString(text) || regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(text) {
				t.Errorf("%s has inline script, which the CSP refuses", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total >= 100<<10 {
		t.Errorf("the page weighs %d bytes, over 100 KB", total)
	}
	t.Logf("page weight: %d bytes", total)
}

// TestHostEverywhere checks the Host of a server bound to every interface
// (with TLS): any address literal with its port passes on to the cookie
// check, a name does not, and nor does another port.
func TestHostEverywhere(t *testing.T) {
	svc := &tools.Service{Store: mailbox.New(t.TempDir())}
	srv, err := web.New(web.Options{Service: svc, Person: "human", Addr: "0.0.0.0:8443", Host: "0.0.0.0", TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{
		"192.0.2.7:8443":     http.StatusUnauthorized,
		"[2001:db8::1]:8443": http.StatusUnauthorized,
		"evil.example:8443":  http.StatusForbidden,
		"192.0.2.7:9":        http.StatusForbidden,
	} {
		req := httptest.NewRequest("GET", "https://"+host+"/api/agents", nil)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}
