// Package interop drives a built agentmail binary with MCP clients that
// were written elsewhere: the official Go SDK (go test in this directory),
// the MCP Inspector CLI (inspector.sh) and the official TypeScript SDK
// client (ts/, a Node package of its own). It is a module of its own so
// that the product's go.mod does not carry the SDK.
package interop
