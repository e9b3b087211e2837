package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentmail/mcp"
	"agentmail/tools"
)

// A body over the frame limit is answered 413 with the request's own id,
// wherever the id stands, so that the client's call ends at once; a body
// with no readable id gets null. Nothing is sent.
func TestHTTPTooLargeKeepsID(t *testing.T) {
	h := aliceHandler(&tools.Service{})
	pad := strings.Repeat("x", 70000)
	for _, tt := range []struct{ body, id string }{
		{`{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob","message":"` + pad + `"}}}`, `"id":"early"`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob","message":"` + pad + `"}},"id":42}`, `"id":42`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"message":"` + pad + `"}}`, `"id":null`},
	} {
		w := postEdited(h, tt.body, func(http.Header) {})
		if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), tt.id) || w.Header().Get("Connection") != "close" {
			t.Errorf("status %d, Connection %q, body %s; want 413 with %s", w.Code, w.Header().Get("Connection"), w.Body, tt.id)
		}
	}
}

// Two Authorization headers are refused, whichever of them is right: which
// one a server and a gateway in front of it read is not certain.
func TestHTTPTwoAuthorizations(t *testing.T) {
	h := mcp.NewHTTPHandler(mcp.HTTPOptions{Version: "test", Host: "127.0.0.1", Token: "secret"})
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if w := postEdited(h, body, func(hdr http.Header) { hdr.Set("Authorization", "Bearer secret") }); w.Code == http.StatusUnauthorized {
		t.Fatalf("one right token: status %d: %s", w.Code, w.Body)
	}
	w := postEdited(h, body, func(hdr http.Header) {
		hdr.Add("Authorization", "Bearer secret")
		hdr.Add("Authorization", "Bearer wrong")
	})
	if w.Code != http.StatusUnauthorized {
		t.Errorf("status %d, want 401: %s", w.Code, w.Body)
	}
}

// The Origin of a browser page is compared whole: the server's own host
// with another scheme is another origin.
func TestHTTPOriginScheme(t *testing.T) {
	h := aliceHandler(&tools.Service{})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
	for origin, want := range map[string]int{
		"http://127.0.0.1":  http.StatusOK,
		"https://127.0.0.1": http.StatusForbidden,
		"http://127.0.0.2":  http.StatusForbidden,
	} {
		r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(init))
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Origin", origin)
		r.Header.Set(mcp.HeaderAgent, "alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Origin %s: status %d, want %d: %s", origin, w.Code, want, w.Body)
		}
	}
}
