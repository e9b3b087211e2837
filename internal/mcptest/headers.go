// Package mcptest holds what the tests of more than one package need to
// talk to the MCP server as its clients do.
package mcptest

import (
	"encoding/json"
	"net/http"
)

// StandardHeaders returns the headers a client of 2026-07-28 derives from
// a message whose _meta names a revision, as the SDKs do: that revision in
// MCP-Protocol-Version, the method in Mcp-Method, and in Mcp-Name the
// params.name of tools/call and prompts/get or the params.uri of
// resources/read. A message without that _meta has none.
func StandardHeaders(body []byte) http.Header {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name *string        `json:"name"`
			URI  *string        `json:"uri"`
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	version, _ := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
	if version == "" || m.Method == "" {
		return nil
	}
	hdr := http.Header{}
	hdr.Set("MCP-Protocol-Version", version)
	hdr.Set("Mcp-Method", m.Method)
	name := m.Params.Name
	if m.Method == "resources/read" {
		name = m.Params.URI
	}
	if name != nil && (m.Method == "tools/call" || m.Method == "prompts/get" || m.Method == "resources/read") {
		hdr.Set("Mcp-Name", *name)
	}
	return hdr
}
