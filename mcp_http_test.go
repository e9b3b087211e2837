package main

import (
	"agentmail/internal/mcptest"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdHTTP sends one request to an HTTP server started with mcpstart and
// prints the status, the headers that matter and the body:
//
//	http [-H 'Name: value']... [-pane %N] [-agent NAME] [-tmux $TMUX] [-tokenfile FILE] [-cacert FILE] [-size N] name METHOD [body]
//
// It sends by default what a well-behaved client sends: the bearer token
// from $AGENTMAIL_TOKEN, Accept for JSON and events, Content-Type JSON,
// the session id from $SESSION, and, for a message whose _meta names a
// protocol revision, the standard headers of 2026-07-28 that clients
// derive from it: MCP-Protocol-Version, Mcp-Method, and Mcp-Name for
// tools/call, prompts/get and resources/read. -H replaces a default or
// derived header, or removes it when given an empty value ('Host: x' sets
// the Host). -pane and -agent name the calling agent, -tmux its tmux
// server. -tokenfile sends the token a file holds. -size pads a ping
// request to N bytes of body. A session id in the answer is stored in
// $SESSION.
func cmdHTTP(ts *testscript.TestScript, neg bool, args []string) {
	hdr := http.Header{}
	if tok := ts.Getenv("AGENTMAIL_TOKEN"); tok != "" {
		hdr.Set("Authorization", "Bearer "+tok)
	}
	hdr.Set("Accept", "application/json, text/event-stream")
	hdr.Set("Content-Type", "application/json")
	if s := ts.Getenv("SESSION"); s != "" {
		hdr.Set("Mcp-Session-Id", s)
	}
	size := -1
	cacert := ""
	named := map[string]bool{} // the headers -H set or removed
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-H":
			k, v, ok := strings.Cut(args[1], ":")
			if !ok {
				ts.Fatalf("http: -H %q: want 'Name: value'", args[1])
			}
			named[http.CanonicalHeaderKey(k)] = true
			if v = strings.TrimSpace(v); v == "" {
				hdr.Del(k)
			} else {
				hdr.Set(k, v)
			}
		case "-pane":
			hdr.Set("Agentmail-Pane", args[1])
		case "-agent":
			hdr.Set("Agentmail-Agent", args[1])
		case "-tmux":
			hdr.Set("Agentmail-Tmux", args[1])
		case "-tokenfile":
			hdr.Set("Authorization", "Bearer "+strings.TrimSpace(ts.ReadFile(args[1])))
		case "-cacert":
			cacert = ts.ReadFile(args[1])
		case "-size":
			n, err := strconv.Atoi(args[1])
			ts.Check(err)
			size = n
		default:
			ts.Fatalf("http: unknown flag %s", args[0])
		}
		args = args[2:]
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: http [-H 'Name: value']... [-pane %%N] [-agent NAME] [-tmux $TMUX] [-tokenfile FILE] [-cacert FILE] [-size N] name METHOD [body]")
	}
	var body []byte
	if len(args) == 3 {
		body = []byte(args[2])
	}
	if size >= 0 {
		head := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`
		pad := size - len(head) - len(`"}}`)
		body = []byte(head + strings.Repeat("x", max(pad, 0)) + `"}}`)
	}
	for k, v := range mcptest.StandardHeaders(body) {
		if !named[k] {
			hdr[k] = v
		}
	}
	req, err := http.NewRequest(args[1], serverURL(ts, args[0]), bytes.NewReader(body))
	ts.Check(err)
	for k, v := range hdr {
		if strings.EqualFold(k, "Host") {
			req.Host = v[0]
			continue
		}
		req.Header[k] = v
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if cacert != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cacert)) {
			ts.Fatalf("http: -cacert: no certificate")
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	resp, err := client.Do(req)
	if err != nil {
		ts.Fatalf("http: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	ts.Check(err)
	w := ts.Stdout()
	io.WriteString(w, "HTTP "+strconv.Itoa(resp.StatusCode)+"\n")
	for _, k := range []string{"Content-Type", "Mcp-Session-Id", "Www-Authenticate", "Allow", "Access-Control-Allow-Origin"} {
		if v := resp.Header.Get(k); v != "" {
			io.WriteString(w, k+": "+v+"\n")
		}
	}
	io.WriteString(w, "\n")
	w.Write(out)
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		ts.Setenv("SESSION", s)
	}
	if neg != (resp.StatusCode >= 300) {
		ts.Fatalf("http: status %d", resp.StatusCode)
	}
}

var urlLine = regexp.MustCompile(`at (https?://\S+)`)

// cmdServerURL sets a variable to the URL that a server started with
// mcpstart serves, once it has printed it: serverurl VAR name.
func cmdServerURL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serverurl VAR name")
	}
	ts.Setenv(args[0], serverURL(ts, args[1]))
}

// serverURL waits for the URL that the server name prints on stderr.
func serverURL(ts *testscript.TestScript, name string) string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(ts.MkAbs(name + ".err"))
		if m := urlLine.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if time.Now().After(deadline) {
			ts.Fatalf("http: %s printed no URL within 5s; its stderr:\n%s", name, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListenAddr checks that --host takes an IPv6 literal with or without
// the brackets of a URL.
func TestListenAddr(t *testing.T) {
	for host, want := range map[string]string{"[::1]": "[::1]:3000", "::1": "[::1]:3000", "127.0.0.1": "127.0.0.1:3000", "localhost": "localhost:3000"} {
		if got := listenAddr(host, 3000); got != want {
			t.Errorf("listenAddr(%q) = %q, want %q", host, got, want)
		}
	}
}
