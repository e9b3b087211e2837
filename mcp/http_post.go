package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"agentmail/jsonrpc"
)

// post is one POSTed message on its way: what it holds and where it goes.
type post struct {
	msg     jsonrpc.Message
	req     *jsonrpc.Request // the one request or notification; nil for a batch or an invalid message
	p       *params          // req's params, when they could be read
	perr    error            // why they could not
	modern  bool             // req names the 2026-07-28 revision, or one the server lacks
	meta    string           // the revision req's _meta names
	version string           // the legacy session's revision
	session string           // the legacy session
	named   string           // the named agent whose token it carries
}

// post serves one POSTed message, from the named agent named when it is
// not "".
func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request, named string) {
	if json, events := accepts(r.Header.Values("Accept")); !json || !events {
		httpError(w, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "Not Acceptable: send \"Accept: application/json, text/event-stream\"")
		return
	}
	if t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || t != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest, "Unsupported Media Type: send \"Content-Type: application/json\"")
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	ps := readPost(body)
	ps.named = named
	if it := ps.msg.Items; !ps.msg.Batch && len(it) == 1 && it[0].Err != nil && it[0].Err.Code == jsonrpc.CodeParseError {
		writeError(w, http.StatusBadRequest, it[0].ID, it[0].Err)
		return
	}
	if e, status := h.route(r.Header, ps); e != nil {
		writeError(w, status, ps.id(), e)
		return
	}
	if !acquire(h.exchanges) {
		busy(w)
		return
	}
	defer release(h.exchanges)
	if ps.req != nil && ps.req.Method == "subscriptions/listen" {
		if !acquire(h.streams) {
			busy(w)
			return
		}
		defer release(h.streams)
	}
	h.exchange(w, r, ps)
}

// readPost decodes a POSTed message once, and reads its era from its
// params. Other invalid messages than those that are not JSON are
// answered by the exchange, as on stdio.
func readPost(body []byte) *post {
	ps := &post{msg: jsonrpc.Decode(bytes.TrimSpace(body))}
	if it := ps.msg.Items; !ps.msg.Batch && len(it) == 1 && it[0].Err == nil {
		ps.req = it[0].Request
	}
	if ps.req == nil {
		return ps
	}
	if ps.p, ps.perr = parseParams(ps.req.Params); ps.perr == nil {
		if raw, ok := ps.p.metaValue(MetaProtocolVersion); ok {
			ps.meta, _ = jsonrpc.StringValue(raw)
		}
	}
	// A request whose _meta names a revision other than a legacy one is
	// served without a session, as the modern era is: the Server answers
	// an unknown revision with -32022, as on stdio.
	ps.modern = ps.meta != "" && !slices.Contains(LegacyVersions, ps.meta)
	return ps
}

// id is the id an error answered before the exchange carries: a
// 2026-07-28 client matches every answer to its request by id.
func (ps *post) id() json.RawMessage {
	if ps.req == nil {
		return nil
	}
	return ps.req.ID
}

// route checks a message's revision against its headers and, for the
// legacy era, finds its session; then that an initialize, or a request of
// 2026-07-28, names its agent: a client learns it at connect, where it
// shows errors, rather than at its first tool call. It returns the error
// to answer with, and its HTTP status, when the message cannot be served.
func (h *HTTPHandler) route(hdr http.Header, ps *post) (*jsonrpc.Error, int) {
	if e, status := h.routeRevision(hdr, ps); e != nil {
		return e, status
	}
	connect := ps.req != nil && ps.req.IsCall() && (ps.meta == ModernVersion || ps.req.Method == "initialize")
	if connect && identity(hdr, ps.named).none() {
		return namesNoAgent(), http.StatusBadRequest
	}
	return nil, 0
}

// routeRevision is route's check of the revision and session.
func (h *HTTPHandler) routeRevision(hdr http.Header, ps *post) (*jsonrpc.Error, int) {
	header := hdr.Get(HeaderProtocol)
	if header != "" && !slices.Contains(SupportedVersions, header) && !(ps.modern && header == ps.meta) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Bad Request: unsupported " + HeaderProtocol + " " + strconv.Quote(header) +
			"; this server speaks " + strings.Join(SupportedVersions, ", ")}, http.StatusBadRequest
	}
	call := ps.req != nil && ps.req.IsCall()
	switch {
	case ps.modern:
		if e := checkModernHeaders(hdr, ps.req, ps.p, ps.meta); e != nil {
			return e, http.StatusBadRequest
		}
	case call && ps.req.Method == "initialize":
		if header == ModernVersion {
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "Header mismatch: " + HeaderProtocol + " is " + ModernVersion + ", which has no initialize"}, http.StatusBadRequest
		}
	case call && header == ModernVersion:
		return ps.modernWithoutMeta(header), http.StatusBadRequest
	default:
		return h.legacySession(hdr, ps)
	}
	return nil, 0
}

// modernWithoutMeta is the error for a request whose header says
// 2026-07-28 but whose _meta does not: it lacks a field that revision
// requires, which is -32602, rather than being a legacy request without
// its session.
func (ps *post) modernWithoutMeta(header string) *jsonrpc.Error {
	var perr *jsonrpc.Error
	switch {
	case errors.As(ps.perr, &perr):
		return perr
	case ps.meta != "":
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("Header mismatch: %s is %q but the message says %q", HeaderProtocol, header, ps.meta)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Invalid params: %s is %s but params._meta lacks %q", HeaderProtocol, ModernVersion, MetaProtocolVersion)}
}

// legacySession finds the session of a legacy message, which must name
// one that initialize started and DELETE has not ended.
func (h *HTTPHandler) legacySession(hdr http.Header, ps *post) (*jsonrpc.Error, int) {
	ps.session = hdr.Get(HeaderSession)
	if ps.session == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Bad Request: missing " + HeaderSession + " header; send initialize first, or use protocol " + ModernVersion + " with its _meta"}, http.StatusBadRequest
	}
	var ok bool
	if ps.version, ok = h.sessionVersion(ps.session); !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Not Found: unknown or ended session; send initialize to start a new one"}, http.StatusNotFound
	}
	h.touch(ps.session)
	if header := hdr.Get(HeaderProtocol); header != "" && header != ps.version {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Bad Request: " + HeaderProtocol + " " + strconv.Quote(header) + " is not the session's protocol " + ps.version}, http.StatusBadRequest
	}
	return nil, 0
}
