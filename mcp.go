package main

import (
	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tmux"
	"agentmail/tools"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

var mcpCmd = &command{
	summary: "Run the MCP server on standard input and output, or over HTTP",
	usage:   "agentmail mcp [--transport stdio|http|sse] [--host HOST] [--port N] [--path PATH] [--no-token] [--allow-origin ORIGINS] [--tls-cert FILE --tls-key FILE]",
	help: `Serve the Model Context Protocol (JSON-RPC 2.0) with four tools: send,
receive, status and list-recipients. Logs go to standard error.

With --transport stdio (the default) it serves one agent on standard input
and output, one message a line. It must run inside tmux ($TMUX and
$TMUX_PANE set). It exits 0 when its input ends, and 1 when its tmux pane,
session or server goes away (a new tmux server on the same socket counts as
gone).

With --transport http it serves Streamable HTTP for every agent of the
tmux session it runs in, and prints the URL it serves on standard error.
Each request names its agent with the header "Agentmail-Pane: %N" (the
client's $TMUX_PANE) or "Agentmail-Agent: <window name>", and carries the
token as "Authorization: Bearer <token>". A client that also sends
"Agentmail-Tmux: $TMUX" is refused when its tmux server is another one. It exits 0 on SIGTERM or SIGINT,
after a second for the requests in progress, and 1 when its tmux pane goes
away.

With --transport sse it serves the older HTTP+SSE transport (protocol
2024-11-05) in the same way, for clients that predate Streamable HTTP:
GET the stream at the path (default /sse), which names the endpoint to
POST messages to; the agent is named in the headers of the GET.

Options (all but --transport need --transport http or sse):
  --transport T           stdio, http or sse (default stdio)
  --host HOST             the address to listen on (default 127.0.0.1; a
                          non-loopback address without TLS gets a warning)
  --port N                the port (default 3000; 0 picks a free one)
  --path PATH             the endpoint's path (default /mcp; /sse for sse)
  --no-token              ask for no token; refused unless --host is loopback
  --allow-origin ORIGINS  browser origins allowed to call the server, comma
                          separated (others get 403)
  --tls-cert FILE         serve HTTPS with this certificate (PEM) ...
  --tls-key FILE          ... and this key (PEM)

Environment:
  TMUX             the tmux server (set by tmux)
  TMUX_PANE        the pane of the agent (stdio), or of the server (http),
                   whose session holds the agents it serves (set by tmux)
  AGENTMAIL_ROOT   the project root, instead of the nearest directory with
                   .git
  AGENTMAIL_TOKEN  the HTTP bearer token; without it the server uses the one
                   in .agentmail/http-token, made (mode 0600) on first start

Examples:
  agentmail mcp
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
	client, err := tmux.FromEnv(os.Getenv)
	if err != nil {
		logf("%v", err)
		return &exitError{code: 1}
	}
	// The project root is found beside the first answers (below), not
	// before them: the client of a starting server waits for those, and
	// they need no mailbox. A tool call that comes first waits for it.
	svc := &tools.Service{
		Term: client,
		FindStore: func() (*mailbox.Store, error) {
			st, err := e.findStore("agentmail mcp: warning: ")
			if err != nil {
				logf("warning: %v (tool calls that need the mailbox will fail; the root is found once, at start: restart the server once it is fixed)", err)
			}
			return st, err
		},
	}
	// The server lives as long as its agent and its live heap is tiny; a
	// lower GC target keeps it at about 6 MB resident instead of 9 after
	// thousands of calls, at a cost too small to see per call. Below 25
	// the runtime's own floor holds it where it is (README, "Testing and
	// measuring"). A GOGC of the user's own stands.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	// The server asks tmux at every tool call and watchdog tick for as long
	// as its agent runs: one control-mode connection answers those queries
	// in a tenth of the time a tmux process takes (README, "tmux").
	var changes <-chan struct{}
	if os.Getenv("AGENTMAIL_TMUX_CONTROL") != "off" {
		client.Control = &tmux.Control{}
		defer client.Control.Close()
		changes = client.Control.Changes()
	}
	// One goroutine waits for what ends the server early: SIGTERM or
	// SIGINT, a clean stop (status 0, after answering what it has read),
	// and the loss of the agent's tmux pane (status 1, at once: with
	// ErrTmuxGone as the cause, calls in progress get no grace period). It
	// finds the project root and starts the watchdog itself. It starts
	// once the server has taken in all its first read brought and reads
	// again, or after backgroundDelay, whichever comes first: the client
	// of a starting server waits for the answers to its handshake, and
	// this work (a thread for the signals among it) only competes with
	// them.
	// Until then a signal has its default effect and ends the server at
	// once (README, "MCP server").
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	background := sync.OnceFunc(func() {
		go func() {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			svc.FoundStore()
			lost := make(chan error, 1)
			go func() { lost <- tools.Watch(ctx, client.Alive, tools.WatchInterval, tools.WatchRecheck, changes) }()
			select {
			case <-sigs:
				cancel(nil)
			case err := <-lost:
				cancel(err) // nil only once ctx is done
			case <-ctx.Done():
			}
		}()
	})
	timer := time.AfterFunc(backgroundDelay, background)
	defer timer.Stop()
	in := &idleReader{r: e.stdin, idle: background}
	err = mcp.NewServer(svc, version, logf).Serve(ctx, in, e.stdout)
	// A server whose input ended before the goroutine above looked still
	// says why its tools would have failed.
	svc.FoundStore()
	if cause := context.Cause(ctx); errors.Is(cause, tools.ErrTmuxGone) {
		logf("%v; exiting", cause)
		return &exitError{code: 1}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf("%v", err)
		return &exitError{code: 1}
	}
	return nil
}

// backgroundDelay is how long a starting MCP server waits at most before
// it handles signals and watches its tmux pane.
const backgroundDelay = 50 * time.Millisecond

// idleReader calls idle when Read is called for the second time: the
// server's reader has then split all the first read brought into requests
// and handed them on (they may still be being answered), and waits for
// more.
type idleReader struct {
	r     io.Reader
	reads int
	idle  func()
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.reads++; r.reads == 2 {
		r.idle()
	}
	return r.r.Read(p)
}
