package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestParseCodexServers pins what doctor takes from Codex's config.toml:
// quoted keys and strings, comments, arrays over several lines, inline
// and sub-table env, entries that are not agentmail's, fields of the
// wrong type, and a file that is not TOML.
func TestParseCodexServers(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       []mcpServer
		wantErr    bool
	}{
		{"none", "model = \"x\"\n[mcp_servers.other]\ncommand = \"other\"\n", nil, false},
		{"by name", "[mcp_servers.agentmail]\ncommand = \"agentmail\"\nargs = [\"mcp\"]\nenv_vars = [\"TMUX\", \"TMUX_PANE\"]\n",
			[]mcpServer{{name: "agentmail", command: "agentmail", args: []string{"mcp"}, envVars: []string{"TMUX", "TMUX_PANE"}, env: map[string]string{}}}, false},
		{"by command, quoted, multi-line", "[mcp_servers.\"mail\"] # mine\ncommand = '/usr/bin/agentmail'\nargs = [\n  \"mcp\", # the server\n  \"--agent\",\n  \"a#b\",\n]\n[other]\ncommand = \"x\"\n",
			[]mcpServer{{name: "mail", command: "/usr/bin/agentmail", args: []string{"mcp", "--agent", "a#b"}, env: map[string]string{}}}, false},
		{"inline env", "[mcp_servers.agentmail]\ncommand = \"agentmail\"\nenv = { \"TMUX\" = \"a,b\", TMUX_PANE = \"%1\" }\n",
			[]mcpServer{{name: "agentmail", command: "agentmail", env: map[string]string{"TMUX": "a,b", "TMUX_PANE": "%1"}}}, false},
		{"env table", "[mcp_servers.agentmail.env]\nTMUX_PANE = \"%2\"\n[mcp_servers.agentmail]\ncommand = \"agentmail\"\n",
			[]mcpServer{{name: "agentmail", command: "agentmail", env: map[string]string{"TMUX_PANE": "%2"}}}, false},
		{"array of tables is not a server", "[[mcp_servers.agentmail]]\ncommand = \"agentmail\"\n", nil, false},
		{"url", "[mcp_servers.agentmail]\nurl = \"http://127.0.0.1:8765/mcp\"\n",
			[]mcpServer{{name: "agentmail", url: "http://127.0.0.1:8765/mcp", env: map[string]string{}}}, false},
		{"wrong types read as absent", "[mcp_servers.agentmail]\ncommand = \"agentmail\"\nenv_vars = \"TMUX\"\nargs = [\"mcp\", 1]\nenv = { TMUX = 1 }\n",
			[]mcpServer{{name: "agentmail", command: "agentmail", args: []string{"mcp"}, env: map[string]string{}}}, false},
		{"several, by name", "[mcp_servers.b]\ncommand = \"agentmail\"\n[mcp_servers.a]\ncommand = \"agentmail\"\n",
			[]mcpServer{{name: "a", command: "agentmail", env: map[string]string{}}, {name: "b", command: "agentmail", env: map[string]string{}}}, false},
		{"not TOML", "[mcp_servers.agentmail]\ncommand = agentmail\n", nil, true},
		{"mcp_servers not a table", "mcp_servers = 1\n", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCodexServers(tc.toml)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
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
