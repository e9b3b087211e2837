package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/mcpclient"
)

// An HTTP entry of an assistant's configuration fails silently: a client
// with a wrong token, no token or no agent header shows the model no tools
// and says nothing. So doctor calls the server as the assistant would,
// with the headers it would send, and says what the answer means.

// httpProbeWait bounds each of doctor's calls to an HTTP entry's server.
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
	// The server is called as the assistant would: initialize, then a
	// tool that changes nothing.
	c, err := mcpclient.New(mcpclient.Config{URL: s.url, Header: hdr, Version: version, Timeout: httpProbeWait})
	if err != nil {
		return problem("", "agentmail at "+s.url+": "+err.Error(), "")
	}
	defer c.Close()
	_, err = c.CallTool(ctx, "list-recipients", nil, 0)
	switch {
	case errors.Is(err, mcpclient.ErrUnreachable):
		return problem("", err.Error(), "start it first: agentmail mcp --transport http --port N, with the port the entry names")
	case errors.Is(err, mcpclient.ErrToken):
		return problem("", "agentmail at "+s.url+" refuses the token the entry sends", "export AGENTMAIL_TOKEN=$(cat .agentmail/http-token) from the server's project, or your agent's own token")
	case err != nil:
		return problem("", "agentmail at "+s.url+" refuses to connect: "+err.Error(), "")
	}
	return ok("", "agentmail at "+s.url+" answers, and takes the token and the agent")
}
