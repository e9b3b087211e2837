package mcp

import (
	"slices"
	"strings"

	"agentmail/jsonrpc"
)

// LegacyVersions are the protocol revisions negotiated through initialize,
// newest first.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// ModernVersion is the protocol revision served without a handshake: each
// request carries its version and the client's capabilities in
// params._meta, and the server keeps no session state for it.
const ModernVersion = "2026-07-28"

// SupportedVersions lists every revision this server speaks, newest first.
// server/discover and the -32022 error report it.
var SupportedVersions = append([]string{ModernVersion}, LegacyVersions...)

// The params._meta keys of the modern era.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
)

// logLevels are the levels a request's _meta may ask log messages at. The
// server never sends log messages, so a valid level changes nothing; an
// invalid one is refused all the same.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// CodeUnsupportedProtocolVersion is the error for a request whose _meta
// names a protocol revision this server does not speak.
const CodeUnsupportedProtocolVersion = -32022

// cacheTTLMs is the cache hint of the modern results that never change
// while the binary runs: the tool list, the resource lists, discovery.
const cacheTTLMs = 3600000

// resultComplete is the resultType of every modern result: this server
// never needs more input from the client to finish a request.
const resultComplete = "complete"

// classify decides the era of one request from params._meta: a request
// naming ModernVersion is modern; one naming a legacy revision, or none,
// is legacy; any other string is answered -32022 whatever the method.
func classify(p *params) (modern bool, err error) {
	raw, ok := p.metaValue(MetaProtocolVersion)
	if !ok {
		return false, nil
	}
	v, ok := jsonrpc.StringValue(raw)
	switch {
	case !ok:
		return false, invalidParams("_meta %q must be a string", MetaProtocolVersion)
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

// checkModern checks what every modern request carries: the client's
// capabilities in _meta (no method here depends on them), a valid log
// level if any, and no batch around it.
func checkModern(r *request) error {
	if r.Batch {
		// Only 2025-03-26 has batches: a modern request inside one runs
		// nothing, as initialize inside one does not.
		return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: protocol %s has no batches", ModernVersion)
	}
	caps, ok := r.p.metaValue(MetaClientCapabilities)
	if !ok {
		return invalidParams("missing _meta %q", MetaClientCapabilities)
	}
	if len(caps) == 0 || caps[0] != '{' {
		return invalidParams("_meta %q must be an object", MetaClientCapabilities)
	}
	if raw, ok := r.p.metaValue(MetaLogLevel); ok {
		if level, ok := jsonrpc.StringValue(raw); !ok || !slices.Contains(logLevels, level) {
			return invalidParams("_meta %q must be one of %s", MetaLogLevel, strings.Join(logLevels, ", "))
		}
	}
	return nil
}

// legacyDiscover answers server/discover sent without a modern protocol
// version in its _meta. The method belongs to the modern era only, so such
// a request lacks a required field, which the modern rules answer -32602;
// a client that probes with it then falls back to initialize.
func legacyDiscover(p *params) error {
	if p.meta == nil {
		return invalidParams("server/discover needs params._meta with %q and %q", MetaProtocolVersion, MetaClientCapabilities)
	}
	if _, ok := p.metaValue(MetaProtocolVersion); !ok {
		return invalidParams("server/discover needs %q in params._meta", MetaProtocolVersion)
	}
	return invalidParams("server/discover is part of protocol %s; earlier revisions use initialize", ModernVersion)
}

// modernFields are the members every modern result carries: its
// resultType, serverInfo in _meta, and, for a result a client may keep,
// cache hints.
type modernFields struct {
	ResultType string         `json:"resultType"`
	TTLMs      *int           `json:"ttlMs,omitempty"`
	CacheScope string         `json:"cacheScope,omitempty"`
	Meta       map[string]any `json:"_meta"`
}

// complete returns the modern members of a result that may not be kept.
func (s *Server) complete() *modernFields {
	return &modernFields{ResultType: resultComplete, Meta: map[string]any{MetaServerInfo: s.info}}
}

// cacheable returns the modern members of a result a client may keep for
// ttl milliseconds, shared with others ("public") or not ("private").
func (s *Server) cacheable(ttl int, scope string) *modernFields {
	m := s.complete()
	m.TTLMs, m.CacheScope = &ttl, scope
	return m
}
