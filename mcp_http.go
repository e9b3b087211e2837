package main

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tmux"
	"agentmail/tools"
)

// mcpOptions are the flags of "agentmail mcp".
type mcpOptions struct {
	transport    string
	host         string
	port         int
	path         string
	noToken      bool
	allowOrigins string
	tlsCert      string
	tlsKey       string
	agent        string
	socket       string
	insecureHTTP bool
}

// parseMCPFlags parses the flags of "agentmail mcp". The HTTP flags are
// refused with the stdio transport, where they would mean nothing.
func parseMCPFlags(args []string) (*mcpOptions, error) {
	o := &mcpOptions{}
	fs := newFlags("mcp")
	fs.StringVar(&o.transport, "transport", "stdio", "")
	fs.StringVar(&o.host, "host", "127.0.0.1", "")
	fs.IntVar(&o.port, "port", 3000, "")
	fs.StringVar(&o.path, "path", "/mcp", "")
	fs.BoolVar(&o.noToken, "no-token", false, "")
	fs.StringVar(&o.allowOrigins, "allow-origin", "", "")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "")
	fs.StringVar(&o.tlsKey, "tls-key", "", "")
	fs.StringVar(&o.agent, "agent", "", "")
	fs.StringVar(&o.socket, "tmux-socket", "", "")
	fs.BoolVar(&o.insecureHTTP, "insecure-http", false, "")
	if err := noArgs(fs, args); err != nil {
		return nil, err
	}
	switch o.transport {
	case "stdio":
		var httpFlag string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "transport" && f.Name != "agent" && f.Name != "tmux-socket" && httpFlag == "" {
				httpFlag = f.Name
			}
		})
		if httpFlag != "" {
			return nil, usagef("--%s needs --transport http or sse", httpFlag)
		}
	case "http", "sse":
		if o.agent != "" {
			return nil, usagef("--agent names the agent of a stdio server; over HTTP each request names its agent")
		}
		if o.transport == "http" {
			break
		}
		pathSet := false
		fs.Visit(func(f *flag.Flag) { pathSet = pathSet || f.Name == "path" })
		if !pathSet {
			o.path = "/sse"
		}
	default:
		return nil, usagef("unknown transport %q: use stdio, http or sse", o.transport)
	}
	if o.port < 0 || o.port > 65535 {
		return nil, usagef("invalid port %d: use 0 to 65535 (0 picks a free one)", o.port)
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	if o.tlsCert == "" && !o.insecureHTTP && !isLoopback(o.host) {
		return nil, usagef("serving on %q, beyond this machine, needs TLS (--tls-cert FILE --tls-key FILE): tokens and mail would cross the network in the clear; --insecure-http serves without it anyway (behind a TLS proxy, say)", o.host)
	}
	if !strings.HasPrefix(o.path, "/") {
		return nil, usagef("invalid path %q: it must start with /", o.path)
	}
	return o, nil
}

// origins splits the --allow-origin list.
func (o *mcpOptions) origins() []string {
	var list []string
	for _, s := range strings.Split(o.allowOrigins, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, strings.TrimSuffix(s, "/"))
		}
	}
	return list
}

// runMCPHTTP serves MCP over Streamable HTTP, or the older HTTP+SSE
// transport, for the agents of the tmux session the server runs in, until
// SIGTERM or SIGINT (status 0) or the loss of its tmux pane (status 1).
func runMCPHTTP(ctx context.Context, e *env, o *mcpOptions) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "agentmail mcp: %s\n", text.OneLine(fmt.Sprintf(format, args...)))
	}
	fail := func(err error) error {
		logf("%v", err)
		return &exitError{code: 1}
	}
	if o.noToken && !isLoopback(o.host) {
		return usagef("--no-token is only allowed on a loopback address, not on %q: anybody who can reach the port could read every agent's mail", o.host)
	}
	life := startLife(logf)
	h, client, err := newHTTPHandler(ctx, e, o, logf)
	if client != nil && client.Control != nil {
		defer client.Control.Close()
	}
	if err != nil {
		return fail(err)
	}
	ln, err := listen(o, logf)
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	ctx, stop := life.watch(ctx, client)
	defer stop()
	return life.exit(ctx, h.Serve(ctx, ln, o.path))
}

// newHTTPHandler makes the handler that serves the agents of the tmux
// session the server runs in, and the tmux client it asks.
func newHTTPHandler(ctx context.Context, e *env, o *mcpOptions, logf func(string, ...any)) (*mcp.HTTPHandler, *tmux.Client, error) {
	// The server's own pane names the tmux session whose agents it serves,
	// as an agent's pane does for stdio; $AGENTMAIL_AGENT names no agent
	// here, since each request names its own.
	client, err := agentClient(ctx, func(k string) string {
		if k == agentEnv {
			return ""
		}
		return os.Getenv(k)
	}, identity{socket: o.socket})
	if err != nil {
		return nil, nil, err
	}
	store, err := e.findStore("agentmail mcp: warning: ")
	if err != nil {
		return nil, nil, err
	}
	token := os.Getenv("AGENTMAIL_TOKEN")
	if o.noToken {
		token = ""
	} else if token == "" {
		if token, err = httpToken(store); err != nil {
			return nil, nil, err
		}
	}
	if os.Getenv("AGENTMAIL_TMUX_CONTROL") != "off" {
		client.Control = &tmux.Control{}
	}
	session, err := client.SessionOf(ctx, client.Pane)
	if err != nil {
		return nil, client, err
	}
	agents := &agentResolver{client: client, session: session, store: store, tmux: os.Getenv("TMUX")}
	if agents.window, err = ownWindow(ctx, client); err != nil {
		return nil, client, err
	}
	return mcp.NewHTTPHandler(mcp.HTTPOptions{
		Version:      version,
		Logf:         logf,
		Resolve:      agents.resolve,
		Token:        token,
		NamedAgent:   store.NamedAgentOf,
		SessionKey:   sessionKey(token),
		Host:         o.host,
		AllowOrigins: o.origins(),
		SSE:          o.transport == "sse",
		Ended:        &endedFile{path: filepath.Join(store.Dir(), endedName)},
	}), client, nil
}

// ownWindow returns the id of the window the server runs in, when it is
// no agent's: the server is its only pane's foreground command, run from
// the pane's shell or as its first process. "" otherwise: a server run in
// the background of an agent's pane, or beside it, leaves its window
// listed.
func ownWindow(ctx context.Context, client *tmux.Client) (string, error) {
	w, err := client.WindowOf(ctx, client.Pane)
	if err != nil {
		return "", err
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	self := cmp.Or(strings.TrimSpace(string(comm)), filepath.Base(os.Args[0]))
	if w.Panes == 1 && w.Command == self && (w.PID == os.Getpid() || w.PID == os.Getppid()) {
		return w.Window, nil
	}
	return "", nil
}

// listen opens the server's listener, with TLS when it has a certificate,
// and says where it serves.
func listen(o *mcpOptions, logf func(string, ...any)) (net.Listener, error) {
	var tlsConfig *tls.Config
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", listenAddr(o.host, o.port))
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if tlsConfig != nil {
		ln, scheme = tls.NewListener(ln, tlsConfig), "https"
	} else if !isLoopback(o.host) {
		logf("warning: --insecure-http: serving on %s without TLS: tokens and mail cross the network in the clear", o.host)
	}
	what := "Streamable HTTP"
	if o.transport == "sse" {
		what = "HTTP+SSE (2024-11-05)"
	}
	logf("serving %s at %s://%s%s", what, scheme, ln.Addr(), o.path)
	return ln, nil
}

// listenAddr is the address to listen on for --host and --port. A
// bracketed IPv6 literal, as in a URL, is an address too.
func listenAddr(host string, port int) string {
	return net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
}

// isLoopback reports whether host names only this machine.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// tokenFile is the file, in .agentmail, that holds the bearer token when
// $AGENTMAIL_TOKEN does not give one.
const tokenFile = "http-token"

// httpToken reads the token from .agentmail/http-token, creating the file
// with a new random token (32 bytes, in hex) when there is none. Servers
// started together agree on one: the file is created exclusively, and the
// one that loses the race reads it.
func httpToken(store *mailbox.Store) (string, error) {
	dir := store.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, tokenFile)
	b := make([]byte, 32)
	rand.Read(b)
	token := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.WriteString(token + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("writing the token: %w", err)
		}
		return token, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("creating the token: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the token: %w", err)
	}
	token = strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("%s is empty: delete it to have a new token made, or set $AGENTMAIL_TOKEN", path)
	}
	return token, nil
}

// sessionKey derives the key that signs session ids from the token, so
// that every server given the same token accepts the same sessions (a
// second replica behind a load balancer, say). Without a token each
// process signs with a random key of its own.
func sessionKey(token string) []byte {
	if token == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("agentmail mcp session ids"))
	return m.Sum(nil)
}

// agentResolver finds the agent an HTTP request names, among the windows
// of the tmux session the server runs in.
type agentResolver struct {
	client  *tmux.Client
	session string // the id of the server's session, "$N"
	window  string // the id of the server's own window, "@N"
	store   *mailbox.Store
	tmux    string // the server's $TMUX
}

func (a *agentResolver) resolve(ctx context.Context, id mcp.Identity) (*tools.Service, error) {
	if id.Named != "" {
		// A named agent has no pane: it is the caller of the server's
		// session, as a person is on the web page.
		term := sessionTerm{client: a.client, session: a.session, hide: a.window, named: true}
		return &tools.Service{Store: a.store, Term: tools.AsNamedAgent(term, id.Named)}, nil
	}
	if id.Tmux != "" && !sameTmux(id.Tmux, a.tmux) {
		return nil, fmt.Errorf("%s %q names another tmux server than this server's", mcp.HeaderTmux, id.Tmux)
	}
	pane := id.Pane
	if pane != "" {
		if !isPaneID(pane) {
			return nil, fmt.Errorf("%s %q is not a pane id like %%3", mcp.HeaderPane, pane)
		}
		if err := a.inSession(ctx, pane); err != nil {
			return nil, err
		}
	} else {
		var err error
		if pane, err = a.windowPane(ctx, id.Agent); err != nil {
			return nil, err
		}
	}
	c := *a.client
	c.Pane = pane
	return &tools.Service{Store: a.store, Term: sessionTerm{client: &c, session: a.session, hide: a.window}}, nil
}

// sessionTerm is the tmux of an agent that an HTTP request names. Its
// Session is always the server's session, and fails when the agent's pane
// is no longer there, so that no call is served as an agent of another
// session, whatever happened since the request was resolved.
type sessionTerm struct {
	client  *tmux.Client
	session string // the server's session, "$N"
	// hide is the server's own window, which is no agent: it is not
	// listed, unless the caller is in it.
	hide string
	// named says the caller is a named agent, which AsNamedAgent puts in
	// place of the client's window (the server's own).
	named bool
}

func (t sessionTerm) Session(ctx context.Context) (*tmux.Session, error) {
	sess, err := t.client.SessionIn(ctx, t.session)
	if err != nil || sess.Self.ID == t.hide && !t.named {
		return sess, err
	}
	i := slices.IndexFunc(sess.Windows, func(w tmux.Window) bool { return w.ID == t.hide })
	if i < 0 {
		return sess, nil
	}
	s := *sess
	s.Windows = slices.Delete(slices.Clone(sess.Windows), i, i+1)
	return &s, nil
}

// inSession checks that pane is in the server's session. A pane in the
// list of the session's panes that the control connection keeps is taken
// without a question to tmux, since the tool call asks again
// (sessionTerm); tmux is asked where any other pane is.
func (a *agentResolver) inSession(ctx context.Context, pane string) error {
	if a.client.Control.Listed(a.session, pane) {
		return nil
	}
	session, err := a.client.SessionOf(ctx, pane)
	if errors.Is(err, tmux.ErrNotInTmux) {
		return fmt.Errorf("pane %s not found on this server's tmux", pane)
	}
	if err != nil {
		return err
	}
	if session != a.session {
		return fmt.Errorf("pane %s is not in this server's tmux session", pane)
	}
	return nil
}

// windowPane finds the window named name, exactly, in the server's
// session and returns its active pane. A name that two windows have is
// refused: it is nobody's address.
func (a *agentResolver) windowPane(ctx context.Context, name string) (string, error) {
	pane, windows, err := windowPane(ctx, a.client, a.session, name)
	switch {
	case err != nil:
		return "", err
	case windows == 0:
		return "", fmt.Errorf("no window named %q in this server's tmux session", name)
	case windows == 1:
		return pane, nil
	}
	return "", fmt.Errorf("%d windows of this server's tmux session are named %q: rename all but one of them (tmux rename-window) so that each agent has an address of its own", windows, name)
}

// sameTmux reports whether two values of $TMUX, "<socket>,<server
// pid>,<session index>", name the same tmux server: the same socket and
// the same server pid. The session index is the client's and may differ.
func sameTmux(a, b string) bool {
	server := func(v string) string {
		if i := strings.LastIndexByte(v, ','); i >= 0 {
			return v[:i]
		}
		return v
	}
	return server(a) == server(b)
}

// isPaneID reports whether s is a tmux pane id, "%" and digits.
func isPaneID(s string) bool {
	if len(s) < 2 || s[0] != '%' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
