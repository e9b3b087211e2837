package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"
)

// An mcpServer is the agentmail entry of an assistant's configuration.
type mcpServer struct {
	where   string // the file, as shown to the user, and the entry's scope
	name    string // the entry's name in the file
	command string
	args    []string
	url     string
	env     map[string]string
	envVars []string // Codex: variables passed through from its environment
	// The headers of an HTTP entry: values that may name variables
	// ($VAR, ${VAR}); Codex's headers taken from variables, by header;
	// and the variable of Codex's bearer token.
	headers    map[string]string
	envHeaders map[string]string
	bearerVar  string
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
	if err := json.Unmarshal(standardJSON(data), &top); err != nil {
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
		Headers map[string]string `json:"headers"`
	}
	if raw, ok := top["mcpServers"]; !ok || json.Unmarshal(raw, &servers) != nil {
		return nil, nil
	}
	var out []mcpServer
	for name, s := range servers {
		if isAgentmail(name, s.Command) {
			out = append(out, mcpServer{where: where, name: name, command: s.Command, args: s.Args, url: s.URL + s.HTTPURL, env: s.Env, headers: s.Headers})
		}
	}
	// Map order is random; the report's is not.
	slices.SortFunc(out, func(a, b mcpServer) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// standardJSON blanks the comments in data, which Gemini CLI allows in its
// settings, with hujson's Standardize: offsets stay, so encoding/json's
// errors point where they would. Standardize also drops trailing commas,
// which neither Claude Code nor Gemini CLI takes, so data with one, like
// data that hujson cannot parse, returns as it is for encoding/json to
// refuse.
func standardJSON(data []byte) []byte {
	v, err := hujson.Parse(data)
	if err != nil || hasTrailingComma(&v) {
		return data
	}
	v.Standardize()
	return v.Pack()
}

// hasTrailingComma reports whether an object or array in v ends in a
// comma, which hujson marks by a non-nil AfterExtra on its last value.
func hasTrailingComma(v *hujson.Value) bool {
	for x := range v.All() {
		var last *hujson.Value
		switch c := x.Value.(type) {
		case *hujson.Object:
			if n := len(c.Members); n > 0 {
				last = &c.Members[n-1].Value
			}
		case *hujson.Array:
			if n := len(c.Elements); n > 0 {
				last = &c.Elements[n-1]
			}
		}
		if last != nil && last.AfterExtra != nil {
			return true
		}
	}
	return false
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
func (d *doctor) claudeChecks(ctx context.Context) []check {
	var servers []mcpServer
	var errs []error
	var looked []string
	add := func(s []mcpServer, err error) {
		servers = append(servers, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	var project, local, user, claudeJSON string
	if d.st != nil {
		f := filepath.Join(d.st.Root, ".mcp.json")
		project = d.show(f)
		looked = append(looked, project)
		add(readJSONServers(f, project))
	}
	home := d.home
	if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		home = dir
	}
	if home != "" {
		claudeJSON = filepath.Join(home, ".claude.json")
		looked = append(looked, d.show(claudeJSON))
		user = d.show(claudeJSON) + " (user)"
		add(readJSONServers(claudeJSON, user))
		if d.st != nil {
			local = d.show(claudeJSON) + " (project " + d.st.Root + ")"
			add(readJSONServers(claudeJSON, local, "projects", d.st.Root))
		}
	}
	judge := func(s mcpServer) check {
		if s.where == project && d.home != "" {
			if why := d.claudeApproval(d.st.Root, claudeJSON, s.name); why != "" {
				return problem("", "agentmail configured, but "+why, "start claude in this folder and approve the server, or add \"enabledMcpjsonServers\": [\""+s.name+"\"] to .claude/settings.local.json")
			}
		}
		if s.url != "" {
			return judgeHTTP(ctx, s)
		}
		if k, v := s.fixedTmux(true); k != "" {
			return problem("", fmt.Sprintf("env fixes %s=%s: every session would act as that one pane", k, v),
				"remove TMUX and TMUX_PANE from its env; Claude Code passes its own")
		}
		return ok("", "agentmail configured; Claude Code passes TMUX and TMUX_PANE")
	}
	out := assistantChecks("claude", servers, errs, looked, judge, "claude mcp add agentmail -- agentmail mcp (README, MCP set-up)")
	return append(out, claudeScopes(servers, project, local, user)...)
}

// geminiChecks looks at the project's and the user's settings.json of
// Gemini CLI, which gives MCP servers a sanitised environment: TMUX and
// TMUX_PANE arrive only through env, where it expands $VAR.
func (d *doctor) geminiChecks(ctx context.Context) []check {
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
	untrusted := ""
	if d.st != nil {
		untrusted = d.geminiTrust(d.st.Root)
	}
	judge := func(s mcpServer) check {
		if untrusted != "" {
			return problem("", "Gemini CLI disables its MCP servers in this folder: "+untrusted,
				"trust the folder when Gemini CLI asks (or /permissions); for headless runs, gemini --skip-trust or GEMINI_CLI_TRUST_WORKSPACE=true")
		}
		if s.url != "" {
			return judgeHTTP(ctx, s)
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

// codexChecks looks at Codex's user and project config.toml. Codex passes
// an MCP server only a short fixed list of variables, plus those named in
// env_vars; it does not expand $VAR in env.
func (d *doctor) codexChecks(ctx context.Context) []check {
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
		s, err := readCodexServers(f, d.show(f))
		servers = append(servers, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	const addEnvVars = `add env_vars = ["TMUX", "TMUX_PANE"] to [mcp_servers.agentmail]`
	judge := func(s mcpServer) check {
		fix := strings.Replace(addEnvVars, ".agentmail]", "."+s.name+"]", 1)
		if s.url != "" {
			return judgeHTTP(ctx, s)
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

// readCodexServers returns the agentmail entries of a Codex config.toml.
// A missing file gives none.
func readCodexServers(file, where string) ([]mcpServer, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	servers, err := parseCodexServers(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	for i := range servers {
		servers[i].where = where
	}
	return servers, nil
}

// parseCodexServers returns the agentmail entries of the [mcp_servers]
// table of a Codex config.toml. The rest of the file only has to be TOML.
// Only the fields doctor judges are read, and a field of another type
// than Codex's reads as absent: doctor reports what is missing rather
// than refuse the file. An [[mcp_servers.NAME]] array is no server.
func parseCodexServers(data string) ([]mcpServer, error) {
	var cfg struct {
		MCPServers map[string]any `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(data, &cfg); err != nil {
		return nil, err
	}
	var out []mcpServer
	for name, v := range cfg.MCPServers {
		t, isTable := v.(map[string]any)
		command, _ := t["command"].(string)
		if !isTable || !isAgentmail(name, command) {
			continue
		}
		url, _ := t["url"].(string)
		bearer, _ := t["bearer_token_env_var"].(string)
		s := mcpServer{name: name, command: command, url: url, env: map[string]string{},
			args: stringsOf(t["args"]), envVars: stringsOf(t["env_vars"]), bearerVar: bearer,
			headers: stringMap(t["http_headers"]), envHeaders: stringMap(t["env_http_headers"])}
		env, _ := t["env"].(map[string]any)
		for k, v := range env {
			if v, ok := v.(string); ok {
				s.env[k] = v
			}
		}
		out = append(out, s)
	}
	// Map order is random; the report's is not.
	slices.SortFunc(out, func(a, b mcpServer) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// stringMap returns the string values of a decoded TOML table.
func stringMap(v any) map[string]string {
	t, _ := v.(map[string]any)
	var out map[string]string
	for k, x := range t {
		if s, ok := x.(string); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = s
		}
	}
	return out
}

// stringsOf returns the strings of a decoded TOML array.
func stringsOf(v any) []string {
	a, _ := v.([]any)
	var out []string
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
