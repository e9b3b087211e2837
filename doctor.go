package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/tmux"
	"agentmail/tools"
)

var doctorCmd = &command{
	summary: "Check why mail does not flow, and say how to fix it",
	usage:   "agentmail doctor [--json] [--agent NAME] [--tmux-socket PATH]",
	help: `Check the set-up of this agent and project, one line per check:

  LEVEL    CHECK: DETAIL[; fix: WHAT TO DO]

LEVEL is "ok", "problem" (mail cannot flow, or flows to the wrong agent,
until it is fixed) or "info" (something optional is missing, or a check
could not run because an earlier one failed). The checks, in order:

  tmux         tmux is on PATH, and its version (tmux -V)
  agent        inside tmux ($TMUX, and $TMUX_PANE a live pane), or the
               agent and server named as for "agentmail mcp" (--agent,
               --tmux-socket), and the window name that is its address
  root         the project root, and how it was found (.git or
               $AGENTMAIL_ROOT)
  permissions  .agentmail/ is 0700 and its files 0600, yours and writable
  names        no other window of the session has this agent's name (a
               problem); other shared names are info
  mailman      whether a mailman runs for this root: info when not, since
               an assistant woken by "agentmail watch --hook" needs none
  state        this agent's status (ready, work, offline) and unread mail
  claude       Claude Code: .mcp.json, ~/.claude.json (user and project)
  codex        Codex CLI: ~/.codex/config.toml ($CODEX_HOME), .codex/config.toml
  gemini       Gemini CLI: .gemini/settings.json, ~/.gemini/settings.json

With $AGENTMAIL_URL set, the commands use a hub and nothing local, and
the checks are of the hub instead:

  hub          the hub answers at $AGENTMAIL_URL, and its version
  token        it accepts $AGENTMAIL_TOKEN
  agent        which agent it takes you for ($AGENTMAIL_AGENT, or the
               agent of your token)

An assistant with no agentmail server configured is info. One that is
configured but does not pass the identity the server needs is a problem:
Codex needs env_vars = ["TMUX", "TMUX_PANE"], Gemini CLI an env with
"TMUX": "$TMUX" and "TMUX_PANE": "$TMUX_PANE" (either may name the agent
with --agent instead of TMUX_PANE, and the server with --tmux-socket
instead of TMUX), and no assistant may fix TMUX or TMUX_PANE to one value
in env, which would make every session act as one pane. Each
configuration file gives a line.

Flags:
  --json              print the same as one JSON object:
                      {"ok":BOOL,"checks":[{"name","level","ok","detail","fix"}]},
                      where ok is false for a problem only
  --agent NAME        check as the agent of that window name, as
                      "agentmail mcp --agent NAME" would run
  --tmux-socket PATH  the tmux server's socket, as for "agentmail mcp"

$AGENTMAIL_AGENT and $AGENTMAIL_TMUX_SOCKET name them too, as for every
command.

Exit status: 0 when no check found a problem, 1 otherwise.`,
	run: runDoctor,
}

// Levels of a check.
const (
	levelOK      = "ok"
	levelProblem = "problem"
	levelInfo    = "info"
)

// check is one line of the doctor's report.
type check struct {
	Name   string `json:"name"`
	Level  string `json:"level"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlags("doctor")
	asJSON := fs.Bool("json", false, "")
	e.id.flags(fs)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	var checks []check
	if remote() {
		checks = hubChecks(ctx)
	} else {
		d := &doctor{svc: e.service("warning: "), id: e.id}
		d.home, _ = os.UserHomeDir()
		checks = d.run(ctx)
	}
	healthy := true
	for i := range checks {
		c := &checks[i]
		c.OK = c.Level != levelProblem
		healthy = healthy && c.OK
		c.Detail, c.Fix = text.OneLine(c.Detail), text.OneLine(c.Fix)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		// Paths and commands stay readable: "&" and "<" are not escaped.
		enc.SetEscapeHTML(false)
		if err := enc.Encode(struct {
			OK     bool    `json:"ok"`
			Checks []check `json:"checks"`
		}{healthy, checks}); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			line := fmt.Sprintf("%-8s %s: %s", c.Level, c.Name, c.Detail)
			if c.Fix != "" {
				line += "; fix: " + c.Fix
			}
			fmt.Fprintln(e.stdout, line)
		}
	}
	if !healthy {
		// The report said what is wrong; nothing more goes to stderr.
		return &exitError{code: 1}
	}
	return nil
}

// doctor runs the checks. Later checks use what earlier ones found: the
// agent's session and the store.
type doctor struct {
	svc  *tools.Service
	id   identity // what the flags say of the agent and the tmux server
	home string   // "" when unknown
	sess *tmux.Session
	st   *mailbox.Store
}

func (d *doctor) run(ctx context.Context) []check {
	var out []check
	out = append(out, d.tmuxCheck(ctx), d.agentCheck(ctx), d.rootCheck(), d.permissionsCheck())
	out = append(out, d.namesCheck(), d.namedCheck(ctx), d.mailmanCheck(), d.stateCheck(ctx))
	out = append(out, d.claudeChecks(ctx)...)
	out = append(out, d.codexChecks(ctx)...)
	out = append(out, d.geminiChecks(ctx)...)
	return out
}

func problem(name, detail, fix string) check {
	return check{Name: name, Level: levelProblem, Detail: detail, Fix: fix}
}
func info(name, detail, fix string) check {
	return check{Name: name, Level: levelInfo, Detail: detail, Fix: fix}
}
func ok(name, detail string) check { return check{Name: name, Level: levelOK, Detail: detail} }

// rootOr returns the project root, or def when none was found.
func (d *doctor) rootOr(def string) string {
	if d.st != nil {
		return d.st.Root
	}
	return def
}
