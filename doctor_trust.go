package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An assistant may ignore an entry it reads: Gemini CLI in a folder it
// does not trust, Claude Code for a project server nobody approved, or
// for one another scope's entry of the same name hides. Each leaves the
// model without agentmail's tools and says nothing.

// readJSONFile decodes the JSON file path into v; a missing or unreadable
// file leaves v as it was.
func readJSONFile(path string, v any) {
	if data, err := os.ReadFile(path); err == nil {
		json.Unmarshal(standardJSON(data), v)
	}
}

// geminiTrust reports why Gemini CLI would not trust root, the project's
// folder, or "" when it would: folder trust is on unless settings turn it
// off, and a folder is trusted by a rule of ~/.gemini/trustedFolders.json
// for it or a folder above it (TRUST_FOLDER for the folder, TRUST_PARENT
// for the parent of the path it names), the nearest rule winning.
func (d *doctor) geminiTrust(root string) string {
	if d.home == "" || os.Getenv("GEMINI_CLI_TRUST_WORKSPACE") == "true" {
		return ""
	}
	var settings struct {
		Security struct {
			FolderTrust struct {
				Enabled *bool `json:"enabled"`
			} `json:"folderTrust"`
		} `json:"security"`
	}
	readJSONFile(filepath.Join(d.home, ".gemini", "settings.json"), &settings)
	if e := settings.Security.FolderTrust.Enabled; e != nil && !*e {
		return ""
	}
	rules := map[string]string{}
	file := filepath.Join(d.home, ".gemini", "trustedFolders.json")
	readJSONFile(file, &rules)
	best, trusted := "", false
	for path, rule := range rules {
		dir := filepath.Clean(path)
		if rule == "TRUST_PARENT" {
			dir = filepath.Dir(dir)
		}
		// The nearest rule wins; of two for one folder, distrust.
		if !within(root, dir) || len(dir) < len(best) || len(dir) == len(best) && best != "" && rule != "DO_NOT_TRUST" {
			continue
		}
		best, trusted = dir, rule == "TRUST_FOLDER" || rule == "TRUST_PARENT"
	}
	switch {
	case trusted:
		return ""
	case best != "":
		return fmt.Sprintf("%s marks %s untrusted", d.show(file), best)
	}
	return fmt.Sprintf("folder trust is on and no rule of %s trusts %s", d.show(file), root)
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// claudeSettings is what Claude Code's settings and ~/.claude.json say of
// a project's .mcp.json servers.
type claudeSettings struct {
	EnableAll bool     `json:"enableAllProjectMcpServers"`
	Enabled   []string `json:"enabledMcpjsonServers"`
	Disabled  []string `json:"disabledMcpjsonServers"`
}

// claudeApproval reports why Claude Code would not use the .mcp.json
// server name of the project at root, or "" when it would: a project's
// server needs approval, which the settings files of the user and of the
// project, and the project's entry in ~/.claude.json, record.
func (d *doctor) claudeApproval(root, claudeJSON, name string) string {
	var all claudeSettings
	add := func(s claudeSettings) {
		all.EnableAll = all.EnableAll || s.EnableAll
		all.Enabled = append(all.Enabled, s.Enabled...)
		all.Disabled = append(all.Disabled, s.Disabled...)
	}
	for _, f := range []string{
		filepath.Join(d.home, ".claude", "settings.json"),
		filepath.Join(root, ".claude", "settings.json"),
		filepath.Join(root, ".claude", "settings.local.json"),
	} {
		var s claudeSettings
		readJSONFile(f, &s)
		add(s)
	}
	var top struct {
		Projects map[string]claudeSettings `json:"projects"`
	}
	readJSONFile(claudeJSON, &top)
	add(top.Projects[root])
	switch {
	case slices.Contains(all.Disabled, name):
		return "it is disabled (disabledMcpjsonServers)"
	case all.EnableAll || slices.Contains(all.Enabled, name):
		return ""
	}
	return "it waits for approval: Claude Code asks once before it starts a project's .mcp.json server"
}

// claudeScopes returns a line for each agentmail entry of Claude Code that
// another scope's entry of the same name hides: a local entry (in
// ~/.claude.json, for this project) hides the project's (.mcp.json), which
// hides the user's.
func claudeScopes(servers []mcpServer, project, local, user string) []check {
	scope := func(s mcpServer) string {
		switch {
		case strings.HasSuffix(s.where, "(user)"):
			return user
		case s.where == project:
			return project
		}
		return local
	}
	var out []check
	for _, s := range servers {
		for _, over := range servers {
			if over.name != s.name || rank(scope(over), project, local) <= rank(scope(s), project, local) {
				continue
			}
			out = append(out, info("claude", fmt.Sprintf("%s: its entry %q is hidden by the one in %s, which Claude Code uses", s.where, s.name, over.where),
				"keep one of them (claude mcp remove "+s.name+" -s <scope>)"))
			break
		}
	}
	return out
}

// rank orders the scopes of Claude Code's entries: local over project
// over user.
func rank(scope, project, local string) int {
	switch scope {
	case local:
		return 2
	case project:
		return 1
	}
	return 0
}
