package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentmail/internal/text"
	"agentmail/mailbox"
	"agentmail/mailman"
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
	d := &doctor{svc: e.service("warning: "), id: e.id}
	d.home, _ = os.UserHomeDir()
	checks := d.run(ctx)
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
	out = append(out, d.namesCheck(), d.mailmanCheck(), d.stateCheck(ctx))
	out = append(out, d.claudeChecks()...)
	out = append(out, d.codexChecks()...)
	out = append(out, d.geminiChecks()...)
	return out
}

func problem(name, detail, fix string) check {
	return check{Name: name, Level: levelProblem, Detail: detail, Fix: fix}
}
func info(name, detail, fix string) check {
	return check{Name: name, Level: levelInfo, Detail: detail, Fix: fix}
}
func ok(name, detail string) check { return check{Name: name, Level: levelOK, Detail: detail} }

// tmuxCheck finds the tmux that every other command runs, as they do: by
// name on PATH.
func (d *doctor) tmuxCheck(ctx context.Context) check {
	path, err := exec.LookPath("tmux")
	if err != nil {
		return problem("tmux", "tmux not found on PATH", "install tmux, or add its directory to PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-V").Output()
	if err != nil {
		return problem("tmux", fmt.Sprintf("%s -V failed: %v", path, err), "reinstall tmux")
	}
	return ok("tmux", fmt.Sprintf("%s (%s)", strings.TrimSpace(string(out)), path))
}

// agentCheck asks tmux who this is, exactly as send and receive do.
func (d *doctor) agentCheck(ctx context.Context) check {
	const fix = "run agentmail in a shell of a tmux window, where $TMUX and $TMUX_PANE are set; an assistant must pass both to its MCP server, or name the agent (--agent, $AGENTMAIL_AGENT) and the tmux socket (--tmux-socket, $AGENTMAIL_TMUX_SOCKET)"
	if d.svc.Term == nil {
		err := d.svc.TermErr
		if err == nil {
			err = tmux.ErrNotInTmux
		}
		return problem("agent", err.Error(), fix)
	}
	sess, err := d.svc.Term.Session(ctx)
	if err != nil {
		if tools.NotInTmux(err) {
			return problem("agent", err.Error(), "$TMUX_PANE names a pane that is gone (a shell left over from an earlier tmux?): "+fix)
		}
		return problem("agent", err.Error(), "")
	}
	if err := mailbox.ValidName(sess.Self.Name); err != nil {
		return problem("agent", fmt.Sprintf("window name %q cannot be an agent's address: %v", sess.Self.Name, err),
			"tmux rename-window -t "+sess.Self.ID+" NAME")
	}
	d.sess = sess
	detail := fmt.Sprintf("%q (pane %s, window %s", sess.Self.Name, sess.Self.Pane, sess.Self.ID)
	switch {
	case d.id.agent != "":
		detail += ", named by --agent"
	case os.Getenv(agentEnv) != "":
		detail += ", named by $" + agentEnv
	}
	switch {
	case d.id.socket != "":
		detail += ", tmux socket " + d.id.socket + " from --tmux-socket"
	case os.Getenv(socketEnv) != "":
		detail += ", tmux socket " + os.Getenv(socketEnv) + " from $" + socketEnv
	}
	return ok("agent", detail+")")
}

// rootCheck reports the root every command uses, and how it was found.
func (d *doctor) rootCheck() check {
	if d.svc.Store == nil {
		err := d.svc.StoreErr
		if err == nil {
			err = errors.New("no project root")
		}
		fix := "run inside a git repository, or set " + mailbox.RootEnv + " to the absolute path of the project"
		if os.Getenv(mailbox.RootEnv) != "" {
			fix = "set " + mailbox.RootEnv + " to the absolute path of an existing directory, or unset it"
		}
		return problem("root", err.Error(), fix)
	}
	d.st = d.svc.Store
	root := d.st.Root
	if os.Getenv(mailbox.RootEnv) == "" {
		return ok("root", root+" (it holds .git)")
	}
	detail := root + " (from $" + mailbox.RootEnv + ")"
	// A hook or MCP server started without the variable finds the root by
	// .git instead: worth saying when that is another directory.
	if cwd, err := os.Getwd(); err == nil {
		if git, err := mailbox.FindRoot(cwd, func(string) string { return "" }); err == nil && git != root {
			detail += "; without it, .git would make it " + git + ": every hook and MCP server must have it too"
		}
	}
	return ok("root", detail)
}

// permissionsCheck checks .agentmail and everything in it: mail is
// private (0700, 0600) and must be readable and writable by this user.
func (d *doctor) permissionsCheck() check {
	const name = "permissions"
	if d.st == nil {
		return info(name, "not checked: no project root", "")
	}
	dir := d.st.Dir()
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if !writable(d.st.Root) {
			return problem(name, d.st.Root+" is not writable, so .agentmail cannot be created there", "make the root writable for you")
		}
		return ok(name, ".agentmail does not exist yet; the first send or status creates it")
	}
	if err != nil {
		return problem(name, err.Error(), "")
	}
	if !fi.IsDir() {
		return problem(name, dir+" is not a directory", "remove "+dir)
	}
	var issues []string
	var wide, foreign, locked, odd bool
	look := func(rel string, fi fs.FileInfo) {
		mode := fi.Mode()
		want := fs.FileMode(0o600)
		switch {
		case mode.IsDir():
			want = 0o700
		case mode&fs.ModeSymlink != 0:
			odd = true
			issues = append(issues, rel+" is a symbolic link")
			return
		case !mode.IsRegular():
			odd = true
			issues = append(issues, rel+" is not a regular file")
			return
		}
		if uid, mine := ownedByMe(fi); !mine {
			foreign = true
			issues = append(issues, fmt.Sprintf("%s is owned by uid %d", rel, uid))
		}
		switch perm := mode.Perm(); {
		case perm&0o077 != 0:
			wide = true
			issues = append(issues, fmt.Sprintf("%s is %04o, not %04o", rel, perm, want))
		case perm&want != want:
			locked = true
			issues = append(issues, fmt.Sprintf("%s is %04o, not %04o", rel, perm, want))
		}
	}
	look(".agentmail", fi)
	if !writable(dir) {
		locked = true
		issues = append(issues, ".agentmail is not writable by you")
	}
	err = filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			issues = append(issues, err.Error())
			return nil
		}
		if path == dir {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		rel, _ := filepath.Rel(d.st.Root, path)
		look(rel, fi)
		return nil
	})
	if err != nil {
		issues = append(issues, err.Error())
	}
	if len(issues) == 0 {
		return ok(name, ".agentmail is 0700 and its files 0600, all yours")
	}
	detail := strings.Join(issues[:min(3, len(issues))], ", ")
	if len(issues) > 3 {
		detail += fmt.Sprintf(" and %d more", len(issues)-3)
	}
	var fixes []string
	if foreign {
		fixes = append(fixes, "sudo chown -R "+userName()+" "+dir)
	}
	if wide || locked {
		fixes = append(fixes, "chmod -R u+rwX,go-rwx "+dir)
	}
	if odd {
		fixes = append(fixes, "remove what is not a directory or a regular file")
	}
	return problem(name, detail, strings.Join(fixes, "; "))
}

// userName is the name of this user for a chown command.
func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return fmt.Sprint(os.Getuid())
}

// namesCheck finds names that several windows of the session share: such
// windows would read each other's mail, so send and receive refuse them.
func (d *doctor) namesCheck() check {
	const name = "names"
	if d.sess == nil {
		return info(name, "not checked: not inside tmux", "")
	}
	ignored := map[string]bool{}
	if d.st != nil {
		var err error
		if ignored, err = d.st.Ignored(); err != nil {
			return problem(name, err.Error(), "")
		}
	}
	self := d.sess.Self.Name
	var others, seen []string
	for _, w := range d.sess.Windows {
		if ignored[w.Name] || slices.ContainsFunc(seen, func(n string) bool { return mailbox.SameMailbox(n, w.Name) }) {
			continue
		}
		seen = append(seen, w.Name)
		n, otherCase := 0, false
		for _, x := range d.sess.Windows {
			if mailbox.SameMailbox(x.Name, w.Name) {
				n++
				otherCase = otherCase || x.Name != w.Name
			}
		}
		if n < 2 {
			continue
		}
		if mailbox.SameMailbox(w.Name, self) {
			err := &tools.SharedNameError{Name: self, Windows: n, Own: true, Case: otherCase}
			return problem(name, err.Error(), "tmux rename-window -t "+d.sess.Self.ID+" NEWNAME, or rename the other window")
		}
		others = append(others, fmt.Sprintf("%q (%d windows)", w.Name, n))
	}
	if ignored[self] {
		return info(name, fmt.Sprintf("%q is listed in .agentmailignore: no agent can write to it", self), "remove it from .agentmailignore if it is an agent")
	}
	if len(others) > 0 {
		return info(name, "no mail can reach these names, each shared by several windows: "+strings.Join(others, ", "),
			"rename all but one window of each (tmux rename-window), or list the name in .agentmailignore if it is no agent")
	}
	return ok(name, fmt.Sprintf("no other window is named %q", self))
}

// mailmanCheck reports whether the mailman of this root runs. Its absence
// is not a problem: an assistant with a wake hook needs none.
func (d *doctor) mailmanCheck() check {
	const name = "mailman"
	if d.st == nil {
		return info(name, "not checked: no project root", "")
	}
	pid, err := mailman.Running(mailman.PIDPath(d.st))
	switch {
	case err != nil:
		return problem(name, err.Error(), "")
	case pid == 0:
		return info(name, "not running: nobody rings an idle agent when mail arrives (Claude Code's watch --hook wakes it without one)",
			"agentmail mailman --daemon, for Codex and Gemini CLI agents")
	}
	return ok(name, fmt.Sprintf("running (PID: %d)", pid))
}

// stateCheck reports this agent's status and unread mail, as the mailman
// sees them.
func (d *doctor) stateCheck(ctx context.Context) check {
	const name = "state"
	switch {
	case d.sess == nil:
		return info(name, "not checked: not inside tmux", "")
	case d.st == nil:
		return info(name, "not checked: no project root", "")
	}
	self := d.sess.Self.Name
	ctx, cancel := context.WithTimeout(ctx, tools.DefaultLockWait)
	defer cancel()
	states, err := d.st.States(ctx)
	if err != nil {
		return problem(name, err.Error(), "")
	}
	unread, err := d.st.Unread(ctx, self)
	if err != nil {
		return problem(name, err.Error(), "")
	}
	mail := fmt.Sprintf("%d unread", unread)
	i := slices.IndexFunc(states, func(s mailbox.State) bool { return s.Recipient == self })
	if i < 0 {
		return info(name, fmt.Sprintf("%q has no status yet, %s", self, mail), "the assistant's hooks set it (README, Hook set-up), or agentmail status ready")
	}
	status := states[i].Status
	detail := fmt.Sprintf("%q is %s, %s", self, status, mail)
	if status == mailbox.StatusOffline {
		return info(name, detail+"; the mailman does not ring it", "agentmail status ready, once the agent runs")
	}
	return ok(name, detail)
}

// An mcpServer is the agentmail entry of an assistant's configuration.
type mcpServer struct {
	where   string // the file, as shown to the user, and the entry's scope
	name    string // the entry's name in the file
	command string
	args    []string
	url     string
	env     map[string]string
	envVars []string // Codex: variables passed through from its environment
}

// isAgentmail reports whether a server entry runs agentmail: it is named
// so, or its command is.
func isAgentmail(name, command string) bool {
	return name == "agentmail" || filepath.Base(command) == "agentmail"
}

// show shortens path for the report: relative to the root, or as ~/… below
// HOME, whichever of the two holds it more closely.
func (d *doctor) show(path string) string {
	best, shown := "", path
	try := func(base, prefix string) {
		if base == "" || len(base) <= len(best) {
			return
		}
		if rel, err := filepath.Rel(base, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			best, shown = base, prefix+rel
		}
	}
	try(d.rootOr(""), "")
	try(d.home, "~/")
	return shown
}

// namesAgent reports whether a server's command line or environment names
// the agent explicitly, which needs no tmux variables to find out who it is.
func (s *mcpServer) namesAgent() bool {
	if _, ok := s.env[agentEnv]; ok {
		return true
	}
	return hasFlag(s.args, "agent")
}

// namesSocket reports whether a server's command line or environment names
// the tmux server by its socket, which a server without $TMUX needs.
func (s *mcpServer) namesSocket() bool {
	if _, ok := s.env[socketEnv]; ok {
		return true
	}
	return slices.Contains(s.envVars, socketEnv) || hasFlag(s.args, "tmux-socket")
}

// hasFlag reports whether args hold the flag name, in any of the forms
// that agentmail takes.
func hasFlag(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "--"+name || a == "-"+name || strings.HasPrefix(a, "--"+name+"=") || strings.HasPrefix(a, "-"+name+"=")
	})
}

// fixedTmux returns the first of TMUX and TMUX_PANE that s's env sets to
// a value that does not come from the assistant's own environment: every
// session of the assistant would then act as that one pane. expands says
// whether the assistant expands $VAR in env values.
func (s *mcpServer) fixedTmux(expands bool) (string, string) {
	for _, k := range []string{"TMUX", "TMUX_PANE"} {
		v, ok := s.env[k]
		if !ok {
			continue
		}
		// "$TMUX_PANE", "${TMUX_PANE}" and "${TMUX_PANE:-…}" take the
		// assistant's own value.
		own := v == "$"+k || strings.HasPrefix(v, "${"+k+"}") || strings.HasPrefix(v, "${"+k+":")
		if !expands || !own {
			return k, v
		}
	}
	return "", ""
}

// readJSONServers returns the agentmail entries of the "mcpServers" object
// at path inside a JSON file (path empty: at its top). A missing file
// gives none.
func readJSONServers(file, where string, path ...string) ([]mcpServer, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(stripJSONComments(data), &top); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	for _, p := range path {
		var next map[string]json.RawMessage
		if raw, ok := top[p]; !ok || json.Unmarshal(raw, &next) != nil {
			return nil, nil
		}
		top = next
	}
	var servers map[string]struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		URL     string            `json:"url"`
		HTTPURL string            `json:"httpUrl"`
		Env     map[string]string `json:"env"`
	}
	if raw, ok := top["mcpServers"]; !ok || json.Unmarshal(raw, &servers) != nil {
		return nil, nil
	}
	var out []mcpServer
	for name, s := range servers {
		if isAgentmail(name, s.Command) {
			out = append(out, mcpServer{where: where, name: name, command: s.Command, args: s.Args, url: s.URL + s.HTTPURL, env: s.Env})
		}
	}
	// Map order is random; the report's is not.
	slices.SortFunc(out, func(a, b mcpServer) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// stripJSONComments blanks // and /* */ comments outside strings, which
// Gemini CLI allows in its settings; the offsets of errors stay right.
func stripJSONComments(data []byte) []byte {
	out := slices.Clone(data)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := i + 2
			for j < len(out) && !(out[j] == '*' && j+1 < len(out) && out[j+1] == '/') {
				j++
			}
			for k := i; k < min(j+2, len(out)); k++ {
				if out[k] != '\n' {
					out[k] = ' '
				}
			}
			i = j + 1
		}
	}
	return out
}

// assistantChecks turns the entries found for one assistant into lines:
// one per entry, or one saying that none is configured.
func assistantChecks(name string, servers []mcpServer, errs []error, looked []string, judge func(mcpServer) check, howTo string) []check {
	var out []check
	for _, err := range errs {
		out = append(out, problem(name, "cannot read its configuration: "+err.Error(), "fix the file, or the assistant cannot read it either"))
	}
	for _, s := range servers {
		c := judge(s)
		c.Name = name
		c.Detail = s.where + ": " + c.Detail
		out = append(out, c)
	}
	if len(out) == 0 {
		out = append(out, info(name, "agentmail is not configured ("+strings.Join(looked, ", ")+")", howTo))
	}
	return out
}

// claudeChecks looks at Claude Code's project file and the user's
// ~/.claude.json (user scope, and the local scope of this project). Claude
// Code passes its own environment, TMUX and TMUX_PANE included.
func (d *doctor) claudeChecks() []check {
	var servers []mcpServer
	var errs []error
	var looked []string
	add := func(s []mcpServer, err error) {
		servers = append(servers, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if d.st != nil {
		f := filepath.Join(d.st.Root, ".mcp.json")
		looked = append(looked, d.show(f))
		add(readJSONServers(f, d.show(f)))
	}
	home := d.home
	if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		home = dir
	}
	if home != "" {
		f := filepath.Join(home, ".claude.json")
		looked = append(looked, d.show(f))
		add(readJSONServers(f, d.show(f)+" (user)"))
		if d.st != nil {
			add(readJSONServers(f, d.show(f)+" (project "+d.st.Root+")", "projects", d.st.Root))
		}
	}
	judge := func(s mcpServer) check {
		if s.url != "" {
			return ok("", "agentmail at "+s.url)
		}
		if k, v := s.fixedTmux(true); k != "" {
			return problem("", fmt.Sprintf("env fixes %s=%s: every session would act as that one pane", k, v),
				"remove TMUX and TMUX_PANE from its env; Claude Code passes its own")
		}
		return ok("", "agentmail configured; Claude Code passes TMUX and TMUX_PANE")
	}
	return assistantChecks("claude", servers, errs, looked, judge, "claude mcp add agentmail -- agentmail mcp (README, MCP set-up)")
}

// geminiChecks looks at the project's and the user's settings.json of
// Gemini CLI, which gives MCP servers a sanitised environment: TMUX and
// TMUX_PANE arrive only through env, where it expands $VAR.
func (d *doctor) geminiChecks() []check {
	var servers []mcpServer
	var errs []error
	var looked []string
	for _, dir := range []string{d.rootOr(""), d.home} {
		if dir == "" {
			continue
		}
		f := filepath.Join(dir, ".gemini", "settings.json")
		looked = append(looked, d.show(f))
		s, err := readJSONServers(f, d.show(f))
		servers = append(servers, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	const fix = `give it "env": {"TMUX": "$TMUX", "TMUX_PANE": "$TMUX_PANE"}`
	judge := func(s mcpServer) check {
		if s.url != "" {
			return ok("", "agentmail at "+s.url)
		}
		if k, v := s.fixedTmux(true); k != "" {
			return problem("", fmt.Sprintf("env sets %s to %q, not $%s: every session would act as that one pane", k, v, k), fix)
		}
		if s.namesAgent() {
			if _, ok := s.env["TMUX"]; !ok && !s.namesSocket() {
				return problem("", "it names its agent, but env does not pass TMUX and no --tmux-socket names the tmux server", `give it "env": {"TMUX": "$TMUX"}, or "--tmux-socket", PATH in args`)
			}
			return ok("", "agentmail configured, naming its agent explicitly")
		}
		var missing []string
		for _, k := range []string{"TMUX", "TMUX_PANE"} {
			if _, ok := s.env[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return problem("", "env does not pass "+strings.Join(missing, " and ")+", and Gemini CLI strips them from an MCP server's environment", fix)
		}
		return ok("", "agentmail configured; env passes TMUX and TMUX_PANE")
	}
	return assistantChecks("gemini", servers, errs, looked, judge, "add agentmail to mcpServers in .gemini/settings.json (README, MCP set-up)")
}

func (d *doctor) rootOr(def string) string {
	if d.st != nil {
		return d.st.Root
	}
	return def
}

// codexChecks looks at Codex's user and project config.toml. Codex passes
// an MCP server only a short fixed list of variables, plus those named in
// env_vars; it does not expand $VAR in env.
func (d *doctor) codexChecks() []check {
	var files []string
	codexHome := os.Getenv("CODEX_HOME")
	if codexHome == "" && d.home != "" {
		codexHome = filepath.Join(d.home, ".codex")
	}
	if codexHome != "" {
		files = append(files, filepath.Join(codexHome, "config.toml"))
	}
	if d.st != nil {
		files = append(files, filepath.Join(d.st.Root, ".codex", "config.toml"))
	}
	var servers []mcpServer
	var errs []error
	var looked []string
	for _, f := range files {
		looked = append(looked, d.show(f))
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range parseCodexServers(string(data)) {
			s.where = d.show(f)
			servers = append(servers, s)
		}
	}
	const addEnvVars = `add env_vars = ["TMUX", "TMUX_PANE"] to [mcp_servers.agentmail]`
	judge := func(s mcpServer) check {
		fix := strings.Replace(addEnvVars, ".agentmail]", "."+s.name+"]", 1)
		if s.url != "" {
			return ok("", "agentmail at "+s.url)
		}
		if k, v := s.fixedTmux(false); k != "" {
			why := "every session would act as that one pane"
			if strings.Contains(v, "$") {
				why = "Codex does not expand $ in env, and passes the text as it is"
			}
			return problem("", fmt.Sprintf("env sets %s to %q: %s", k, v, why), "remove it from env; "+fix)
		}
		if s.namesAgent() {
			if !slices.Contains(s.envVars, "TMUX") && !s.namesSocket() {
				return problem("", "args name the agent, but env_vars does not name TMUX and no --tmux-socket names the tmux server", `add env_vars = ["TMUX"] to [mcp_servers.`+s.name+`], or "--tmux-socket", PATH to its args`)
			}
			return ok("", "agentmail configured, naming its agent explicitly")
		}
		var missing []string
		for _, k := range []string{"TMUX", "TMUX_PANE"} {
			if !slices.Contains(s.envVars, k) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return problem("", "env_vars does not name "+strings.Join(missing, " and ")+", and Codex passes an MCP server only the variables it names", fix)
		}
		return ok("", "agentmail configured; env_vars passes TMUX and TMUX_PANE")
	}
	return assistantChecks("codex", servers, errs, looked, judge, "codex mcp add agentmail -- agentmail mcp, then "+addEnvVars+" (README, MCP set-up)")
}

// parseCodexServers reads just enough TOML to find the agentmail entries of
// [mcp_servers]: the table headers [mcp_servers.NAME] and
// [mcp_servers.NAME.env], and in them command, args, url, env_vars and env
// (an inline table), arrays spanning several lines included.
func parseCodexServers(data string) []mcpServer {
	servers := map[string]*mcpServer{}
	var order []string
	var cur *mcpServer
	inEnv := false
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(stripTOMLComment(lines[i]))
		if strings.HasPrefix(line, "[") {
			cur, inEnv = nil, false
			if strings.HasPrefix(line, "[[") || !strings.HasSuffix(line, "]") {
				continue
			}
			parts := splitTOMLKey(line[1 : len(line)-1])
			if len(parts) < 2 || parts[0] != "mcp_servers" || len(parts) > 3 || (len(parts) == 3 && parts[2] != "env") {
				continue
			}
			s := servers[parts[1]]
			if s == nil {
				s = &mcpServer{name: parts[1], env: map[string]string{}}
				servers[parts[1]] = s
				order = append(order, parts[1])
			}
			cur, inEnv = s, len(parts) == 3
			continue
		}
		if cur == nil {
			continue
		}
		key, value, found := strings.Cut(line, "=")
		if !found {
			continue
		}
		key, value = strings.Trim(strings.TrimSpace(key), `"'`), strings.TrimSpace(value)
		// An array may go on over the next lines.
		for strings.HasPrefix(value, "[") && strings.Count(value, "[") > strings.Count(value, "]") && i+1 < len(lines) {
			i++
			value += " " + strings.TrimSpace(stripTOMLComment(lines[i]))
		}
		if inEnv {
			if s := tomlStrings(value); len(s) > 0 {
				cur.env[key] = s[0]
			}
			continue
		}
		switch key {
		case "command":
			if s := tomlStrings(value); len(s) > 0 {
				cur.command = s[0]
			}
		case "url":
			if s := tomlStrings(value); len(s) > 0 {
				cur.url = s[0]
			}
		case "args":
			cur.args = tomlStrings(value)
		case "env_vars":
			cur.envVars = tomlStrings(value)
		case "env":
			// { KEY = "value", "KEY2" = "value" }: keys and values alternate.
			s := tomlInlineTable(value)
			for j := 0; j+1 < len(s); j += 2 {
				cur.env[s[j]] = s[j+1]
			}
		}
	}
	var out []mcpServer
	for _, name := range order {
		if s := servers[name]; isAgentmail(name, s.command) {
			out = append(out, *s)
		}
	}
	return out
}

// stripTOMLComment removes a # comment that is not inside a string.
func stripTOMLComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote == '"' && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '#':
			return line[:i]
		}
	}
	return line
}

// splitTOMLKey splits a dotted key, whose parts may be quoted.
func splitTOMLKey(key string) []string { return tomlTokens(key, ".") }

// tomlStrings returns the strings of a TOML string or array of strings.
func tomlStrings(value string) []string { return tomlTokens(strings.Trim(value, "[] "), ",") }

// tomlInlineTable returns the keys and values of an inline table of
// strings, alternating.
func tomlInlineTable(value string) []string {
	return tomlTokens(strings.Trim(value, "{} "), ",=")
}

// tomlTokens splits s at any of seps outside quotes, trims the pieces and
// unquotes quoted ones; empty pieces are dropped.
func tomlTokens(s, seps string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		t := strings.TrimSpace(b.String())
		b.Reset()
		if t != "" {
			out = append(out, t)
		}
	}
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '"' && c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b.WriteByte(c)
		case c == '"' || c == '\'':
			quote = c
		case strings.IndexByte(seps, c) >= 0:
			flush()
		default:
			b.WriteByte(c)
		}
	}
	flush()
	return out
}
