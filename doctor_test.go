package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestParseCodexServers pins the part of TOML that doctor reads: table
// headers, quoted keys and strings, comments, arrays over several lines,
// inline and sub-table env, and entries that are not agentmail's.
func TestParseCodexServers(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       []mcpServer
	}{
		{"none", "model = \"x\"\n[mcp_servers.other]\ncommand = \"other\"\n", nil},
		{"by name", "[mcp_servers.agentmail]\ncommand = \"agentmail\"\nargs = [\"mcp\"]\nenv_vars = [\"TMUX\", \"TMUX_PANE\"]\n",
			[]mcpServer{{name: "agentmail", command: "agentmail", args: []string{"mcp"}, envVars: []string{"TMUX", "TMUX_PANE"}, env: map[string]string{}}}},
		{"by command, quoted, multi-line", "[mcp_servers.\"mail\"] # mine\ncommand = '/usr/bin/agentmail'\nargs = [\n  \"mcp\", # the server\n  \"--agent\",\n  \"a#b\",\n]\n[other]\ncommand = \"x\"\n",
			[]mcpServer{{name: "mail", command: "/usr/bin/agentmail", args: []string{"mcp", "--agent", "a#b"}, env: map[string]string{}}}},
		{"inline env", "[mcp_servers.agentmail]\ncommand = \"agentmail\"\nenv = { \"TMUX\" = \"a,b\", TMUX_PANE = \"%1\" }\n",
			[]mcpServer{{name: "agentmail", command: "agentmail", env: map[string]string{"TMUX": "a,b", "TMUX_PANE": "%1"}}}},
		{"env table", "[mcp_servers.agentmail.env]\nTMUX_PANE = \"%2\"\n[mcp_servers.agentmail]\ncommand = \"agentmail\"\n",
			[]mcpServer{{name: "agentmail", command: "agentmail", env: map[string]string{"TMUX_PANE": "%2"}}}},
		{"array of tables is not a server", "[[mcp_servers.agentmail]]\ncommand = \"agentmail\"\n", nil},
		{"url", "[mcp_servers.agentmail]\nurl = \"http://127.0.0.1:8765/mcp\"\n",
			[]mcpServer{{name: "agentmail", url: "http://127.0.0.1:8765/mcp", env: map[string]string{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseCodexServers(tc.toml); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestStripJSONComments checks that comments go and strings that look
// like comments stay.
func TestStripJSONComments(t *testing.T) {
	in := `{ // a
  "u": "http://x/*y*/", /* b
  c */ "e": "a\"//b" }`
	var got map[string]string
	if err := json.Unmarshal(stripJSONComments([]byte(in)), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"u": "http://x/*y*/", "e": `a"//b`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestFixedTmux checks which env values take the assistant's own tmux
// variables and which fix one.
func TestFixedTmux(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		expands bool
		want    string
	}{
		{nil, true, ""},
		{map[string]string{"TMUX": "$TMUX", "TMUX_PANE": "${TMUX_PANE}"}, true, ""},
		{map[string]string{"TMUX_PANE": "${TMUX_PANE:-}"}, true, ""},
		{map[string]string{"TMUX_PANE": "%3"}, true, "TMUX_PANE"},
		{map[string]string{"TMUX_PANE": "$TMUX"}, true, "TMUX_PANE"},
		{map[string]string{"TMUX_PANE": "$TMUX_PANE"}, false, "TMUX_PANE"},
		{map[string]string{"AGENTMAIL_ROOT": "/x"}, false, ""},
	} {
		s := &mcpServer{env: tc.env}
		if got, _ := s.fixedTmux(tc.expands); got != tc.want {
			t.Errorf("fixedTmux(%v, expands %v) = %q, want %q", tc.env, tc.expands, got, tc.want)
		}
	}
}
