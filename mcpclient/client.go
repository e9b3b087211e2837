// Package mcpclient is the MCP client side of agentmail: what the CLI uses
// to reach a hub, an "agentmail mcp --transport http" on another machine
// or in another tmux session, over Streamable HTTP.
//
// It speaks protocol 2025-11-25 (and accepts a hub that negotiates
// 2025-06-18, the first revision with structured tool results) through
// initialize and an Mcp-Session-Id. Every agentmail hub with Streamable
// HTTP speaks these revisions, and the version initialize answers tells a
// hub too old for this client plainly; the sessionless 2026-07-28 form
// would save a round trip, but only newer hubs speak it and a client could
// not tell an old hub from a broken one. The hub signs its session ids and
// keeps no state for them, so a session costs it nothing, and this client
// never ends one with DELETE: each DELETE is recorded on the hub's disk
// for a day, and the CLI makes one session per command.
//
// Every call has a time-out (a receive that waits gets its wait on top);
// a call whose connection drops, or whose session the hub no longer
// knows, is repeated once on a new session when repeating it cannot do
// anything twice; errors are one line that says what to do.
package mcpclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// The environment variables that configure a client.
const (
	URLEnv    = "AGENTMAIL_URL"
	TokenEnv  = "AGENTMAIL_TOKEN"
	CAFileEnv = "AGENTMAIL_CA_FILE"
	AgentEnv  = "AGENTMAIL_AGENT"
)

// ProtocolVersion is the revision the client asks for; acceptedVersions
// are those it works with, newest first.
const ProtocolVersion = "2025-11-25"

var acceptedVersions = []string{ProtocolVersion, "2025-06-18"}

// CallTimeout bounds each call that does not wait on the hub: connecting,
// the TLS handshake, the request and its answer.
const CallTimeout = 15 * time.Second

// HeaderAgent names the agent in a request, for a hub whose token does
// not say who the caller is.
const HeaderAgent = "Agentmail-Agent"

// Config says which hub to reach and as whom.
type Config struct {
	// URL is the hub's endpoint, as "agentmail mcp --transport http"
	// prints it: http://host:port/mcp or https://….
	URL string
	// Token is the bearer token; it is never written in an error.
	Token string
	// CAFile is a PEM file of certificates trusted besides the system's.
	CAFile string
	// Agent, when set, is sent as the Agentmail-Agent header. Nothing
	// else about the local machine is: a pane id of this machine means
	// nothing to the hub's tmux.
	Agent string
	// Header, when set, holds headers sent with every request, before the
	// token and the agent: what an assistant's configuration sends, for
	// doctor to call a server as that assistant would.
	Header http.Header
	// Version is this agentmail's version, told to the hub.
	Version string
	// Timeout replaces CallTimeout when set (tests).
	Timeout time.Duration
}

// ConfigFromEnv reads a Config from the environment. URL is "" when no hub
// is configured.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{URL: getenv(URLEnv), Token: getenv(TokenEnv), CAFile: getenv(CAFileEnv), Agent: getenv(AgentEnv)}
}

// Client calls the tools and reads the resources of one hub. It is safe
// for use by several goroutines.
type Client struct {
	cfg  Config
	url  string // cfg.URL without any user and password, for errors
	http *http.Client

	mu      sync.Mutex
	session string // "" before initialize, and after the hub lost it
	version string // the revision initialize agreed
	server  ServerInfo
	nextID  int
}

// ServerInfo is what the hub says about itself in initialize.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// New returns a client for cfg. It checks the URL and reads the CA file,
// and does not connect yet.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("$%s must be the hub's URL, http://host:port/mcp or https://…, as \"agentmail mcp --transport http\" prints it", URLEnv)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("$%s: %v", CAFileEnv, err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("$%s: %s holds no PEM certificate", CAFileEnv, cfg.CAFile)
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = CallTimeout
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: cfg.Timeout,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        4,
		IdleConnTimeout:     time.Minute,
	}
	return &Client{cfg: cfg, url: u.Redacted(), http: &http.Client{Transport: transport}}, nil
}

// URL is the hub's URL, without any password it holds.
func (c *Client) URL() string { return c.url }

// Server returns what the hub said about itself, once a call has been
// made.
func (c *Client) Server() ServerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server
}

// Close lets the client's idle connections go.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// call sends a request and returns its result; what names it in errors. wait is how long the
// request may wait on the hub, added to the time-out. A call that the hub
// certainly did not carry out (its session was unknown, or its connection
// failed before the request left) is repeated once on a new session, and
// so is one that repeatable says may be repeated whatever happened.
func (c *Client) call(ctx context.Context, what, method string, params any, wait time.Duration, repeatable bool) (json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		sess, version, err := c.start(ctx)
		if err != nil {
			return nil, err
		}
		res, err := c.roundTrip(ctx, method, params, sess, version, wait)
		var d *dropped
		switch {
		case attempt == 0 && errors.As(err, &d) && (d.notSent || repeatable):
			c.forget(sess)
			continue
		case errors.As(err, &d) && !d.notSent && !repeatable:
			return nil, c.fail(ErrUnreachable, "the connection to the hub at %s dropped during %s (%v): it may have been carried out; look before you try again", c.url, what, cause(d.err))
		}
		return res, c.explain(err, method, wait)
	}
}

// start returns the session, initializing one when there is none.
func (c *Client) start(ctx context.Context) (session, version string, err error) {
	c.mu.Lock()
	session, version = c.session, c.version
	c.mu.Unlock()
	if version != "" {
		return session, version, nil
	}
	for attempt := 0; ; attempt++ {
		session, version, err = c.initialize(ctx)
		if _, drop := err.(*dropped); drop && attempt == 0 {
			continue
		}
		if err != nil {
			return "", "", c.explain(err, "initialize", 0)
		}
		return session, version, nil
	}
}

// forget drops a session the hub does not know or a connection dropped
// under, so that the next call starts a new one.
func (c *Client) forget(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == session {
		c.session, c.version = "", ""
	}
}

// initialize starts a session: initialize, then notifications/initialized.
func (c *Client) initialize(ctx context.Context) (session, version string, err error) {
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      ServerInfo{Name: "agentmail", Version: c.cfg.Version},
	}
	var hdr http.Header
	res, err := c.post(ctx, "initialize", params, "", "", 0, &hdr)
	if err != nil {
		return "", "", err
	}
	var r struct {
		ProtocolVersion string     `json:"protocolVersion"`
		ServerInfo      ServerInfo `json:"serverInfo"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", "", &tooOld{fmt.Sprintf("its answer to initialize is not one: %v", err)}
	}
	if !accepted(r.ProtocolVersion) {
		return "", "", &tooOld{fmt.Sprintf("it speaks MCP %q, and this agentmail needs %s or %s", r.ProtocolVersion, acceptedVersions[1], acceptedVersions[0])}
	}
	session = hdr.Get("Mcp-Session-Id")
	if _, err := c.post(ctx, "notifications/initialized", nil, session, r.ProtocolVersion, 0, nil); err != nil {
		return "", "", err
	}
	c.mu.Lock()
	c.session, c.version, c.server = session, r.ProtocolVersion, r.ServerInfo
	c.mu.Unlock()
	return session, r.ProtocolVersion, nil
}

func accepted(v string) bool {
	for _, a := range acceptedVersions {
		if v == a {
			return true
		}
	}
	return false
}

// id returns the next request id.
func (c *Client) id() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	return c.nextID
}
