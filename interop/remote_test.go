package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hub is a project with an HTTP server in a private tmux session, whose
// named agents reach it with tokens of their own.
type hub struct {
	bin, root string
	srv       *httpServer
}

func startHub(t *testing.T) *hub {
	t.Helper()
	bin := agentmailBin(t)
	tm := startTmux(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &hub{bin: bin, root: root, srv: startHTTPServer(t, bin, root, tm, "http")}
}

// addAgent runs "agentmail agent add name" in the hub's project, outside
// tmux, and returns the token it prints.
func (h *hub) addAgent(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command(h.bin, "agent", "add", name)
	cmd.Dir = h.root
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=")
	})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agent add %s: %v: %s", name, err, stderr.String())
	}
	token := strings.TrimSpace(string(out))
	if !regexp.MustCompile(`^amt_[A-Z2-7]{52}$`).MatchString(token) {
		t.Fatalf("agent add %s printed %q", name, out)
	}
	return token
}

// TestGoSDKNamedAgent connects the official Go SDK with a named agent's
// token alone and calls every tool as that agent; with a header naming
// another agent it cannot connect.
func TestGoSDKNamedAgent(t *testing.T) {
	h := startHub(t)
	token := h.addAgent(t, "carol")
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			carol := h.srv.connect(ctx, t, map[string]string{"Authorization": "Bearer " + token}, v)
			checkTools(ctx, t, carol.cs)
			call(ctx, t, carol.cs, "list-recipients", nil, false,
				"carol [you]\nalice\nbob",
				`{"recipients":[{"name":"carol","is_current":true},{"name":"alice","is_current":false},{"name":"bob","is_current":false}]}`)
			call(ctx, t, carol.cs, "status", map[string]any{"status": "ready"}, false, "Status set to ready", `{"status":"ok"}`)
			body := "from carol at " + v
			res := callTool(ctx, t, carol.cs, "send", map[string]any{"recipient": "bob", "message": body})
			if res.IsError || !strings.HasPrefix(onlyText(t, res), "Message #") {
				t.Fatalf("send: %q", onlyText(t, res))
			}
			bob := h.srv.connect(ctx, t, map[string]string{"Agentmail-Agent": "bob"}, v)
			res = callTool(ctx, t, bob.cs, "receive", nil)
			if got := onlyText(t, res); !strings.HasPrefix(got, "From: carol\n") || !strings.HasSuffix(got, "\n\n"+body) {
				t.Fatalf("bob's receive: %q", got)
			}
			res = callTool(ctx, t, bob.cs, "send", map[string]any{"recipient": "carol", "message": "back to carol"})
			if res.IsError {
				t.Fatalf("bob's send to carol: %q", onlyText(t, res))
			}
			res = callTool(ctx, t, carol.cs, "receive", map[string]any{"timeout_seconds": 5})
			if got := onlyText(t, res); !strings.HasPrefix(got, "From: bob\n") || !strings.HasSuffix(got, "\n\nback to carol") {
				t.Fatalf("carol's receive: %q", got)
			}
		})
	}
	// A named agent's token with a header naming another agent is refused
	// at connect.
	hdr := http.Header{"Authorization": {"Bearer " + token}, "Agentmail-Agent": {"bob"}}
	status, body := postJSON(t, h.srv.url, hdr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if status != http.StatusForbidden || strings.Contains(body, token) {
		t.Errorf("carol's token as bob: status %d: %s", status, body)
	}
}

// postJSON posts one message and returns the status and body.
func postJSON(t *testing.T, url string, hdr http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestRemoteExactlyOnce runs 50 named agents against one hub, each
// sending to a random other and receiving, one call at a time, for 30 s
// ($AGENTMAIL_LOAD_SECONDS changes it). Then each drains its mailbox.
// Every message the hub acknowledged must have been received exactly
// once, by its recipient alone, and nothing else received.
func TestRemoteExactlyOnce(t *testing.T) {
	const agents = 50
	seconds := 30
	if s := os.Getenv("AGENTMAIL_LOAD_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("AGENTMAIL_LOAD_SECONDS=%q: want a positive number", s)
		}
		seconds = n
	}
	h := startHub(t)
	rs := make([]*remote, agents)
	for i := range rs {
		name := fmt.Sprintf("r%02d", i)
		rs[i] = &remote{name: name, url: h.srv.url, token: h.addAgent(t, name)}
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(uint64(i), 7))
			for seq := 0; time.Now().Before(deadline); seq++ {
				to := rs[(i+1+rng.IntN(agents-1))%agents].name
				r.send(to, fmt.Sprintf("load %s %d", r.name, seq))
				r.receive(0)
			}
		}()
	}
	wg.Wait()
	for _, r := range rs {
		for r.receive(0) {
		}
	}
	acked := map[string]string{} // id → recipient
	calls, errs := 0, 0
	for _, r := range rs {
		for id, to := range r.acked {
			acked[id] = to
		}
		calls += r.calls
		errs += len(r.errs)
		for _, e := range r.errs[:min(len(r.errs), 3)] {
			t.Errorf("%s: %s", r.name, e)
		}
	}
	seen := map[string]int{}
	for _, r := range rs {
		for _, id := range r.got {
			seen[id]++
			if to, ok := acked[id]; !ok {
				t.Errorf("%s received %s, which no acknowledged send accounts for", r.name, id)
			} else if to != r.name {
				t.Errorf("%s received %s, sent to %s", r.name, id, to)
			}
		}
	}
	lost, twice := 0, 0
	for id := range acked {
		switch seen[id] {
		case 0:
			lost++
		case 1:
		default:
			twice++
		}
	}
	if lost > 0 || twice > 0 || errs > 0 {
		t.Errorf("of %d acknowledged messages, %d never received and %d received more than once; %d calls failed", len(acked), lost, twice, errs)
	}
	t.Logf("%d named agents, %d s: %d calls, %d messages acknowledged", agents, seconds, calls, len(acked))
}

// remote is a named agent calling the hub's tools with its token, in the
// stateless 2026-07-28 revision.
type remote struct {
	name, url, token string
	calls            int
	acked            map[string]string // id → recipient
	got              []string
	errs             []string
}

var ackRE = regexp.MustCompile(`^Message #([0-9a-f-]{36}) sent`)

func (r *remote) send(to, body string) {
	text, err := r.call("send", map[string]any{"recipient": to, "message": body})
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return
	}
	m := ackRE.FindStringSubmatch(text)
	if m == nil {
		r.errs = append(r.errs, "send answered "+strconv.Quote(text))
		return
	}
	if r.acked == nil {
		r.acked = map[string]string{}
	}
	r.acked[m[1]] = to
}

// receive takes one message, if there is one, and reports whether it did.
func (r *remote) receive(wait int) bool {
	args := map[string]any{}
	if wait > 0 {
		args["timeout_seconds"] = wait
	}
	text, err := r.call("receive", args)
	switch {
	case err != nil:
		r.errs = append(r.errs, err.Error())
		return false
	case text == "No unread messages":
		return false
	}
	head, _, _ := strings.Cut(text, "\n\n")
	id, ok := strings.CutPrefix(head[strings.LastIndex(head, "\n")+1:], "ID: ")
	if !ok || !strings.HasPrefix(head, "From: ") {
		r.errs = append(r.errs, "receive answered "+strconv.Quote(text))
		return false
	}
	r.got = append(r.got, id)
	return true
}

var loadClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// call makes one tools/call and returns its text; a JSON-RPC error, a
// tool error or any status but 200 is an error.
func (r *remote) call(tool string, args map[string]any) (string, error) {
	r.calls++
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.calls, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args,
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}},
	}})
	req, err := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(msg))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := loadClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Result *struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("%s: HTTP %d: %v", tool, resp.StatusCode, err)
	}
	switch {
	case out.Error != nil:
		return "", fmt.Errorf("%s: HTTP %d: %s", tool, resp.StatusCode, out.Error.Message)
	case out.Result == nil || len(out.Result.Content) != 1:
		return "", fmt.Errorf("%s: HTTP %d: no result", tool, resp.StatusCode)
	case out.Result.IsError:
		return "", fmt.Errorf("%s: %s", tool, out.Result.Content[0].Text)
	}
	return out.Result.Content[0].Text, nil
}
