package mcp

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentmail/jsonrpc"
	"agentmail/tools"
)

// The Streamable HTTP transport: each POST carries one message (or, in
// 2025-03-26, one batch) and gets its answer as JSON, or as a stream of
// server-sent events when notifications come before it. It only moves
// messages: each POST is a connection of one message, served by Serve
// exactly as stdio is.
//
// One HTTP server serves many agents, so nothing about the agent lives in
// the Server: each request names its agent in a header, which the
// request's context carries. The one piece of legacy session state, the
// negotiated revision, is signed into the session id, so a second process
// sharing the token accepts the sessions of the first.

// The HTTP headers of the transport.
const (
	HeaderSession  = "Mcp-Session-Id"
	HeaderProtocol = "MCP-Protocol-Version"
	HeaderMethod   = "Mcp-Method"
	HeaderName     = "Mcp-Name"
	// HeaderPane names the calling agent by its tmux pane, "%N": the
	// client's $TMUX_PANE.
	HeaderPane = "Agentmail-Pane"
	// HeaderAgent names the calling agent by its window name.
	HeaderAgent = "Agentmail-Agent"
	// HeaderTmux, optional, is the client's $TMUX: with it a pane id of
	// another tmux server, which may be a pane of this one too, is told
	// apart.
	HeaderTmux = "Agentmail-Tmux"
)

// CodeHeaderMismatch is the 2026-07-28 error for an HTTP header that
// disagrees with the message it comes with, or that the message needs and
// lacks.
const CodeHeaderMismatch = -32020

// Identity is who a request says its agent is: a pane id or a window name,
// as the client put them in its headers, and the client's tmux server
// when it says; or the named agent whose token it carries.
type Identity struct {
	Pane  string
	Agent string
	Tmux  string
	Named string
}

// HTTPOptions configure an HTTPHandler.
type HTTPOptions struct {
	// Version is the agentmail version shown in serverInfo.
	Version string
	// Logf receives diagnostics for stderr.
	Logf func(format string, args ...any)
	// Resolve returns the tools.Service of the agent a request names. It
	// is asked only by the methods that act as an agent (tool calls and
	// resources); an error is the request's answer.
	Resolve func(ctx context.Context, id Identity) (*tools.Service, error)
	// Token is the bearer token every request must carry; empty means
	// none is asked for.
	Token string
	// NamedAgent, when set, returns the named agent whose token token is,
	// or "" for none: a request that carries it acts as that agent alone,
	// whatever the server's Token.
	NamedAgent func(ctx context.Context, token string) (string, error)
	// SessionKey signs session ids. Processes given the same key accept
	// each other's sessions.
	SessionKey []byte
	// Host is the host name or address the server is bound to. Requests
	// whose Host header names anything else than it or a loopback name
	// are refused, against DNS rebinding.
	Host string
	// AllowOrigins are the browser origins, besides the server's own,
	// that may call it; they get CORS answers.
	AllowOrigins []string
	// BodyWait bounds how long a client may take to send a request body;
	// zero means 30 seconds.
	BodyWait time.Duration
	// MaxExchanges bounds the requests served at once, waiting receives
	// included, and MaxStreams the streams among them; beyond either a
	// request gets 503. Zero means 1024 and 64.
	MaxExchanges, MaxStreams int
	// SSE selects the HTTP+SSE transport of 2024-11-05 instead of
	// Streamable HTTP.
	SSE bool
	// Ended, when set, keeps the ids of the sessions DELETE ended, so that
	// a restarted server, or another one with the same key, refuses them
	// too for the rest of their lifetime.
	Ended EndedSessions
}

// EndedSessions keeps the ids of ended sessions, each until it expires.
type EndedSessions interface {
	// Load returns the ids ended and not yet expired, with the time each
	// expires.
	Load() (map[string]time.Time, error)
	// Add records an id ended, until it expires.
	Add(id string, until time.Time) error
}

// HTTPHandler serves MCP over Streamable HTTP, or HTTP+SSE.
type HTTPHandler struct {
	opt      HTTPOptions
	srv      *Server
	stopping chan struct{}
	stopOnce sync.Once
	// exchanges and streams hold a token for each request being served
	// and each stream open.
	exchanges, streams chan struct{}

	mu sync.Mutex
	// ended holds the sessions ended by DELETE, with the time their ids
	// expire anyway; a session id is valid by its signature and age
	// otherwise.
	ended map[string]time.Time
	// inflight holds the exchanges of legacy requests in progress, by
	// session and id, so that a notifications/cancelled in another POST
	// reaches them.
	inflight map[string]*exchange
	// sessions holds the streams and subscriptions of legacy sessions.
	sessions map[string]*sessionState
	// sseConns holds the connections of the HTTP+SSE transport.
	sseConns map[string]*sseConn
}

// writeWait bounds how long one message may take to reach a client that
// does not read it.
const writeWait = 10 * time.Second

// bodyWait bounds how long a client may take to send a request body.
const bodyWait = 30 * time.Second

// NewHTTPHandler returns a handler for opt.
func NewHTTPHandler(opt HTTPOptions) *HTTPHandler {
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	if len(opt.SessionKey) == 0 {
		opt.SessionKey = []byte(rand.Text())
	}
	h := &HTTPHandler{
		opt:       opt,
		srv:       NewServer(opt.Version, opt.Logf),
		stopping:  make(chan struct{}),
		exchanges: make(chan struct{}, cmp.Or(opt.MaxExchanges, 1024)),
		streams:   make(chan struct{}, cmp.Or(opt.MaxStreams, 64)),
		ended:     map[string]time.Time{},
		inflight:  map[string]*exchange{},
		sessions:  map[string]*sessionState{},
		sseConns:  map[string]*sseConn{},
	}
	if opt.Ended != nil {
		ended, err := opt.Ended.Load()
		if err != nil {
			opt.Logf("http: the ended sessions: %v", err)
		}
		for id, until := range ended {
			h.ended[id] = until
		}
	}
	return h
}

// Stop tells the requests that wait (receives, streams) to end, with
// their result, and ends the sessions' streams and subscriptions.
func (h *HTTPHandler) Stop() {
	h.stopOnce.Do(func() {
		close(h.stopping)
		h.endAll()
	})
}

// ServeHTTP checks who is calling, then serves the MCP methods: POST
// carries messages, GET opens a legacy session's stream for the updates
// of its subscriptions, DELETE ends a session.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	named, ok := h.guard(w, r)
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, named)
	case http.MethodDelete:
		h.delete(w, r)
	case http.MethodGet:
		h.get(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: use POST for messages, GET for a session's stream, DELETE to end a session")
	}
}

// Serve serves the handler on ln at path (and, for HTTP+SSE, the POST
// endpoint below it) until ctx is done, then stops taking requests, gives
// those in progress up to a second to answer, and returns. The timeouts
// bound clients that send slowly; none bounds an answer, since a receive
// may wait for mail for minutes.
func (h *HTTPHandler) Serve(ctx context.Context, ln net.Listener, path string) error {
	mux := http.NewServeMux()
	if h.opt.SSE {
		mux.Handle("/", h.SSEHandler(path))
	} else {
		mux.Handle(path, h)
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          log.New(logWriter(h.opt.Logf), "", 0),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	for ctx.Err() == nil {
		select {
		case err := <-done:
			return err
		case now := <-sweep.C:
			h.sweep(now)
		case <-ctx.Done():
		}
	}
	h.Stop()
	drain, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	if err := srv.Shutdown(drain); err != nil {
		// What did not answer in time is cancelled, and its connection
		// closed.
		cancel()
		srv.Close()
	}
	<-done
	return nil
}

// logWriter passes the lines of net/http's own log to Logf.
type logWriter func(format string, args ...any)

func (f logWriter) Write(p []byte) (int, error) {
	f("%s", bytes.TrimSuffix(p, []byte("\n")))
	return len(p), nil
}

// accepts reports whether the Accept values take JSON and an event
// stream.
func accepts(values []string) (json, events bool) {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			t, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch t {
			case "*/*":
				json, events = true, true
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				events = true
			}
		}
	}
	return json, events
}

// readBody reads a POST's body, one message of at most the frame limit,
// and answers the request itself when it cannot (ok false). The body has a
// deadline of its own rather than the server's ReadTimeout, which would
// also end the wait of a receive that takes longer: once the body is read,
// the connection is only watched for the client going away.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(h.bodyWait()))
	body, err := io.ReadAll(io.LimitReader(r.Body, jsonrpc.MaxFrame+1))
	if err != nil {
		// The deadline stays: the connection is closed after the answer,
		// not drained of a body that may never come.
		httpError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: reading the request body: "+err.Error())
		return nil, false
	}
	if len(body) > jsonrpc.MaxFrame {
		h.tooLarge(w, r, body)
		return nil, false
	}
	rc.SetReadDeadline(time.Time{})
	return body, true
}

// bodyWait is how long a client may take to send a request body.
func (h *HTTPHandler) bodyWait() time.Duration { return cmp.Or(h.opt.BodyWait, bodyWait) }

// maxDiscard bounds how much of a body over the frame limit is read, for
// its id, before the connection is closed on it.
const maxDiscard = 8 << 20

// tooLarge answers a body over the frame limit. The rest of the body is
// scanned for the request's id as it is discarded, as stdio does with a
// line too long, so that the client's call ends at once with its own id;
// a body that does not end within maxDiscard bytes and the body wait is
// answered with id null. The connection is closed after the answer.
func (h *HTTPHandler) tooLarge(w http.ResponseWriter, r *http.Request, head []byte) {
	id := jsonrpc.ScanID(io.MultiReader(bytes.NewReader(head), io.LimitReader(r.Body, maxDiscard)))
	closeAfter(w)
	writeError(w, http.StatusRequestEntityTooLarge, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "message exceeds the " + strconv.Itoa(jsonrpc.MaxFrame) + "-byte limit; split it into several smaller messages"})
}

// acquire takes a token from sem without waiting, and reports whether
// there was one.
func acquire(sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func release(sem chan struct{}) { <-sem }

// busy answers a request beyond the server's bounds.
func busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	httpError(w, http.StatusServiceUnavailable, jsonrpc.CodeInternalError, "Service Unavailable: too many requests in progress; try again shortly")
}

// agent is the Agent of a request with these headers, from the named
// agent named when it is not "": it resolves the agent they name once, on
// first use.
func (h *HTTPHandler) agent(hdr http.Header, named string) Agent {
	var once sync.Once
	var svc *tools.Service
	var err error
	return func(ctx context.Context) (*tools.Service, error) {
		once.Do(func() { svc, err = h.resolve(ctx, identity(hdr, named)) })
		return svc, err
	}
}

// identity is who a request with these headers, from the named agent
// named when it is not "", says its agent is.
func identity(hdr http.Header, named string) Identity {
	if named != "" {
		return Identity{Named: named}
	}
	return Identity{Pane: strings.TrimSpace(hdr.Get(HeaderPane)), Agent: hdr.Get(HeaderAgent), Tmux: hdr.Get(HeaderTmux)}
}

// none reports whether id names no agent.
func (id Identity) none() bool { return id.Named == "" && id.Pane == "" && id.Agent == "" }

// namesNoAgent is the error for a request that names no agent.
func namesNoAgent() *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: no agent named: send the header %s: %%N (your $TMUX_PANE) or %s: <your window name> with the server's token, or use a named agent's own token (agentmail agent add)", HeaderPane, HeaderAgent)
}

// resolve finds the agent a request names.
func (h *HTTPHandler) resolve(ctx context.Context, id Identity) (*tools.Service, error) {
	switch {
	case id.Named != "":
	case id.Pane == "" && id.Agent == "":
		return nil, namesNoAgent()
	case id.Pane != "" && id.Agent != "":
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: send %s or %s, not both", HeaderPane, HeaderAgent)
	case h.opt.Resolve == nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: this server cannot tell agents apart")
	}
	svc, err := h.opt.Resolve(ctx, id)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: %v", err)
	}
	return svc, nil
}
