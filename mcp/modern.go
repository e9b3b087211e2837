package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
		return s.listen(req, p)
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

// listen answers subscriptions/listen. The tool list never changes and no
// other capability is offered, so no notification type can be honoured:
// the server acknowledges the stream with an empty set and ends it at once
// with its result, rather than holding a request open that will never
// carry anything. The acknowledgement is written before the result, as the
// protocol requires.
func (s *Server) listen(req *jsonrpc.Request, p *params) (any, error) {
	raw, _ := p.member("notifications") // a modern request's params are an object
	if len(raw) == 0 || raw[0] != '{' {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: subscriptions/listen needs a notifications object")
	}
	// The subscription id is the request's id, with its JSON type.
	ack := concat(`{"notifications":{},"_meta":{"`, MetaSubscriptionID, `":`, string(req.ID), `}}`)
	if err := s.conn.Notify("notifications/subscriptions/acknowledged", ack); err != nil {
		return nil, fmt.Errorf("acknowledging subscriptions/listen: %w", err)
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
