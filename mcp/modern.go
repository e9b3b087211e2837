package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"agentmail/internal/text"
	"agentmail/jsonrpc"
)

// ModernVersion is the protocol revision served without a handshake: each
// request carries its version and the client's capabilities in
// params._meta, and the server keeps no session state for it.
const ModernVersion = "2026-07-28"

// SupportedVersions lists every revision this server speaks, newest first:
// the modern one, then LegacyVersions (TestFixedResultsEncoding checks
// that). server/discover and the -32022 error report the same list.
var SupportedVersions = []string{ModernVersion, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// The params._meta keys of the modern era.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
)

// logLevels are the levels a request's _meta may ask log messages at (the
// syslog severities). The server never sends log messages, so a valid level
// changes nothing; an invalid one is refused all the same.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// CodeUnsupportedProtocolVersion is the error for a request whose _meta
// names a protocol revision this server does not speak.
const CodeUnsupportedProtocolVersion = -32022

// Cache hints of the cacheable modern results (server/discover and
// tools/list). Both results are fixed for the life of the binary and are
// the same for every user, so a client may keep them for an hour and share
// them.
const (
	cacheTTLMs = 3600000
	cacheScope = "public"
)

// resultComplete is the resultType of every modern result: this server
// never needs more input from the client to finish a request.
const resultComplete = "complete"

// classify decides the era of one request from params._meta: a request
// naming ModernVersion is modern; one naming a legacy revision, or naming
// none, is legacy; any other string is answered -32022 whatever the
// method. server/discover exists only in the modern era, so without a
// modern version it is refused by the legacy table.
func classify(p *params) (modern bool, err error) {
	raw, ok := p.metaValue(MetaProtocolVersion)
	if !ok {
		return false, nil
	}
	v, ok := jsonrpc.StringValue(raw)
	switch {
	case !ok:
		return false, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: _meta %q must be a string", MetaProtocolVersion)
	case v == ModernVersion:
		return true, nil
	case slices.Contains(LegacyVersions, v):
		return false, nil
	}
	return false, &jsonrpc.Error{
		Code:    CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version",
		Data:    unsupportedVersion{Supported: SupportedVersions, Requested: v},
	}
}

type unsupportedVersion struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// removed reports whether method was part of the legacy era and is gone
// from the modern one: called with modern _meta it is an unknown method.
func removed(method string) bool {
	switch method {
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// unofferedPrefixes are the method families of capabilities this server does
// not advertise; a client that calls them anyway gets -32601.
var unofferedPrefixes = []string{"prompts/", "completion/", "logging/"}

// handleModern serves one request of the modern era. Its _meta has already
// named ModernVersion; the client's capabilities are required too, though
// no method here depends on them.
func (s *Server) handleModern(ctx context.Context, req *jsonrpc.Request, p *params) (any, error) {
	caps, ok := p.metaValue(MetaClientCapabilities)
	if !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: missing _meta %q", MetaClientCapabilities)
	}
	if len(caps) == 0 || caps[0] != '{' {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: _meta %q must be an object", MetaClientCapabilities)
	}
	if raw, ok := p.metaValue(MetaLogLevel); ok {
		if level, ok := jsonrpc.StringValue(raw); !ok || !slices.Contains(logLevels, level) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: _meta %q must be one of %s", MetaLogLevel, strings.Join(logLevels, ", "))
		}
	}
	switch req.Method {
	case "server/discover":
		return s.modern().discover, nil
	case "tools/list":
		if err := checkNoCursor(p); err != nil {
			return nil, err
		}
		return s.modern().list, nil
	case "tools/call":
		return s.callTool(ctx, p, true)
	case "subscriptions/listen":
		return s.listen(ctx, req, p)
	case "resources/list":
		if err := checkNoCursor(p); err != nil {
			return nil, err
		}
		return s.modernResult(resourcesList, resourcesCache), nil
	case "resources/templates/list":
		if err := checkNoCursor(p); err != nil {
			return nil, err
		}
		return s.modernResult(templatesList, resourcesCache), nil
	case "resources/read":
		contents, err := s.readResource(ctx, p, true)
		if err != nil {
			return nil, err
		}
		// The inbox changes with every message: a client may not keep it.
		return s.modernResult(map[string]any{"contents": contents}, 0), nil
	}
	if removed(req.Method) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s is not part of protocol %s", req.Method, ModernVersion)
	}
	for _, prefix := range unofferedPrefixes {
		if strings.HasPrefix(req.Method, prefix) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s (this server offers tools and resources only)", req.Method)
		}
	}
	return nil, methodNotFound(req.Method)
}

// listen answers subscriptions/listen. Of the notification types a client
// may ask for, the server honours resource subscriptions to the inbox (the
// tool and resource lists never change, and there are no prompts): the
// acknowledgement lists what it honours, each later notification carries
// the subscription id, and the request stays open. A client that cancels
// it gets nothing more for it, not even an answer; when the server stops
// reading (its input ended, or it is shutting down) it ends the stream
// with its result.
func (s *Server) listen(ctx context.Context, req *jsonrpc.Request, p *params) (any, error) {
	raw, _ := p.member("notifications") // a modern request's params are an object
	if len(raw) == 0 || raw[0] != '{' {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: subscriptions/listen needs a notifications object")
	}
	var asked struct {
		ResourceSubscriptions []string `json:"resourceSubscriptions"`
	}
	if err := json.Unmarshal(raw, &asked); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: notifications.resourceSubscriptions must be an array of URIs")
	}
	honoured := map[string]any{}
	inbox := slices.ContainsFunc(asked.ResourceSubscriptions, subscribable)
	if inbox {
		honoured["resourceSubscriptions"] = []string{InboxURI}
	}
	// The watch starts before the acknowledgement, so that mail stored
	// right after it is announced; the notifications start after it.
	var w *inboxWatch
	if inbox {
		var err error
		if w, err = s.watchInbox(ctx); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: %s", text.OneLine(err.Error()))
		}
	}
	// The subscription id is the request's id, with its JSON type.
	meta := map[string]json.RawMessage{MetaSubscriptionID: req.ID}
	ack := map[string]any{"notifications": honoured, "_meta": meta}
	if err := s.conn.Notify("notifications/subscriptions/acknowledged", ack); err != nil {
		if w != nil {
			w.unwatch()
		}
		return nil, fmt.Errorf("acknowledging subscriptions/listen: %w", err)
	}
	// The stream stays open without holding up the requests after it.
	jsonrpc.Detach(ctx)
	if w != nil {
		stop := w.notify(func() error {
			if ctx.Err() != nil {
				return ctx.Err() // cancelled: nothing more for this stream
			}
			return s.conn.Notify(updatedMethod, map[string]any{"uri": InboxURI, "_meta": meta})
		})
		defer stop()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.conn.Stopping():
	}
	return concat(`{"resultType":"`, resultComplete, `","_meta":{"`, MetaSubscriptionID, `":`, string(req.ID),
		`,"`, MetaServerInfo, `":`, s.info, `}}`), nil
}

// modernResult adds to a result of the resources methods the members every
// cacheable modern result carries: its resultType, cache hints and
// serverInfo. What these results show belongs to the caller, so they are
// private to it.
func (s *Server) modernResult(fields map[string]any, ttlMs int) map[string]any {
	r := make(map[string]any, len(fields)+4)
	for k, v := range fields {
		r[k] = v
	}
	r["resultType"] = resultComplete
	r["ttlMs"] = ttlMs
	r["cacheScope"] = "private"
	r["_meta"] = s.modernMeta
	return r
}
