package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/mcp"
)

// An HTTP entry of an assistant's configuration fails silently: a client
// with a wrong token, no token or no agent header shows the model no tools
// and says nothing. So doctor calls the server as the assistant would,
// with the headers it would send, and says what the answer means.

// httpProbeWait bounds doctor's initialize to an HTTP entry's server.
const httpProbeWait = 2 * time.Second

// varRef matches a reference to a variable in a header value: $VAR,
// ${VAR} or ${VAR:-default}.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandHeader expands the variables of v as an assistant does, from this
// shell's environment, and returns the names of those that are unset (and
// have no default).
func expandHeader(v string) (string, []string) {
	var unset []string
	out := varRef.ReplaceAllStringFunc(v, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name, def := m[1]+m[3], strings.TrimPrefix(m[2], ":-")
		if val, ok := os.LookupEnv(name); ok && val != "" {
			return val
		}
		if m[2] == "" {
			unset = append(unset, name)
		}
		return def
	})
	return out, unset
}

// httpHeaders returns the headers s's assistant would send, and the
// variables they name that this shell does not set.
func (s *mcpServer) httpHeaders() (http.Header, []string) {
	hdr := http.Header{}
	var unset []string
	for k, v := range s.headers {
		val, missing := expandHeader(v)
		unset = append(unset, missing...)
		if val != "" {
			hdr.Set(k, val)
		}
	}
	for k, name := range s.envHeaders {
		if val := os.Getenv(name); val != "" {
			hdr.Set(k, val)
		} else {
			unset = append(unset, name)
		}
	}
	if s.bearerVar != "" {
		if val := os.Getenv(s.bearerVar); val != "" {
			hdr.Set("Authorization", "Bearer "+val)
		} else {
			unset = append(unset, s.bearerVar)
		}
	}
	return hdr, unset
}

// judgeHTTP checks an HTTP entry as its assistant would use it: the
// variables its headers name, the token, the agent header, and the
// server's answer to initialize.
func judgeHTTP(ctx context.Context, s mcpServer) check {
	hdr, unset := s.httpHeaders()
	if len(unset) > 0 {
		return problem("", fmt.Sprintf("agentmail at %s: its headers name $%s, which this shell does not set: the assistant would send them empty", s.url, strings.Join(unset, ", $")),
			"start the HTTP server first, then export them (export AGENTMAIL_TOKEN=$(cat .agentmail/http-token)) in the shell that starts the assistant")
	}
	bearer := strings.TrimSpace(strings.TrimPrefix(hdr.Get("Authorization"), "Bearer"))
	if bearer == "" {
		return problem("", "agentmail at "+s.url+": no Authorization header: the server refuses every request",
			`add the header "Authorization": "Bearer ${AGENTMAIL_TOKEN}" (docs/http.md)`)
	}
	named := strings.HasPrefix(bearer, mailbox.TokenPrefix)
	if !named && hdr.Get(mcp.HeaderPane) == "" && hdr.Get(mcp.HeaderAgent) == "" {
		return problem("", "agentmail at "+s.url+": no "+mcp.HeaderPane+" or "+mcp.HeaderAgent+" header: the server cannot tell which agent this is, and refuses to connect",
			`add the header "`+mcp.HeaderPane+`": "${TMUX_PANE}" (docs/http.md), or use a named agent's own token (docs/remote.md)`)
	}
	status, msg, err := probeHTTP(ctx, s.url, hdr)
	switch {
	case err != nil:
		return problem("", "agentmail at "+s.url+": "+err.Error(), "start it first: agentmail mcp --transport http --port N, with the port the entry names")
	case status == http.StatusUnauthorized:
		return problem("", "agentmail at "+s.url+" refuses the token the entry sends", "export AGENTMAIL_TOKEN=$(cat .agentmail/http-token) from the server's project, or your agent's own token")
	case status != http.StatusOK:
		return problem("", fmt.Sprintf("agentmail at %s refuses to connect (HTTP %d): %s", s.url, status, msg), "")
	}
	return ok("", "agentmail at "+s.url+" answers, and takes the token and the agent")
}

// probeHTTP sends an initialize to url with hdr and returns the status and
// the error message of the answer, or why no answer came.
func probeHTTP(ctx context.Context, url string, hdr http.Header) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, httpProbeWait)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agentmail-doctor","version":"` + version + `"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return 0, "", errors.New("nothing answers there")
		}
		return 0, "", fmt.Errorf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := string(b)
	if m := regexp.MustCompile(`"message":"((?:[^"\\]|\\.)*)"`).FindStringSubmatch(msg); m != nil {
		msg = m[1]
	}
	return resp.StatusCode, text.OneLine(msg), nil
}
