package interop

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKHTTP connects the official Go SDK client to one "agentmail mcp
// --transport http" server, and to one "--transport sse" server, as alice
// (named by her pane) and as bob (named by his window), each with the
// server's bearer token: it lists the tools and calls all four, and bob
// receives what alice sent. Streamable HTTP is spoken at each revision the
// SDK offers; HTTP+SSE exists only at 2024-11-05.
func TestGoSDKHTTP(t *testing.T) {
	bin := agentmailBin(t)
	tm := startTmux(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Both servers start first: each has a window of the session, which
	// list-recipients lists beside the agents', but for the server's own:
	// the server is its only command, so it is no agent.
	type run struct {
		srv      *httpServer
		versions []string
	}
	runs := []run{
		{startHTTPServer(t, bin, root, tm, "http"), versions},
		{startHTTPServer(t, bin, root, tm, "sse"), []string{"2024-11-05"}},
	}
	for _, r := range runs {
		srv := r.srv
		t.Run(srv.transport, func(t *testing.T) {
			for _, v := range r.versions {
				t.Run(v, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					alice := srv.connect(ctx, t, map[string]string{"Agentmail-Pane": tm.alice}, v)
					checkSession(t, alice, v)
					checkTools(ctx, t, alice.cs)
					other := map[string]string{"http": "server-sse", "sse": "server-http"}[srv.transport]
					call(ctx, t, alice.cs, "list-recipients", nil, false,
						"alice [you]\nbob\n"+other,
						`{"recipients":[{"name":"alice","is_current":true},{"name":"bob","is_current":false},`+
							`{"name":"`+other+`","is_current":false}]}`)
					call(ctx, t, alice.cs, "status", map[string]any{"status": "work"}, false,
						"Status set to work", `{"status":"ok"}`)
					call(ctx, t, alice.cs, "send", map[string]any{"recipient": "nobody", "message": "x"}, true,
						"recipient not found", "")

					body := "hello over " + srv.transport + " at " + v + ": ünïcødé ✉"
					res := callTool(ctx, t, alice.cs, "send", map[string]any{"recipient": "bob", "message": body})
					m := sentRE.FindStringSubmatch(onlyText(t, res))
					if res.IsError || m == nil {
						t.Fatalf("send: isError=%v, text %q", res.IsError, onlyText(t, res))
					}
					id := m[1]
					checkStructured(t, "send", res, `{"message_id":`+quote(id)+`}`)
					alice.close(t)
					alice.checkWire(t)

					bob := srv.connect(ctx, t, map[string]string{"Agentmail-Agent": "bob"}, v)
					call(ctx, t, bob.cs, "receive", nil, false,
						"From: alice\nID: "+id+"\n\n"+body,
						`{"from":"alice","id":`+quote(id)+`,"message":`+quote(body)+`}`)
					call(ctx, t, bob.cs, "receive", nil, false,
						"No unread messages", `{"status":"No unread messages"}`)
					bob.close(t)
					bob.checkWire(t)
				})
			}
		})
	}
}

// httpServer is an "agentmail mcp" serving HTTP in a window of the test's
// tmux server.
type httpServer struct {
	transport string
	url       string // the endpoint it printed
	token     string // the token it made in .agentmail/http-token
	stderr    string // the file its stderr goes to
}

// startHTTPServer starts "agentmail mcp --transport TRANSPORT --port 0" in
// a new window of tm's session, with the default token (the one it makes
// in root/.agentmail/http-token), and stops it with SIGTERM when the test
// ends.
func startHTTPServer(t *testing.T, bin, root string, tm *tmuxServer, transport string) *httpServer {
	t.Helper()
	s := &httpServer{transport: transport, stderr: filepath.Join(t.TempDir(), "stderr")}
	// exec makes the pane's process the server, so that its pid is known.
	pid := tm.run(t, "new-window", "-d", "-t", "proj:", "-n", "server-"+transport, "-P", "-F", "#{pane_pid}",
		"cd '"+root+"' && exec '"+bin+"' mcp --transport "+transport+" --port 0 2>'"+s.stderr+"'")
	if n, err := strconv.Atoi(pid); err == nil {
		t.Cleanup(func() { syscall.Kill(n, syscall.SIGTERM) })
	}
	re := regexp.MustCompile(`serving .* at (http://127\.0\.0\.1:[0-9]+/[a-z]+)\n`)
	deadline := time.Now().Add(10 * time.Second)
	for s.url == "" {
		b, _ := os.ReadFile(s.stderr)
		if m := re.FindSubmatch(b); m != nil {
			s.url = string(m[1])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s server printed no URL: %s", transport, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(root, ".agentmail", "http-token"))
	if err != nil {
		t.Fatalf("the server's token: %v", err)
	}
	s.token = strings.TrimSpace(string(b))
	return s
}

// connect connects an SDK client to the server at version, sending the
// token and headers (the agent's name) with every request.
func (s *httpServer) connect(ctx context.Context, t *testing.T, headers map[string]string, version string) *session {
	t.Helper()
	hdr := http.Header{"Authorization": {"Bearer " + s.token}}
	for k, v := range headers {
		hdr.Set(k, v)
	}
	client := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, header: hdr}}
	var transport mcp.Transport
	switch s.transport {
	case "http":
		transport = &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: client, MaxRetries: -1}
	case "sse":
		transport = &mcp.SSEClientTransport{Endpoint: s.url, HTTPClient: client}
	}
	sess := &session{version: version, wire: &syncBuffer{}, stderr: &syncBuffer{}}
	transport = &mcp.LoggingTransport{Transport: transport, Writer: sess.wire}
	c := mcp.NewClient(&mcp.Implementation{Name: "agentmail-interop", Version: "1"}, nil)
	cs, err := c.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b, _ := os.ReadFile(s.stderr)
		t.Fatalf("connect over %s at %s: %v\nwire:\n%s\nserver stderr:\n%s", s.transport, version, err, sess.wire, b)
	}
	sess.cs = cs
	t.Cleanup(func() { cs.Close() })
	return sess
}

// headerTransport adds headers to every request: the SDK's way to send a
// token and an agent's name is an http.Client of one's own.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}
