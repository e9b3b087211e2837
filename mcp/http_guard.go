package mcp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentmail/jsonrpc"
)

// guard checks who is calling, for every HTTP transport: the Host and
// Origin, against DNS rebinding, and the token. It answers a CORS
// preflight itself. It reports whether the request may go on; if not, it
// has been answered. A request that carries a named agent's token acts as
// that agent, whose name named is then; one with the shared token, or to
// a server that asks for none, names its agent in its headers.
func (h *HTTPHandler) guard(w http.ResponseWriter, r *http.Request) (named string, ok bool) {
	if !h.hostAllowed(r.Host) {
		httpError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, "Forbidden: host "+strconv.Quote(r.Host)+" is not served here")
		return "", false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !h.originAllowed(origin, r) {
			httpError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, "Forbidden: origin "+strconv.Quote(origin)+" is not allowed")
			return "", false
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
		return "", false
	}
	named, ok, err := h.authorized(r)
	if err != nil {
		h.opt.Logf("http: looking up a named agent's token: %v", err)
		httpError(w, http.StatusInternalServerError, jsonrpc.CodeInternalError, "Internal error: the server cannot read its named agents; its log says why")
		return "", false
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentmail"`)
		httpError(w, http.StatusUnauthorized, jsonrpc.CodeInvalidRequest, "Unauthorized: the token is missing, wrong or of a removed agent: send \"Authorization: Bearer <token>\" with the server's token ($AGENTMAIL_TOKEN, or the file .agentmail/http-token) or your own agent's token (agentmail agent add)")
		return "", false
	}
	if named != "" {
		if msg := borrowed(r.Header, named); msg != "" {
			httpError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, "Forbidden: "+msg)
			return "", false
		}
	}
	return named, true
}

// borrowed says why the headers of a request carrying the token of the
// named agent name someone else, or "" when they do not.
func borrowed(hdr http.Header, named string) string {
	if v := hdr.Values(HeaderPane); len(v) > 0 {
		return "this token is the named agent " + strconv.Quote(named) + "'s, which has no pane: drop the " + HeaderPane + " header"
	}
	if v := hdr.Values(HeaderAgent); len(v) > 1 || len(v) == 1 && v[0] != named {
		return "this token is the named agent " + strconv.Quote(named) + "'s: it acts as that agent and nobody else (" + HeaderAgent + " says " + strconv.Quote(strings.Join(v, ", ")) + ")"
	}
	return ""
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
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, strings.Trim(h.opt.Host, "[]")) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	bound := net.ParseIP(strings.Trim(h.opt.Host, "[]"))
	return bound != nil && bound.IsUnspecified()
}

// originAllowed reports whether a browser page of origin may call the
// server: one listed in AllowOrigins, or the server's own origin, scheme,
// host and port alike.
func (h *HTTPHandler) originAllowed(origin string, r *http.Request) bool {
	if slices.Contains(h.opt.AllowOrigins, origin) {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// authorized checks the bearer token: the server's own, or a named
// agent's, whose name it returns. The comparison with the server's token
// takes the same time whatever the token sent, so that its timing tells
// nothing about the right one.
func (h *HTTPHandler) authorized(r *http.Request) (named string, ok bool, err error) {
	// Two of them are refused whichever is right: a server and a gateway
	// in front of it may not read the same one.
	values := r.Header.Values("Authorization")
	if len(values) > 1 || len(values) == 0 && h.opt.Token != "" {
		return "", false, nil
	}
	if len(values) == 0 {
		return "", true, nil
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", h.opt.Token == "", nil
	}
	token = strings.TrimSpace(token)
	if h.opt.Token != "" {
		got := sha256.Sum256([]byte(token))
		want := sha256.Sum256([]byte(h.opt.Token))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return "", true, nil
		}
	}
	if h.opt.NamedAgent != nil {
		if named, err = h.opt.NamedAgent(r.Context(), token); err != nil || named != "" {
			return named, err == nil, err
		}
	}
	return "", h.opt.Token == "", nil
}

// httpError answers with status and a JSON-RPC error without an id: the
// refusal of a request whose body may not have been read, or may never
// come. The connection is closed after the answer rather than drained,
// and the answer is given writeWait to leave.
func httpError(w http.ResponseWriter, status, code int, msg string) {
	closeAfter(w)
	writeError(w, status, nil, &jsonrpc.Error{Code: code, Message: msg})
}

// closeAfter makes the connection close once the answer is out, reading
// nothing more from it.
func closeAfter(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now())
	rc.SetWriteDeadline(time.Now().Add(writeWait))
	w.Header().Set("Connection", "close")
}

// writeError answers with status and a JSON-RPC error for id.
func writeError(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	body, _ := jsonrpc.Marshal(&jsonrpc.Response{ID: id, Error: e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
