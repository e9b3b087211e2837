package mcp

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
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
// messages: each exchange runs through a Server exactly as a line of stdio
// does, with Reply and Detach working as there.
//
// One HTTP server serves many agents, so nothing about the agent lives in
// the Server: each request names its agent in a header, and gets a Server
// of its own with that agent's tools.Service. The one piece of legacy
// session state, the negotiated revision, is signed into the session id,
// so a second process sharing the token accepts the sessions of the first.

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
// when it says.
type Identity struct {
	Pane  string
	Agent string
	Tmux  string
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
	// MaxExchanges bounds the requests served at once, waiting receives
	// included, and MaxStreams the subscription streams among them;
	// beyond either a request gets 503. Zero means 1024 and 64.
	MaxExchanges, MaxStreams int
	// SSE selects the HTTP+SSE transport of 2024-11-05 instead of
	// Streamable HTTP.
	SSE bool
}

// HTTPHandler serves MCP over Streamable HTTP.
type HTTPHandler struct {
	opt      HTTPOptions
	stopping chan struct{}
	// exchanges and streams hold a token for each request being served
	// and each subscription stream open.
	exchanges, streams chan struct{}
	stopOnce           sync.Once

	mu sync.Mutex
	// ended holds the sessions ended by DELETE, oldest first in endedFIFO;
	// a session id stays valid by its signature otherwise.
	ended     map[string]bool
	endedFIFO []string
	// inflight holds the legacy requests in progress, by session and id,
	// so that a notifications/cancelled in another POST reaches them.
	inflight map[string]*jsonrpc.Conn
	// sessions holds the streams and subscriptions of legacy sessions.
	sessions map[string]*sessionState
	// sseSessions holds the sessions of the HTTP+SSE transport.
	sseSessions map[string]*sseSession
}

// maxEnded bounds how many ended sessions are remembered; beyond it the
// oldest is forgotten, and its id would be accepted again.
const maxEnded = 4096

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
	return &HTTPHandler{
		opt:         opt,
		stopping:    make(chan struct{}),
		exchanges:   make(chan struct{}, cmp.Or(opt.MaxExchanges, 1024)),
		streams:     make(chan struct{}, cmp.Or(opt.MaxStreams, 64)),
		ended:       map[string]bool{},
		inflight:    map[string]*jsonrpc.Conn{},
		sessions:    map[string]*sessionState{},
		sseSessions: map[string]*sseSession{},
	}
}

// Stop tells the requests that wait for the server to stop (subscription
// streams) to end, with their result, and ends the sessions' streams and
// subscriptions.
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
	if !h.guard(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	case http.MethodGet:
		h.get(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method Not Allowed: use POST for messages, GET for a session's stream, DELETE to end a session")
	}
}

// guard checks who is calling, for every transport: the Host and Origin,
// against DNS rebinding, and the token. It answers a CORS preflight
// itself. It reports whether the request may go on; if not, it has been
// answered.
func (h *HTTPHandler) guard(w http.ResponseWriter, r *http.Request) bool {
	if !h.hostAllowed(r.Host) {
		httpError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, "Forbidden: host "+strconv.Quote(r.Host)+" is not served here")
		return false
	}
	origin := r.Header.Get("Origin")
	if origin != "" {
		if !h.originAllowed(origin, r.Host) {
			httpError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, "Forbidden: origin "+strconv.Quote(origin)+" is not allowed")
			return false
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
		w.Header().Set("Access-Control-Expose-Headers", HeaderSession)
	}
	if r.Method == http.MethodOptions {
		// A preflight carries no credentials: it is answered before the
		// token is checked, and says only what a call may send.
		w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
		w.Header().Set("Access-Control-Allow-Headers", strings.Join([]string{"Authorization", "Content-Type", "Accept",
			HeaderSession, HeaderProtocol, HeaderMethod, HeaderName, HeaderPane, HeaderAgent, HeaderTmux}, ", "))
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentmail"`)
		httpError(w, http.StatusUnauthorized, jsonrpc.CodeInvalidRequest, "Unauthorized: send the header \"Authorization: Bearer <token>\" with the server's token ($AGENTMAIL_TOKEN, or the file .agentmail/http-token)")
		return false
	}
	return true
}

// hostAllowed reports whether hostport, a request's Host, names this
// server: a loopback name, the bound host, or, for a server bound to every
// interface, any address literal (DNS rebinding needs a name).
func (h *HTTPHandler) hostAllowed(hostport string) bool {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, h.opt.Host) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	bound := net.ParseIP(h.opt.Host)
	return bound != nil && bound.IsUnspecified()
}

// originAllowed reports whether a browser page of origin may call the
// server: one listed in AllowOrigins, or the server's own origin.
func (h *HTTPHandler) originAllowed(origin, host string) bool {
	if slices.Contains(h.opt.AllowOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// authorized checks the bearer token. The comparison takes the same time
// whatever the token sent, so that its timing tells nothing about the
// right one.
func (h *HTTPHandler) authorized(r *http.Request) bool {
	if h.opt.Token == "" {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	want := sha256.Sum256([]byte(h.opt.Token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// httpError answers with status and a JSON-RPC error object without an id,
// which clients that look only at the body understand too.
func httpError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, nil, &jsonrpc.Error{Code: code, Message: msg})
}

// writeJSON answers with status and a JSON-RPC error for id.
func writeJSON(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{e.Code, e.Message, e.Data}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
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

// notification encodes a notification message, without a newline.
func notification(method string, params any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", method, params}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// post serves one message.
// readBody reads a POST's body, one message of at most the frame limit,
// and answers the request itself when it cannot (ok false). The body has a
// deadline of its own rather than the server's ReadTimeout, which would
// also end the wait of a receive that takes longer: once the body is read,
// the connection is only watched for the client going away.
func readBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(bodyWait))
	body, err := io.ReadAll(io.LimitReader(r.Body, jsonrpc.MaxFrame+1))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		httpError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: reading the request body: "+err.Error())
		return nil, false
	}
	if len(body) > jsonrpc.MaxFrame {
		// The rest of the body is not read: the connection is closed
		// after the answer rather than drained.
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest,
			"message exceeds the "+strconv.Itoa(jsonrpc.MaxFrame)+"-byte limit; split it into several smaller messages")
		return nil, false
	}
	return body, true
}

func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request) {
	if json, events := accepts(r.Header.Values("Accept")); !json || !events {
		httpError(w, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "Not Acceptable: send \"Accept: application/json, text/event-stream\"")
		return
	}
	if t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || t != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest, "Unsupported Media Type: send \"Content-Type: application/json\"")
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var err error
	frame := bytes.TrimSpace(body)
	batch := len(frame) > 0 && frame[0] == '['
	var req *jsonrpc.Request
	if !batch {
		var id json.RawMessage
		var derr *jsonrpc.Error
		req, id, _, derr = jsonrpc.Decode(frame)
		if derr != nil && derr.Code == jsonrpc.CodeParseError {
			writeJSON(w, http.StatusBadRequest, id, derr)
			return
		}
		// Other invalid messages are answered by the exchange below, as
		// on stdio; a notification among them is not answered at all.
	}

	// A request whose _meta names a revision other than a legacy one is
	// served without a session, as the modern era is: the Server answers
	// an unknown revision with -32022, as on stdio.
	var metaVersion string
	var p *params
	if req != nil {
		if p, err = parseParams(req.Params); err == nil {
			if raw, ok := p.metaValue(MetaProtocolVersion); ok {
				metaVersion, _ = jsonrpc.StringValue(raw)
			}
		}
	}
	modern := metaVersion != "" && !slices.Contains(LegacyVersions, metaVersion)
	headerVersion := r.Header.Get(HeaderProtocol)
	// Errors answered here name the request they refuse, when there is
	// one: a 2026-07-28 client matches every answer to its request by id.
	var id json.RawMessage
	if req != nil {
		id = req.ID
	}
	if headerVersion != "" && !slices.Contains(SupportedVersions, headerVersion) && !(modern && headerVersion == metaVersion) {
		writeJSON(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Bad Request: unsupported " + HeaderProtocol + " " + strconv.Quote(headerVersion) +
			"; this server speaks " + strings.Join(SupportedVersions, ", ")})
		return
	}

	var version, session string
	switch {
	case modern:
		if e := checkModernHeaders(r.Header, req, p, metaVersion); e != nil {
			writeJSON(w, http.StatusBadRequest, req.ID, e)
			return
		}
	case req != nil && req.Method == "initialize" && !req.IsNotification():
		if headerVersion == ModernVersion {
			writeJSON(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: CodeHeaderMismatch,
				Message: "Header mismatch: " + HeaderProtocol + " is " + ModernVersion + ", which has no initialize"})
			return
		}
	case headerVersion == ModernVersion && req != nil && !req.IsNotification():
		// The header says 2026-07-28 but _meta does not: the request lacks
		// a field that revision requires, which is -32602, rather than a
		// legacy request without its session.
		e := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Invalid params: %s is %s but params._meta lacks %q", HeaderProtocol, ModernVersion, MetaProtocolVersion)}
		if perr := (*jsonrpc.Error)(nil); errors.As(err, &perr) {
			e = perr
		} else if metaVersion != "" {
			e = &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("Header mismatch: %s is %q but the message says %q", HeaderProtocol, headerVersion, metaVersion)}
		}
		writeJSON(w, http.StatusBadRequest, req.ID, e)
		return
	default:
		session = r.Header.Get(HeaderSession)
		if session == "" {
			writeJSON(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "Bad Request: missing " + HeaderSession + " header; send initialize first, or use protocol " + ModernVersion + " with its _meta"})
			return
		}
		var ok bool
		if version, ok = h.sessionVersion(session); !ok {
			writeJSON(w, http.StatusNotFound, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "Not Found: unknown or ended session; send initialize to start a new one"})
			return
		}
		if headerVersion != "" && headerVersion != version {
			writeJSON(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "Bad Request: " + HeaderProtocol + " " + strconv.Quote(headerVersion) + " is not the session's protocol " + version})
			return
		}
	}
	if !acquire(h.exchanges) {
		busy(w)
		return
	}
	defer release(h.exchanges)
	if req != nil && req.Method == "subscriptions/listen" {
		if !acquire(h.streams) {
			busy(w)
			return
		}
		defer release(h.streams)
	}
	h.exchange(w, r, frame, req, version, session, modern)
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

// checkModernHeaders checks the standard headers of a 2026-07-28 request
// against its message: MCP-Protocol-Version against its _meta's revision
// (version), Mcp-Method against its method, and Mcp-Name against the name
// or URI its params give. A request of that revision must carry the first
// two, and Mcp-Name too when it calls a tool, reads a resource or gets a
// prompt by a name: intermediaries may route on them, so a request
// without them is refused as one whose headers disagree with it is. A
// notification, for which the revision requires no header, and a request
// of a revision the server lacks, which the Server answers with -32022,
// are held only to the headers they send.
func checkModernHeaders(hdr http.Header, req *jsonrpc.Request, p *params, version string) *jsonrpc.Error {
	required := version == ModernVersion && !req.IsNotification()
	member, nameRequired := nameSource(req.Method)
	raw, _ := p.member(member)
	name, hasName := jsonrpc.StringValue(raw)
	if e := checkHeader(hdr, HeaderProtocol, version, required, false); e != nil {
		return e
	}
	if e := checkHeader(hdr, HeaderMethod, req.Method, required, false); e != nil {
		return e
	}
	return checkHeader(hdr, HeaderName, name, required && nameRequired && hasName, true)
}

// nameSource returns the params member whose value a request's Mcp-Name
// carries, and whether a 2026-07-28 request of method must send that
// header.
func nameSource(method string) (member string, required bool) {
	switch method {
	case "tools/call", "prompts/get":
		return "name", true
	case "resources/read":
		return "uri", true
	}
	if strings.HasPrefix(method, "resources/") {
		return "uri", false
	}
	return "name", false
}

// A header value that is not plain visible ASCII travels in Base64
// between these two markers.
const base64Prefix, base64Suffix = "=?base64?", "?="

// checkHeader checks that the header name, sent once, says want. Absent,
// it is an error only when required. With encoded, the value may be in
// the Base64 form, which is decoded before it is compared.
func checkHeader(hdr http.Header, name, want string, required, encoded bool) *jsonrpc.Error {
	values, ok := hdr[http.CanonicalHeaderKey(name)]
	if !ok {
		if !required {
			return nil
		}
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("Header mismatch: missing %s header, which a %s request carries (%s: %s)", name, ModernVersion, name, want)}
	}
	if len(values) != 1 {
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("Header mismatch: %s is sent %d times; send it once, as %q", name, len(values), want)}
	}
	v := values[0]
	switch {
	case !encoded:
	case strings.HasPrefix(v, base64Prefix) && strings.HasSuffix(v, base64Suffix) && len(v) >= len(base64Prefix)+len(base64Suffix):
		b, err := base64.StdEncoding.Strict().DecodeString(v[len(base64Prefix) : len(v)-len(base64Suffix)])
		if err != nil {
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("Header mismatch: %s %q is not valid Base64: %v", name, v, err)}
		}
		v = string(b)
	case strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r > '~' }):
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("Header mismatch: %s %q holds characters that travel only in Base64 (%s…%s)", name, v, base64Prefix, base64Suffix)}
	}
	if v != want {
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("Header mismatch: %s is %q but the message says %q", name, v, want)}
	}
	return nil
}

// agentOnce returns what a handler calls first with each request's
// method: for a method that acts as an agent, it resolves the agent that
// hdr names into s.svc, once for the exchange or stream, and returns (and
// logs) the error of that one resolution.
func (h *HTTPHandler) agentOnce(s *Server, hdr http.Header) func(ctx context.Context, method string) error {
	var once sync.Once
	var err error
	return func(ctx context.Context, method string) error {
		if !needsAgent(method) {
			return nil
		}
		once.Do(func() { s.svc, err = h.resolve(ctx, hdr) })
		if err != nil {
			s.logf("%s: %v", method, err)
		}
		return err
	}
}

// needsAgent reports whether method acts as an agent, and so needs to
// know which one.
func needsAgent(method string) bool {
	switch method {
	case "tools/call", "resources/read", "resources/subscribe", "subscriptions/listen":
		return true
	}
	return false
}

// exchange runs one message through a Server of its own and writes what it
// says to w. version is the session's legacy revision, "" for initialize
// and the modern era; modern says the request is of the modern era.
func (h *HTTPHandler) exchange(w http.ResponseWriter, r *http.Request, frame []byte, req *jsonrpc.Request, version, session string, modern bool) {
	s := NewServer(nil, h.opt.Version, h.opt.Logf)
	if version != "" {
		s.protocol.Store(version)
	}
	defer s.stopSubscriptions()

	out := &httpOut{w: w, rc: http.NewResponseController(w)}
	// A subscription stream sends notifications before its answer, so it
	// is answered as events; everything else as one JSON message.
	out.sse = req != nil && req.Method == "subscriptions/listen"
	out.modern = modern
	if req != nil && req.Method == "initialize" {
		out.header = func() {
			if v := s.negotiated(); v != "" {
				w.Header().Set(HeaderSession, h.newSession(v))
			}
		}
	}

	agent := h.agentOnce(s, r.Header)
	handle := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if err := agent(ctx, req.Method); err != nil {
			return nil, err
		}
		if session != "" && (req.Method == "resources/subscribe" || req.Method == "resources/unsubscribe") {
			result, err := h.subscribe(ctx, s, req, session)
			if err != nil {
				s.logf("%s: %v", req.Method, err)
			}
			return result, err
		}
		return s.handle(ctx, req)
	}
	conn := jsonrpc.NewExchange(out, handle, jsonrpc.Options{
		Preempt:   s.preempt,
		MayDetach: mayDetach,
		Batch:     func() bool { return version == "2025-03-26" },
		Logf:      h.opt.Logf,
	})
	s.conn = &httpTransport{Conn: conn, h: h, session: session, sse: out.sse}

	if key := inflightKey(session, req); key != "" {
		h.mu.Lock()
		if h.inflight[key] == nil {
			h.inflight[key] = conn
			defer func() {
				h.mu.Lock()
				delete(h.inflight, key)
				h.mu.Unlock()
			}()
		}
		h.mu.Unlock()
	}
	if err := conn.Exchange(r.Context(), frame); err != nil && r.Context().Err() == nil {
		h.opt.Logf("http: %v", err)
	}
	if !out.started {
		// A notification, a response, or a request cancelled before it
		// was answered: accepted, with nothing to say.
		w.WriteHeader(http.StatusAccepted)
	}
}

// inflightKey is the key of a legacy request in HTTPHandler.inflight, or
// "" for anything a cancellation cannot name.
func inflightKey(session string, req *jsonrpc.Request) string {
	if session == "" || req == nil || req.IsNotification() {
		return ""
	}
	return session + " " + string(req.ID)
}

// resolve finds the agent a request names.
func (h *HTTPHandler) resolve(ctx context.Context, hdr http.Header) (*tools.Service, error) {
	id := Identity{Pane: strings.TrimSpace(hdr.Get(HeaderPane)), Agent: hdr.Get(HeaderAgent), Tmux: hdr.Get(HeaderTmux)}
	switch {
	case id.Pane == "" && id.Agent == "":
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: no agent named: send the header %s: %%N (your $TMUX_PANE) or %s: <your window name>", HeaderPane, HeaderAgent)
	case id.Pane != "" && id.Agent != "":
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: send %s or %s, not both", HeaderPane, HeaderAgent)
	}
	if h.opt.Resolve == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: this server cannot tell agents apart")
	}
	svc, err := h.opt.Resolve(ctx, id)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: %v", err)
	}
	return svc, nil
}

// cancel cancels the legacy request id of session, if it is in progress.
func (h *HTTPHandler) cancel(session string, id json.RawMessage) {
	if session == "" {
		return
	}
	h.mu.Lock()
	conn := h.inflight[session+" "+string(id)]
	h.mu.Unlock()
	if conn != nil {
		conn.Cancel(id)
	}
}

// delete ends a session.
func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get(HeaderSession)
	if session == "" {
		httpError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Bad Request: missing "+HeaderSession+" header")
		return
	}
	if _, ok := h.sessionVersion(session); !ok {
		httpError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not Found: unknown or ended session")
		return
	}
	h.mu.Lock()
	h.ended[session] = true
	h.endedFIFO = append(h.endedFIFO, session)
	if len(h.endedFIFO) > maxEnded {
		delete(h.ended, h.endedFIFO[0])
		h.endedFIFO = h.endedFIFO[1:]
	}
	h.mu.Unlock()
	h.endSession(session)
	w.WriteHeader(http.StatusNoContent)
}

// newSession returns a session id for a session of protocol version: the
// version, the time and 128 random bits, signed. Every character is
// visible ASCII.
func (h *HTTPHandler) newSession(version string) string {
	payload := version + "." + strconv.FormatInt(time.Now().Unix(), 10) + "." + rand.Text()
	return payload + "." + h.sign(payload)
}

func (h *HTTPHandler) sign(payload string) string {
	m := hmac.New(sha256.New, h.opt.SessionKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionVersion checks a session id and returns its protocol version.
func (h *HTTPHandler) sessionVersion(session string) (string, bool) {
	i := strings.LastIndexByte(session, '.')
	if i < 0 {
		return "", false
	}
	payload, mac := session[:i], session[i+1:]
	if !hmac.Equal([]byte(mac), []byte(h.sign(payload))) {
		return "", false
	}
	version, _, _ := strings.Cut(payload, ".")
	if !slices.Contains(LegacyVersions, version) {
		return "", false
	}
	h.mu.Lock()
	ended := h.ended[session]
	h.mu.Unlock()
	return version, !ended
}

// httpTransport is the transport of one exchange: notifications go into
// its answer when that is an event stream, and nowhere otherwise, since a
// JSON answer holds one message.
type httpTransport struct {
	*jsonrpc.Conn
	h       *HTTPHandler
	session string
	sse     bool
}

// errNoStream is the answer to a notification that has no stream to go on.
var errNoStream = errors.New("mcp: no stream to send notifications on")

func (t *httpTransport) Notify(method string, params any) error {
	if !t.sse {
		return errNoStream
	}
	return t.Conn.Notify(method, params)
}

// Cancel reaches the request of the same session, which runs in another
// exchange.
func (t *httpTransport) Cancel(id json.RawMessage) { t.h.cancel(t.session, id) }

// Stopping is the whole server's: an exchange ends when its answer is out.
func (t *httpTransport) Stopping() <-chan struct{} { return t.h.stopping }

// httpOut writes the lines of one exchange to its HTTP response, each
// flushed at once: a line counts as written once it has left for the
// client, which is what Reply waits for.
type httpOut struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	sse     bool
	modern  bool   // the answer is to a 2026-07-28 request
	header  func() // sets headers that depend on the answer, before it is written
	started bool
}

func (o *httpOut) Write(line []byte) (int, error) {
	if !o.started {
		o.started = true
		if o.header != nil {
			o.header()
		}
		if o.sse {
			o.w.Header().Set("Content-Type", "text/event-stream")
			o.w.Header().Set("Cache-Control", "no-cache")
		} else {
			o.w.Header().Set("Content-Type", "application/json")
		}
		status := http.StatusOK
		if o.modern && !o.sse {
			status = errorStatus(line)
		}
		o.w.WriteHeader(status)
	} else if !o.sse {
		return 0, errNoStream
	}
	o.rc.SetWriteDeadline(time.Now().Add(writeWait))
	var err error
	if o.sse {
		_, err = fmt.Fprintf(o.w, "event: message\ndata: %s\n\n", bytes.TrimSuffix(line, []byte("\n")))
	} else {
		_, err = o.w.Write(line)
	}
	if err == nil {
		err = o.rc.Flush()
	}
	if err != nil {
		return 0, err
	}
	return len(line), nil
}

// errorStatus is the HTTP status of a 2026-07-28 answer sent as JSON.
// That revision gives an error its status too, so that a client and
// anything between sees the failure without reading the body: 404 for a
// method the server does not have, 400 for a request it refuses as
// malformed (params, revision, headers). Other errors, and
// results, are 200.
func errorStatus(line []byte) int {
	if !bytes.Contains(line, []byte(`"error":{`)) {
		return http.StatusOK
	}
	var m struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Error == nil {
		return http.StatusOK
	}
	switch m.Error.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, CodeUnsupportedProtocolVersion, CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// Serve serves the handler on ln at path (and, for HTTP+SSE, the POST
// endpoint below it) until ctx is done, then stops
// taking requests, gives those in progress up to a second to answer, and
// returns. The timeouts bound clients that send slowly; none bounds an
// answer, since a receive may wait for mail for minutes.
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
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	h.Stop()
	drain, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	err := srv.Shutdown(drain)
	if err != nil {
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
