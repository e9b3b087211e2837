// Package interop drives a built agentmail binary with MCP clients that
// were written elsewhere: the official Go SDK (go test in this directory),
// the MCP Inspector CLI (inspector.sh), the official TypeScript SDK
// client (ts/, a Node package of its own) and the official conformance
// suite (conformance.sh, with conformance/ and cmd/headerproxy). It also
// drives the page of "agentmail web" in headless Chromium, through
// chromedp (browser_test.go). It is a module of its own so that the
// product's go.mod carries neither the SDK nor chromedp.
package interop
