package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentmail/mcp"
	"agentmail/tools"
)

// The registry files (server.json, smithery.yaml, mcp-get.json,
// glama.json) are generated, never edited: name, title and tool list come
// from the MCP server's own initialize and tools/list answers, the
// description from the first line of "agentmail help", and the rest from
// the constants below. TestRegistryFiles fails when a file on disk differs
// from what the binary says today; "make registry" rewrites them.

var (
	updateRegistry = flag.Bool("update-registry", false, "rewrite the registry files from the server's own listing")
	mcpbBundle     = flag.String("mcpb", "", "with -update-registry: the release's .mcpb bundle, whose SHA-256 server.json records")
)

const (
	// registryOwner is the GitHub account the repository will be
	// published under (docs/install.md): the module path, the registry
	// namespace and every URL below follow from it.
	registryOwner = "agentmail-tmux"
	modulePath    = "github.com/" + registryOwner + "/agentmail"
	repoURL       = "https://" + modulePath

	// registryVersion is the release the registry files describe, without
	// the "v" of its tag. Raise it when tagging a release, then run
	// "make registry".
	registryVersion = "0.1.0"

	// mcpbAsset is the release asset the official registry installs: a
	// bundle of the static binaries (docs/install.md).
	mcpbAsset = "agentmail.mcpb"

	// serverSchemaURL is the official registry's current server.json
	// schema, kept in testdata/registry/server.schema.json.
	serverSchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
)

// registryEnv is the environment "agentmail mcp" reads. TMUX and
// TMUX_PANE say who the agent is; an assistant that filters its servers'
// environment (Codex, Gemini CLI) must be told to pass them through.
var registryEnv = []envVar{
	{Name: "TMUX", Required: true,
		Description: "The tmux server of the agent's session, as tmux sets it in every pane: pass it through from the assistant's environment."},
	{Name: "TMUX_PANE", Required: true,
		Description: "The agent's own tmux pane (%N), as tmux sets it: its window is the agent's address. Pass it through."},
	{Name: "AGENTMAIL_ROOT", Format: "filepath",
		Description: "The project root that holds .agentmail/. Default: the nearest directory upward that contains .git."},
}

type envVar struct {
	Name        string
	Description string
	Required    bool
	Format      string
}

// listing is what the server says about itself.
type listing struct {
	Name         string
	Title        string
	Description  string
	Capabilities []string
	Tools        []toolInfo
}

type toolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// serverListing asks an in-process MCP server, the one "agentmail mcp"
// runs, for its initialize and tools/list answers, and "agentmail help"
// for the one-line description.
func serverListing(t *testing.T) listing {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		// Neither answer needs tmux or a mailbox, so the service is empty.
		err := mcp.NewServer("test", nil).ServeStdio(ctx, inR, outW, &tools.Service{})
		outW.Close()
		done <- err
	}()
	out := bufio.NewReader(outR)
	call := func(line string) json.RawMessage {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		answer, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no answer to %s: %v", line, err)
		}
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(answer, &resp); err != nil || resp.Error != nil {
			t.Fatalf("answer to %s: %s (%v)", line, answer, err)
		}
		return resp.Result
	}
	var init struct {
		ServerInfo struct {
			Name  string `json:"name"`
			Title string `json:"title"`
		} `json:"serverInfo"`
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	mustUnmarshal(t, call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"registry","version":"0"}}}`), &init)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []toolInfo `json:"tools"`
	}
	mustUnmarshal(t, call(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), &list)
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}

	l := listing{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Tools: list.Tools}
	for c := range init.Capabilities {
		l.Capabilities = append(l.Capabilities, c)
	}
	slices.Sort(l.Capabilities)

	var help, stderr bytes.Buffer
	if code := run(ctx, []string{"help"}, strings.NewReader(""), &help, &stderr); code != 0 {
		t.Fatalf("agentmail help: exit %d: %s", code, stderr.String())
	}
	first, _, _ := strings.Cut(help.String(), "\n")
	desc, ok := strings.CutPrefix(first, l.Name+" - ")
	if !ok || desc == "" {
		t.Fatalf("first line of agentmail help is %q, want %q", first, l.Name+" - <description>")
	}
	l.Description = strings.ToUpper(desc[:1]) + desc[1:]
	return l
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}

// registryFiles returns each registry file as it should read, by name.
// sha256 is the .mcpb bundle's digest, or "" before a release has one.
func registryFiles(t *testing.T, l listing, sha256 string) map[string][]byte {
	t.Helper()
	return map[string][]byte{
		"server.json":   serverJSON(t, l, sha256),
		"smithery.yaml": smitheryYAML(l),
		"mcp-get.json":  encodeJSON(t, mcpGetFile(l)),
		"glama.json":    encodeJSON(t, glamaFile(l)),
	}
}

// TestRegistryFiles fails when a registry file drifts from the server's
// own name, description and tools; with -update-registry it rewrites them.
func TestRegistryFiles(t *testing.T) {
	l := serverListing(t)
	if len(l.Tools) == 0 {
		t.Fatal("tools/list lists no tools")
	}
	sha, err := bundleDigest(*mcpbBundle)
	if err != nil {
		t.Fatal(err)
	}
	files := registryFiles(t, l, sha)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want := files[name]
		if *updateRegistry {
			if err := os.WriteFile(name, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%v (run make registry)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the server's own listing at line %d (run make registry):\nhave: %s\nwant: %s",
				name, firstDiff(got, want)+1, lineAt(got, firstDiff(got, want)), lineAt(want, firstDiff(got, want)))
		}
	}
}

// bundleDigest returns the SHA-256 the next server.json records: the
// named bundle's, else the one server.json already holds, so that a
// release's digest survives later runs of the check.
func bundleDigest(bundle string) (string, error) {
	if bundle != "" {
		data, err := os.ReadFile(bundle)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:]), nil
	}
	data, err := os.ReadFile("server.json")
	if os.IsNotExist(err) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	var old serverFile
	if err := json.Unmarshal(data, &old); err != nil {
		return "", fmt.Errorf("server.json: %v", err)
	}
	for _, p := range old.Packages {
		if p.RegistryType == "mcpb" && strings.Contains(p.Identifier, "/v"+registryVersion+"/") {
			return p.FileSHA256, nil
		}
	}
	return "", nil
}

func firstDiff(a, b []byte) int {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i
		}
	}
	return min(len(al), len(bl))
}

func lineAt(data []byte, i int) string {
	lines := strings.Split(string(data), "\n")
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// encodeJSON writes v as the files are kept: two-space indents, no HTML
// escapes, a final newline.
func encodeJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The official MCP Registry's server.json, in the 2025-12-11 schema.
type serverFile struct {
	Schema      string        `json:"$schema"`
	Name        string        `json:"name"`
	Title       string        `json:"title"`
	Description string        `json:"description"`
	Version     string        `json:"version"`
	Repository  serverRepo    `json:"repository"`
	WebsiteURL  string        `json:"websiteUrl"`
	Packages    []serverPkg   `json:"packages"`
	Meta        *serverMetaPP `json:"_meta,omitempty"`
}

type serverRepo struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

type serverPkg struct {
	RegistryType         string        `json:"registryType"`
	Identifier           string        `json:"identifier"`
	Version              string        `json:"version"`
	FileSHA256           string        `json:"fileSha256,omitempty"`
	Transport            serverTrans   `json:"transport"`
	PackageArguments     []serverArg   `json:"packageArguments"`
	EnvironmentVariables []serverInput `json:"environmentVariables"`
}

type serverTrans struct {
	Type    string     `json:"type"`
	URL     string     `json:"url,omitempty"`
	Headers []serverKV `json:"headers,omitempty"`
}

type serverArg struct {
	Type        string `json:"type"`
	Name        string `json:"name,omitempty"`
	Value       string `json:"value,omitempty"`
	ValueHint   string `json:"valueHint,omitempty"`
	Description string `json:"description,omitempty"`
	Default     string `json:"default,omitempty"`
	Format      string `json:"format,omitempty"`
}

// serverKV is a header a client sends; {names} in Value are Variables.
type serverKV struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Value       string                 `json:"value"`
	IsRequired  bool                   `json:"isRequired"`
	Variables   map[string]serverInput `json:"variables,omitempty"`
}

type serverInput struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
	Format      string `json:"format,omitempty"`
}

// serverMetaPP is the one _meta key the official registry keeps.
type serverMetaPP struct {
	PublisherProvided map[string]string `json:"io.modelcontextprotocol.registry/publisher-provided"`
}

func serverJSON(t *testing.T, l listing, sha256 string) []byte {
	env := make([]serverInput, len(registryEnv))
	for i, e := range registryEnv {
		// None of them is a secret: they name a socket, a pane and a
		// directory.
		env[i] = serverInput{Name: e.Name, Description: e.Description, IsRequired: e.Required, Format: e.Format}
	}
	bundle := repoURL + "/releases/download/v" + registryVersion + "/" + mcpbAsset
	return encodeJSON(t, serverFile{
		Schema:      serverSchemaURL,
		Name:        "io.github." + registryOwner + "/" + l.Name,
		Title:       l.Title,
		Description: l.Description,
		Version:     registryVersion,
		Repository:  serverRepo{URL: repoURL, Source: "github"},
		WebsiteURL:  repoURL + "/blob/main/docs/install.md",
		Packages: []serverPkg{
			{
				RegistryType:         "mcpb",
				Identifier:           bundle,
				Version:              registryVersion,
				FileSHA256:           sha256,
				Transport:            serverTrans{Type: "stdio"},
				PackageArguments:     []serverArg{{Type: "positional", Value: "mcp"}},
				EnvironmentVariables: env,
			},
			// The same bundle as one HTTP server for every agent of a tmux
			// session: started in a window of it, so it reads TMUX and
			// TMUX_PANE there, and each client names its agent by a header.
			{
				RegistryType: "mcpb",
				Identifier:   bundle,
				Version:      registryVersion,
				FileSHA256:   sha256,
				Transport: serverTrans{
					Type: "streamable-http",
					URL:  "http://127.0.0.1:{port}/mcp",
					Headers: []serverKV{
						{Name: "Authorization", Value: "Bearer {token}", IsRequired: true,
							Description: "The server's bearer token: AGENTMAIL_TOKEN, or the file .agentmail/http-token it makes on first start.",
							Variables:   map[string]serverInput{"token": {IsRequired: true, IsSecret: true, Description: "The bearer token."}}},
						{Name: "Agentmail-Pane", Value: "{pane}", IsRequired: true,
							Description: "The calling agent's tmux pane (its TMUX_PANE): its window is the agent's address.",
							Variables:   map[string]serverInput{"pane": {IsRequired: true, Description: "The agent's TMUX_PANE, such as %3."}}},
					},
				},
				PackageArguments: []serverArg{
					{Type: "positional", Value: "mcp"},
					{Type: "named", Name: "--transport", Value: "http"},
					{Type: "named", Name: "--port", ValueHint: "port", Default: "3000", Format: "number",
						Description: "The loopback port to serve on."},
				},
				EnvironmentVariables: append(env, serverInput{Name: "AGENTMAIL_TOKEN", IsSecret: true,
					Description: "The bearer token clients must send. Default: the one in .agentmail/http-token, made (mode 0600) on first start."}),
			},
		},
		Meta: &serverMetaPP{PublisherProvided: map[string]string{
			// The registry has no package type for Go modules; clients
			// that build from source can use this instead of the bundle.
			"goInstall": "go install " + modulePath + "@v" + registryVersion,
		}},
	})
}

// installInfo is the install section smithery.yaml and glama.json share.
type installInfo struct {
	Go      string            `json:"go"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     []installEnvEntry `json:"env"`
}

type installEnvEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

func install() installInfo {
	in := installInfo{Go: "go install " + modulePath + "@latest", Command: "agentmail", Args: []string{"mcp"}}
	for _, e := range registryEnv {
		in.Env = append(in.Env, installEnvEntry{Name: e.Name, Description: e.Description, Required: e.Required})
	}
	return in
}

func mcpGetFile(l listing) any {
	return struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Version     string            `json:"version"`
		Homepage    string            `json:"homepage"`
		Repository  string            `json:"repository"`
		Runtime     string            `json:"runtime"`
		Install     string            `json:"install"`
		Command     string            `json:"command"`
		Args        []string          `json:"args"`
		Env         []installEnvEntry `json:"env"`
	}{
		Name: l.Name, Description: l.Description, Version: registryVersion,
		Homepage: repoURL + "#readme", Repository: repoURL,
		Runtime: "go", Install: install().Go,
		Command: "agentmail", Args: []string{"mcp"}, Env: install().Env,
	}
}

func glamaFile(l listing) any {
	return struct {
		Name         string      `json:"name"`
		Description  string      `json:"description"`
		Version      string      `json:"version"`
		Repository   string      `json:"repository"`
		Install      installInfo `json:"install"`
		Capabilities []string    `json:"capabilities"`
		Tools        []toolInfo  `json:"tools"`
	}{
		Name: l.Name, Description: l.Description, Version: registryVersion,
		Repository: repoURL, Install: install(), Capabilities: l.Capabilities, Tools: l.Tools,
	}
}

// smitheryYAML writes smithery.yaml by hand: a YAML library would be a
// dependency for one file. Every string is double-quoted with
// strconv.Quote, whose escapes (\n, \", \\, \xNN, \uNNNN) are all valid in
// a YAML double-quoted scalar, so no text can be misread as YAML syntax.
func smitheryYAML(l listing) []byte {
	var b strings.Builder
	q := strconv.Quote
	b.WriteString("# Generated by \"make registry\" from the server's own listing; do not edit.\n")
	fmt.Fprintf(&b, "name: %s\n", q(l.Name))
	fmt.Fprintf(&b, "description: %s\n", q(l.Description))
	fmt.Fprintf(&b, "version: %s\n", q(registryVersion))
	fmt.Fprintf(&b, "author: %s\n", q(registryOwner))
	fmt.Fprintf(&b, "repository: %s\n", q(repoURL))
	in := install()
	b.WriteString("install:\n")
	fmt.Fprintf(&b, "  go: %s\n", q(in.Go))
	fmt.Fprintf(&b, "  command: %s\n", q(in.Command))
	b.WriteString("  args:\n")
	for _, a := range in.Args {
		fmt.Fprintf(&b, "    - %s\n", q(a))
	}
	b.WriteString("  env:\n")
	for _, e := range in.Env {
		fmt.Fprintf(&b, "    - name: %s\n", q(e.Name))
		fmt.Fprintf(&b, "      description: %s\n", q(e.Description))
		fmt.Fprintf(&b, "      required: %t\n", e.Required)
	}
	b.WriteString("tools:\n")
	for _, tool := range l.Tools {
		fmt.Fprintf(&b, "  - name: %s\n", q(tool.Name))
		fmt.Fprintf(&b, "    description: %s\n", q(tool.Description))
	}
	return []byte(b.String())
}

// TestServerJSONSchema validates server.json against the official
// registry's schema, kept in testdata/registry/server.schema.json, and
// checks that the validator rejects what the registry would.
func TestServerJSONSchema(t *testing.T) {
	raw, err := os.ReadFile("testdata/registry/server.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := parseJSONSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	if id := schema.root["$id"]; id != serverSchemaURL {
		t.Fatalf("testdata schema is %v, server.json names %s", id, serverSchemaURL)
	}
	data, err := os.ReadFile("server.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := decodeJSON(data)
	if err != nil {
		t.Fatalf("server.json: %v", err)
	}
	if errs := schema.validate(doc); len(errs) > 0 {
		t.Fatalf("server.json does not validate against %s:\n%s", serverSchemaURL, strings.Join(errs, "\n"))
	}

	// Each change breaks one rule of the schema; a validator that let one
	// through would prove nothing above.
	pkg := func(d map[string]any) map[string]any { return d["packages"].([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name   string
		change func(d map[string]any)
	}{
		{"description over 100 characters", func(d map[string]any) { d["description"] = strings.Repeat("x", 101) }},
		{"name without a namespace", func(d map[string]any) { d["name"] = "agentmail" }},
		{"no version", func(d map[string]any) { delete(d, "version") }},
		{"repository without source", func(d map[string]any) { delete(d["repository"].(map[string]any), "source") }},
		{"relative website URL", func(d map[string]any) { d["websiteUrl"] = "docs/install.md" }},
		{"package version latest", func(d map[string]any) { pkg(d)["version"] = "latest" }},
		{"malformed SHA-256", func(d map[string]any) { pkg(d)["fileSha256"] = "not-a-digest" }},
		{"unknown transport", func(d map[string]any) { pkg(d)["transport"] = map[string]any{"type": "websocket"} }},
		{"HTTP transport without a URL", func(d map[string]any) {
			delete(d["packages"].([]any)[1].(map[string]any)["transport"].(map[string]any), "url")
		}},
		{"HTTP header without a name", func(d map[string]any) {
			http := d["packages"].([]any)[1].(map[string]any)["transport"].(map[string]any)
			delete(http["headers"].([]any)[0].(map[string]any), "name")
		}},
		{"environment variable without a name", func(d map[string]any) {
			delete(pkg(d)["environmentVariables"].([]any)[0].(map[string]any), "name")
		}},
		{"isRequired not a boolean", func(d map[string]any) {
			pkg(d)["environmentVariables"].([]any)[0].(map[string]any)["isRequired"] = "yes"
		}},
		{"positional argument with neither value nor valueHint", func(d map[string]any) {
			pkg(d)["packageArguments"] = []any{map[string]any{"type": "positional"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decodeJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(d.(map[string]any))
			if errs := schema.validate(d); len(errs) == 0 {
				t.Errorf("validates, want a violation")
			}
		})
	}
}
