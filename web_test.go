package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// webClients holds, per script and server name, the HTTP client logged
// in to an agentmail web that start began, with the server's base URL.
var webClients = struct {
	sync.Mutex
	m map[*testscript.TestScript]map[string]*webClient
}{m: map[*testscript.TestScript]map[string]*webClient{}}

type webClient struct {
	base string
	c    *http.Client
}

var webURL = regexp.MustCompile(`(https?://[^/\s]+)/\?code=[0-9a-f]+`)

// cmdWeb sends a request to an "agentmail web" started as name:
// web [-anon] name METHOD path [body]. The first request logs in with the
// code the server printed on name.err; -anon sends no cookie. It prints
// "HTTP <status>" and the body on stdout. A POST carries the page's own
// Origin and a JSON Content-Type, as the page's script sends them.
func cmdWeb(ts *testscript.TestScript, neg bool, args []string) {
	anon := len(args) > 0 && args[0] == "-anon"
	if anon {
		args = args[1:]
	}
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: web [-anon] name METHOD path [body]")
	}
	wc := webLogin(ts, args[0])
	var body io.Reader
	if len(args) == 4 {
		body = strings.NewReader(args[3])
	}
	req, err := http.NewRequest(args[1], wc.base+args[2], body)
	ts.Check(err)
	if args[1] == http.MethodPost {
		req.Header.Set("Origin", wc.base)
		req.Header.Set("Content-Type", "application/json")
	}
	c := wc.c
	if anon {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	ts.Stdout().Write([]byte("HTTP " + resp.Status[:3] + "\n" + string(b)))
}

// webLogin returns the client logged in to server name, logging in with
// the code of name.err once it is printed.
func webLogin(ts *testscript.TestScript, name string) *webClient {
	webClients.Lock()
	defer webClients.Unlock()
	if wc := webClients.m[ts][name]; wc != nil {
		return wc
	}
	deadline := time.Now().Add(10 * time.Second)
	var m []string
	for m == nil {
		b, _ := os.ReadFile(ts.MkAbs(name + ".err"))
		if m = webURL.FindStringSubmatch(string(b)); m == nil {
			if time.Now().After(deadline) {
				ts.Fatalf("web: no address in %s.err after 10s: %s", name, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := c.Get(m[0])
	ts.Check(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("web: logging in at %s: %s", m[0], resp.Status)
	}
	wc := &webClient{base: m[1], c: c}
	if webClients.m[ts] == nil {
		webClients.m[ts] = map[string]*webClient{}
		ts.Defer(func() {
			webClients.Lock()
			delete(webClients.m, ts)
			webClients.Unlock()
		})
	}
	webClients.m[ts][name] = wc
	return wc
}
