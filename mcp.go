package main

import (
	"agentmail/internal/text"
	"agentmail/mcp"
	"agentmail/tmux"
	"agentmail/tools"
	"context"
	"fmt"
	"os"
	"runtime/debug"
)

var mcpCmd = &command{
	summary: "Run the MCP server on standard input and output, or over HTTP",
	usage:   "agentmail mcp [--agent NAME] [--tmux-socket PATH] [--transport stdio|http|sse] [--host HOST] [--port N] [--path PATH] [--no-token] [--allow-origin ORIGINS] [--tls-cert FILE --tls-key FILE] [--insecure-http]",
	help: `Serve the Model Context Protocol (JSON-RPC 2.0) with four tools: send,
receive, status and list-recipients. Logs go to standard error.

With --transport stdio (the default) it serves one agent on standard input
and output, one message a line. The tmux server is the one on the socket
--tmux-socket (or $AGENTMAIL_TMUX_SOCKET) names, else $TMUX's; a socket
that $TMUX contradicts is refused. The agent is the window of $TMUX_PANE,
or the window that --agent (or $AGENTMAIL_AGENT) names, for clients that
pass no $TMUX_PANE: in the session $TMUX names, or, without $TMUX, in any
session of the server. A name no window or two windows have, or one that
disagrees with $TMUX_PANE's window, is refused. It exits 0 when its input
ends, and 1 when the agent's pane, session or tmux server goes away (a new
tmux server on the same socket counts as gone).

With --transport http it serves Streamable HTTP for every agent of the
tmux session it runs in, and prints the URL it serves on standard error.
The server's token (the shared token, $AGENTMAIL_TOKEN or the file
.agentmail/http-token) trusts every local agent: a request that carries it
as "Authorization: Bearer <token>" acts as the agent its header names,
"Agentmail-Pane: %N" (the client's $TMUX_PANE) or "Agentmail-Agent:
<window name>". A client that also sends "Agentmail-Tmux: $TMUX" is
refused when its tmux server is another one. An agent that is no window of
the session, on another machine say, gets a token of its own (agentmail
agent add NAME): a request with it acts as that agent and nobody else,
and needs no header; one naming someone else gets 403, and a removed
agent's token 401. An initialize (or a 2026-07-28 request) that names no
agent is refused with 400, so a client fails at connect. The server's own
window, when the server is its only pane's command, is no recipient. It
exits 0 on SIGTERM or SIGINT, after a second for the requests in
progress, and 1 when its tmux pane goes away.

With --transport sse it serves the older HTTP+SSE transport (protocol
2024-11-05) in the same way, for clients that predate Streamable HTTP:
GET the stream at the path (default /sse), which names the endpoint to
POST messages to; the agent is named in the headers of the GET.

Limits over HTTP: a request body of at most 65536 bytes (413 beyond it,
with the request's id); 1,024 requests in progress, waiting receives
included, and 64 streams, beyond which a request gets 503 and
Retry-After; 10 s to send the headers and 30 s to send a body; a kept-alive
connection idle for 2 minutes is closed; each message has 10 s to reach a
client that does not read it; a session lives 24 hours, and one ended by
DELETE stays ended, across restarts, until then; a session without a
request or an open stream for 10 minutes loses its subscriptions.

Options (all but --transport, --agent and --tmux-socket need --transport
http or sse):
  --agent NAME            the agent's window name (stdio only)
  --tmux-socket PATH      the tmux server's socket, for a client that passes
                          no $TMUX (tmux -S PATH)
  --transport T           stdio, http or sse (default stdio)
  --host HOST             the address to listen on (default 127.0.0.1; a
                          non-loopback address needs TLS or --insecure-http)
  --port N                the port (default 3000; 0 picks a free one)
  --path PATH             the endpoint's path (default /mcp; /sse for sse)
  --no-token              ask for no token; refused unless --host is loopback
  --allow-origin ORIGINS  browser origins allowed to call the server, comma
                          separated (others get 403)
  --tls-cert FILE         serve HTTPS with this certificate (PEM) ...
  --tls-key FILE          ... and this key (PEM)
  --insecure-http         serve a non-loopback address without TLS (behind
                          a TLS proxy, say), with a warning at start

Environment:
  TMUX             the tmux server (set by tmux)
  TMUX_PANE        the pane of the agent (stdio), or of the server (http),
                   whose session holds the agents it serves (set by tmux)
  AGENTMAIL_AGENT  the agent's window name, as --agent (for every command)
  AGENTMAIL_TMUX_SOCKET
                   the tmux server's socket, as --tmux-socket (for every
                   command)
  AGENTMAIL_ROOT   the project root, instead of the nearest directory with
                   .git
  AGENTMAIL_TOKEN  the HTTP bearer token; without it the server uses the one
                   in .agentmail/http-token, made (mode 0600) on first start

Examples:
  agentmail mcp
  agentmail mcp --tmux-socket /tmp/tmux-1000/default --agent alice
      for a client that passes neither $TMUX nor $TMUX_PANE
  agentmail mcp --transport http --port 3000
      with, in the client's configuration (Claude Code's .mcp.json):
      {"type": "http", "url": "http://127.0.0.1:3000/mcp",
       "headers": {"Authorization": "Bearer ${AGENTMAIL_TOKEN}",
                   "Agentmail-Pane": "${TMUX_PANE}"}}
  agentmail mcp --transport sse --port 3001
      for a client of the older transport, at http://127.0.0.1:3001/sse`,
	run: runMCP,
}

func runMCP(ctx context.Context, e *env, args []string) error {
	opts, err := parseMCPFlags(args)
	if err != nil {
		return err
	}
	if opts.transport != "stdio" {
		return runMCPHTTP(ctx, e, opts)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "agentmail mcp: %s\n", text.OneLine(fmt.Sprintf(format, args...)))
	}
	client, err := osAgentClient(ctx, identity{agent: opts.agent, socket: opts.socket})
	if err != nil {
		logf("%v", err)
		return &exitError{code: 1}
	}
	life := startLife(logf)
	svc := &tools.Service{Term: client}
	svc.Store, svc.StoreErr = e.findStore("agentmail mcp: warning: ")
	if svc.StoreErr != nil {
		logf("warning: %v (tool calls that need the mailbox will fail; the root is found once, at start: restart the server once it is fixed)", svc.StoreErr)
	}
	// The server lives as long as its agent and its live heap is tiny; a
	// lower GC target keeps it at about 6 MB resident instead of 9 after
	// thousands of calls, at a cost too small to see per call. Below 25
	// the runtime's own floor holds it where it is. A GOGC of the user's
	// own stands.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	// The server asks tmux at every tool call and watchdog check for as
	// long as its agent runs: one control-mode connection answers those
	// queries in a tenth of the time a tmux process takes, and reports the
	// changes that may have taken the agent's pane away.
	if os.Getenv("AGENTMAIL_TMUX_CONTROL") != "off" {
		client.Control = &tmux.Control{}
		defer client.Control.Close()
	}
	ctx, stop := life.watch(ctx, client)
	defer stop()
	err = mcp.NewServer(version, logf).ServeStdio(ctx, e.stdin, e.stdout, svc)
	return life.exit(ctx, err)
}
