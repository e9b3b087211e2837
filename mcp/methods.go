package mcp

import (
	"context"
	"slices"
	"strings"

	"agentmail/jsonrpc"
)

// request is one request on its way to its method: the message, its
// params split into members, and its era.
type request struct {
	*jsonrpc.Request
	p      *params
	modern bool
}

// method is one MCP method: the eras it exists in, and how it runs.
type method struct {
	legacy, modern bool
	// early marks the legacy methods that may come before initialize.
	early bool
	// slow marks the methods that touch the mailbox or tmux, and so may
	// wait for a lock another process holds (jsonrpc.Options.Slow).
	slow bool
	run  func(ss *session, ctx context.Context, r *request) (any, error)
}

// methods is the one method table of both eras. A legacy-only method
// called with modern _meta is unknown in that era, and the other way
// round.
var methods = map[string]method{
	"initialize":               {legacy: true, early: true, run: (*session).initialize},
	"ping":                     {legacy: true, early: true, run: ping},
	"server/discover":          {modern: true, run: (*session).discover},
	"tools/list":               {legacy: true, modern: true, run: (*session).toolsList},
	"tools/call":               {legacy: true, modern: true, slow: true, run: (*session).toolsCall},
	"resources/list":           {legacy: true, modern: true, run: (*session).resourcesList},
	"resources/templates/list": {legacy: true, modern: true, run: (*session).templatesList},
	"resources/read":           {legacy: true, modern: true, slow: true, run: (*session).resourcesRead},
	"resources/subscribe":      {legacy: true, run: (*session).resourcesSubscribe},
	"resources/unsubscribe":    {legacy: true, run: (*session).resourcesUnsubscribe},
	"subscriptions/listen":     {modern: true, run: (*session).listen},
}

// slow reports whether req's method may wait for another process.
func slow(req *jsonrpc.Request) bool { return methods[req.Method].slow }

// dispatch answers a request by its era and method.
func (ss *session) dispatch(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if !req.IsCall() {
		// notifications/initialized needs no action: requests are served
		// as soon as initialize has been answered. Other notifications, of
		// either era, are ignored as the protocol asks.
		if req.Method == "notifications/cancelled" {
			ss.cancelled(req)
		}
		return nil, nil
	}
	p, err := parseParams(req.Params)
	if err != nil {
		return nil, err
	}
	modern, err := classify(p)
	if err != nil {
		return nil, err
	}
	r := &request{Request: req, p: p, modern: modern}
	m, known := methods[req.Method]
	if modern {
		if err := checkModern(r); err != nil {
			return nil, err
		}
		if !known || !m.modern {
			return nil, modernNotFound(req.Method, known)
		}
		return m.run(ss, ctx, r)
	}
	switch {
	case req.Method == "server/discover":
		return nil, legacyDiscover(p)
	case !known || !m.legacy:
		return nil, methodNotFound(req.Method)
	case !m.early && ss.negotiated() == "":
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: server not initialized: send initialize first")
	}
	return m.run(ss, ctx, r)
}

// methodNotFound is the answer to a method this server does not offer.
func methodNotFound(name string) error {
	return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s", name)
}

// capabilities lists what the server implements: tools, whose list never
// changes while it runs, and resources, whose list never changes either
// but which may be subscribed to. Both eras get the same object.
type capabilities struct {
	Tools struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
	Resources struct {
		Subscribe   bool `json:"subscribe"`
		ListChanged bool `json:"listChanged"`
	} `json:"resources"`
}

var serverCapabilities = func() (c capabilities) {
	c.Resources.Subscribe = true
	return c
}()

type initializeResult struct {
	ProtocolVersion string       `json:"protocolVersion"`
	Capabilities    capabilities `json:"capabilities"`
	ServerInfo      serverInfo   `json:"serverInfo"`
	Instructions    string       `json:"instructions"`
}

func (ss *session) initialize(ctx context.Context, r *request) (any, error) {
	if r.Batch {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: initialize must not be part of a batch")
	}
	if ss.negotiated() != "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid Request: already initialized")
	}
	requested, ok, err := r.p.str("protocolVersion", "protocolVersion must be a string")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalidParams("missing protocolVersion")
	}
	// capabilities and clientInfo are not used, and a client that leaves
	// them out is served (as the official Go SDK does), but a value of the
	// wrong type is a malformed request.
	for _, name := range []string{"capabilities", "clientInfo"} {
		if v := r.p.members[name]; v != nil && v[0] != '{' {
			return nil, invalidParams("%s must be an object", name)
		}
	}
	// The handshake never selects the modern era: a client asking for it,
	// or for anything unknown, gets the newest legacy revision and decides
	// whether it can speak it.
	version := LegacyVersions[0]
	if slices.Contains(LegacyVersions, requested) {
		version = requested
	}
	ss.protocol.Store(version)
	return initializeResult{version, serverCapabilities, ss.srv.info, Instructions}, nil
}

func ping(ss *session, ctx context.Context, r *request) (any, error) { return nil, nil }

// discoverResult is the server/discover result.
type discoverResult struct {
	*modernFields
	SupportedVersions []string     `json:"supportedVersions"`
	Capabilities      capabilities `json:"capabilities"`
	Instructions      string       `json:"instructions"`
}

func (ss *session) discover(ctx context.Context, r *request) (any, error) {
	return discoverResult{ss.srv.cacheable(cacheTTLMs, "public"), SupportedVersions, serverCapabilities, Instructions}, nil
}

type toolsListResult struct {
	Tools []*tool `json:"tools"`
	*modernFields
}

func (ss *session) toolsList(ctx context.Context, r *request) (any, error) {
	if err := checkNoCursor(r.p); err != nil {
		return nil, err
	}
	if r.modern {
		return ss.srv.lists()[1], nil
	}
	return ss.srv.lists()[0], nil
}

// checkNoCursor refuses a list cursor: every list fits on one page, so no
// cursor was ever issued.
func checkNoCursor(p *params) error {
	raw, err := p.member("cursor")
	if err != nil {
		return err
	}
	if raw != nil && string(raw) != "null" {
		return invalidParams("unknown cursor")
	}
	return nil
}

// unofferedPrefixes are the method families of capabilities this server
// does not advertise.
var unofferedPrefixes = []string{"prompts/", "completion/", "logging/"}

// modernNotFound is the modern era's answer to a method it lacks: known
// tells a legacy-only method, which the modern era removed.
func modernNotFound(name string, known bool) error {
	if known || name == "logging/setLevel" {
		return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s is not part of protocol %s", name, ModernVersion)
	}
	for _, prefix := range unofferedPrefixes {
		if strings.HasPrefix(name, prefix) {
			return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s (this server offers tools and resources only)", name)
		}
	}
	return methodNotFound(name)
}
