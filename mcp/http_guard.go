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
// has been answered.
func (h *HTTPHandler) guard(w http.ResponseWriter, r *http.Request) bool {
	if !h.hostAllowed(r.Host) {
		httpError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, "Forbidden: host "+strconv.Quote(r.Host)+" is not served here")
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !h.originAllowed(origin, r) {
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

// authorized checks the bearer token. The comparison takes the same time
// whatever the token sent, so that its timing tells nothing about the
// right one.
func (h *HTTPHandler) authorized(r *http.Request) bool {
	if h.opt.Token == "" {
		return true
	}
	// Two of them are refused whichever is right: a server and a gateway
	// in front of it may not read the same one.
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	want := sha256.Sum256([]byte(h.opt.Token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
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
