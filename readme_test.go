package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestReadmeJSON checks the JSON snippets of the README that people paste
// into their assistants' settings: each one parses, and every agentmail
// command in a hook names a command that exists.
func TestReadmeJSON(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "\n```json\n")
		if !ok {
			break
		}
		block, after, ok := strings.Cut(after, "\n```")
		if !ok {
			t.Fatal("README: a ```json block is not closed")
		}
		rest = after
		blocks++
		var v any
		if err := json.Unmarshal([]byte(block), &v); err != nil {
			t.Errorf("README json block %d does not parse: %v\n%s", blocks, err, block)
			continue
		}
		for _, c := range hookCommands(v) {
			for _, part := range strings.Split(c, "&&") {
				f := strings.Fields(part)
				if len(f) < 2 || f[0] != "agentmail" || lookup(f[1]) == nil {
					t.Errorf("README json block %d: hook command %q runs no agentmail command", blocks, part)
				}
			}
		}
	}
	if blocks < 5 {
		t.Errorf("README has %d json blocks, want at least 5 (three MCP set-ups, hooks)", blocks)
	}
}

// hookCommands returns the "command" strings inside any "hooks" list of v.
func hookCommands(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if c, ok := v["command"].(string); ok && v["type"] == "command" {
			out = append(out, c)
		}
		for _, x := range v {
			out = append(out, hookCommands(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, hookCommands(x)...)
		}
	}
	return out
}
