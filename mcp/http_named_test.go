package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"agentmail/mcp"
	"agentmail/tools"
)

// namedHandler is a server with the shared token "secret" and the named
// agent carol, whose token is "amt_carol". Resolve answers for carol (by
// her token) and for the window alice (by pane %0), and says who it was
// asked for in asked.
func namedHandler(asked *[]mcp.Identity) *mcp.HTTPHandler {
	return mcp.NewHTTPHandler(mcp.HTTPOptions{
		Version: "test",
		Host:    "127.0.0.1",
		Token:   "secret",
		NamedAgent: func(ctx context.Context, token string) (string, error) {
			if token == "amt_carol" {
				return "carol", nil
			}
			return "", nil
		},
		Resolve: func(ctx context.Context, id mcp.Identity) (*tools.Service, error) {
			*asked = append(*asked, id)
			switch {
			case id.Named == "carol":
				return &tools.Service{Term: newFakeTerm("carol", "alice", "bob")}, nil
			case id.Pane == "%0":
				return &tools.Service{Term: newFakeTerm("alice", "alice", "bob")}, nil
			}
			return nil, errors.New("unknown agent")
		},
	})
}

// A named agent's token acts as that agent alone: a header naming another
// agent, or any pane, is refused with 403, and the request reads nothing.
// A token nobody has is refused with 401.
func TestHTTPNamedAgentToken(t *testing.T) {
	const list = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list-recipients",` + modernMeta + `}}`
	cases := []struct {
		name  string
		edit  func(http.Header)
		want  int
		named bool // Resolve was asked for carol
	}{
		{"her token alone", func(h http.Header) { h.Del(mcp.HeaderPane); h.Set("Authorization", "Bearer amt_carol") }, http.StatusOK, true},
		{"her token, her name", func(h http.Header) {
			h.Del(mcp.HeaderPane)
			h.Set("Authorization", "Bearer amt_carol")
			h.Set(mcp.HeaderAgent, "carol")
		}, http.StatusOK, true},
		{"her token as bob", func(h http.Header) {
			h.Del(mcp.HeaderPane)
			h.Set("Authorization", "Bearer amt_carol")
			h.Set(mcp.HeaderAgent, "bob")
		}, http.StatusForbidden, false},
		{"her token as a pane", func(h http.Header) { h.Set("Authorization", "Bearer amt_carol") }, http.StatusForbidden, false},
		{"a removed token", func(h http.Header) { h.Del(mcp.HeaderPane); h.Set("Authorization", "Bearer amt_dave") }, http.StatusUnauthorized, false},
		{"the shared token as alice", func(h http.Header) { h.Set("Authorization", "Bearer secret") }, http.StatusOK, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked []mcp.Identity
			w := postEdited(namedHandler(&asked), list, c.edit)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body)
			}
			if got := len(asked) == 1 && asked[0].Named == "carol"; got != c.named {
				t.Errorf("Resolve asked for %+v", asked)
			}
			if c.want != http.StatusOK && len(asked) != 0 {
				t.Errorf("a refused request resolved %+v", asked)
			}
			if c.want == http.StatusForbidden && !strings.Contains(w.Body.String(), `carol`) {
				t.Errorf("the refusal does not say whose token it is: %s", w.Body)
			}
			if strings.Contains(w.Body.String(), "amt_") {
				t.Errorf("the answer shows a token: %s", w.Body)
			}
		})
	}
}

// initialize, and a 2026-07-28 request, that name no agent are refused at
// once with the reason: a client shows an error at connect, and would
// only fail at its first tool call otherwise.
func TestHTTPNoAgentRefusedAtConnect(t *testing.T) {
	const (
		initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
		list       = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`
	)
	for _, body := range []string{initialize, list} {
		var asked []mcp.Identity
		h := namedHandler(&asked)
		w := postEdited(h, body, func(hdr http.Header) {
			hdr.Del(mcp.HeaderPane)
			hdr.Set("Authorization", "Bearer secret")
		})
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "no agent named") || !strings.Contains(w.Body.String(), mcp.HeaderPane) {
			t.Errorf("%s without an agent: status %d: %s", body[:60], w.Code, w.Body)
		}
		w = postEdited(h, body, func(hdr http.Header) {
			hdr.Del(mcp.HeaderPane)
			hdr.Set("Authorization", "Bearer amt_carol")
		})
		if w.Code != http.StatusOK {
			t.Errorf("%s with a named agent's token: status %d: %s", body[:60], w.Code, w.Body)
		}
	}
}
