// Package interop drives a built agentmail binary with MCP clients that
// were written elsewhere: the official Go SDK (go test in this directory)
// and the MCP Inspector CLI (inspector.sh). It is a module of its own so
// that the product's go.mod does not carry the SDK.
package interop
