package mcp

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"agentmail/jsonrpc"
)

// The standard headers of a 2026-07-28 request repeat what its message
// says, so that intermediaries may route on them without reading the
// body; a header that disagrees with the message is refused.

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
	required := version == ModernVersion && req.IsCall()
	member, nameRequired := nameSource(req.Method)
	raw := p.members[member]
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
