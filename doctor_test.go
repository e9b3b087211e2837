package main

import (
	"encoding/json"
	"reflect"
	"strings"
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
		{"http headers", "[mcp_servers.agentmail]\nurl = \"http://127.0.0.1:8765/mcp\"\nbearer_token_env_var = \"AGENTMAIL_TOKEN\"\nenv_http_headers = { \"Agentmail-Pane\" = \"TMUX_PANE\" }\nhttp_headers = { \"Agentmail-Agent\" = \"bob\", X = 1 }\n",
			[]mcpServer{{name: "agentmail", url: "http://127.0.0.1:8765/mcp", env: map[string]string{}, bearerVar: "AGENTMAIL_TOKEN",
				envHeaders: map[string]string{"Agentmail-Pane": "TMUX_PANE"}, headers: map[string]string{"Agentmail-Agent": "bob"}}}, false},
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

// TestStandardJSON checks that comments go, strings that look like
// comments stay, offsets do not move, and trailing commas, which no
// assistant takes, stay for encoding/json to refuse.
func TestStandardJSON(t *testing.T) {
	in := `{ // a
  "u": "http://x/*y*/", /* b
  c */ "e": "a\"//b", "l": [1, /* c */ 2] }`
	std := standardJSON([]byte(in))
	if len(std) != len(in) || strings.Count(string(std), "\n") != strings.Count(in, "\n") {
		t.Errorf("offsets moved: %q", std)
	}
	var got map[string]any
	if err := json.Unmarshal(std, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"u": "http://x/*y*/", "e": `a"//b`, "l": []any{1.0, 2.0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, in := range []string{`{"a": 1,}`, `{"a": [1, 2,]}`, `{"a": {"b": 1, /* c */}}`} {
		if err := json.Unmarshal(standardJSON([]byte(in)), new(any)); err == nil {
			t.Errorf("%s: no error, want one for the trailing comma", in)
		}
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
