package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tools"
)

var update = flag.Bool("update", false, "rewrite the server sections of testdata/golden/*.txtar from what the server says")

// TestGolden replays the conversations in testdata/golden: each file holds
// the lines a client sends (section "client") and the lines the server must
// answer (section "server"), for one server process with a fresh mailbox
// and a tmux session of two windows, alice (the agent) and bob. The
// mailbox's clock is stopped at goldenTime.
//
// Server lines are compared as JSON values, so the order of members does
// not matter but types do ("1" is not 1, and big integers are compared
// exactly). UUIDs in the answers are replaced, before comparing, by
// <uuid-1>, <uuid-2>, … in order of first appearance, so a file can say
// that a received id is the one a send returned. An expected value "<any>"
// matches any value. With -update (go test ./mcp -run TestGolden -update)
// the server sections are rewritten from what the server said; expected
// lines that still match are kept as they are, placeholders and all.
//
// A client line starting with "#" is a comment; one starting with "!" is a
// directive for the harness:
//
//	!hold           tool calls wait in tmux (the fake) until !release or cancellation
//	!blocked        wait until a tool call is waiting in tmux
//	!release        let waiting and later tool calls through
//	!read           wait until the server has read every line sent so far
//	!sync           wait until the server has answered every request sent so far
//	!self NAME      !sync, then the agent sits in window NAME
//	!windows A B …  !sync, then the session's windows are A B …
//	!state NAME S   !sync, then check that the state file records status S for NAME
//	!crlf LINE      send LINE ended by "\r\n"
//	!frame ID N     send a ping with id ID padded to exactly N bytes
//
// Every other line, blank ones included, is sent as it is, ended by "\n".
// !sync sends a ping with an id of its own and waits for its answer: the
// server answers in order, so every request before it has been answered.
// Those pings and their answers are not part of the conversation.
//
// Whatever the conversation, the server must write only JSON objects and
// arrays, one a line; never a request (the server asks the client
// nothing); and no notification but the acknowledgement of
// subscriptions/listen.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden conversations in testdata/golden")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runGolden(t, file)
		})
	}
}

func runGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var client, server *txtar.File
	for i := range ar.Files {
		switch f := &ar.Files[i]; f.Name {
		case "client":
			client = f
		case "server":
			server = f
		default:
			t.Fatalf("%s: unknown section %q", file, f.Name)
		}
	}
	if client == nil {
		t.Fatalf("%s: no client section", file)
	}
	if server == nil && !*update {
		t.Fatalf("%s: no server section (run with -update to create it)", file)
	}

	got, logs := converse(t, file, splitLines(client.Data))
	got = normalizeUUIDs(got)
	checkWellBehaved(t, got)

	if *update {
		// Lines that still match keep their placeholders.
		var want []string
		if server != nil {
			want = splitLines(server.Data)
		}
		kept := make([]string, len(got))
		for i, g := range got {
			kept[i] = g
			if i < len(want) && linesMatch(want[i], g) {
				kept[i] = want[i]
			}
		}
		data := []byte(strings.Join(kept, "\n"))
		if len(got) > 0 {
			data = append(data, '\n')
		}
		if server == nil {
			ar.Files = append(ar.Files, txtar.File{Name: "server", Data: data})
		} else {
			server.Data = data
		}
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := splitLines(server.Data)
	compareLines(t, want, got, logs)
}

// splitLines returns the lines of a section without their newlines.
func splitLines(data []byte) []string {
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// converse runs one server, feeds it the client lines and returns the lines
// it wrote and what it logged.
func converse(t *testing.T, file string, lines []string) (out []string, logs string) {
	root := t.TempDir()
	store := mailbox.New(root)
	var logMu sync.Mutex
	var logBuf strings.Builder
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(&logBuf, format+"\n", args...)
	}
	store.Warnf = logf
	// The views show the time of each message: a fixed clock lets their
	// texts be compared exactly. Messages keep their order all the same,
	// since ids grow in the order they are made.
	store.Now = func() time.Time { return goldenTime }
	term := newFakeTerm("alice", "alice", "bob")
	srv := mcp.NewServer(&tools.Service{Store: store, Term: term}, "test", logf)

	pr, pw := io.Pipe()
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pr, rec) }()
	// The reader may stop early; unblock any write still pending then.
	defer pr.Close()

	send := func(s string) {
		if _, err := io.WriteString(pw, s); err != nil {
			t.Fatalf("%s: writing to the server: %v", file, err)
		}
	}
	const patience = 5 * time.Second
	syncs := 0
	sync := func(where string) {
		syncs++
		id := `"` + syncPrefix + strconv.Itoa(syncs) + `"`
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n")
		if err := rec.waitFor(`{"jsonrpc":"2.0","id":`+id+`,"result":{}}`, patience); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
	}
	for n, line := range lines {
		where := fmt.Sprintf("%s: client line %d", file, n+1)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "!") {
			send(line + "\n")
			continue
		}
		f := strings.Fields(line[1:])
		if len(f) == 0 {
			t.Fatalf("%s: empty directive", where)
		}
		switch cmd, args := f[0], f[1:]; {
		case cmd == "hold" && len(args) == 0:
			term.hold()
		case cmd == "release" && len(args) == 0:
			term.release()
		case cmd == "blocked" && len(args) == 0:
			if err := term.waitBlocked(patience); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case cmd == "read" && len(args) == 0:
			// The reader asks for more input only once it has handled
			// every complete line it holds, so a blank line (which it
			// skips without answering) is taken only after those.
			send("\n")
		case cmd == "sync" && len(args) == 0:
			sync(where)
		case cmd == "self" && len(args) == 1:
			sync(where)
			term.setSelf(args[0])
		case cmd == "windows" && len(args) > 0:
			sync(where)
			term.setWindows(args)
		case cmd == "state" && len(args) == 2:
			sync(where)
			checkState(t, where, store, args[0], args[1])
		case cmd == "crlf":
			send(strings.TrimSpace(strings.TrimPrefix(line, "!crlf")) + "\r\n")
		case cmd == "frame" && len(args) == 2:
			size, err := strconv.Atoi(args[1])
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			send(paddedPing(args[0], size) + "\n")
		default:
			t.Fatalf("%s: unknown directive %q", where, line)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: Serve: %v", file, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the server did not stop after the end of its input", file)
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, l := range rec.lines() {
		if !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":"`+syncPrefix) {
			out = append(out, l)
		}
	}
	return out, logBuf.String()
}

// goldenTime is the time of every message in the conversations.
var goldenTime = time.Date(2026, 7, 28, 9, 30, 0, 0, time.UTC)

// syncPrefix starts the ids of the pings sent by !sync.
const syncPrefix = "golden-sync-"

// paddedPing returns a ping request with the given id that is exactly size
// bytes long.
func paddedPing(id string, size int) string {
	pre := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping","params":{"pad":"`
	suf := `"}}`
	return pre + strings.Repeat("a", size-len(pre)-len(suf)) + suf
}

// checkState fails unless the state file records status for name.
func checkState(t *testing.T, where string, store *mailbox.Store, name, status string) {
	t.Helper()
	states, err := store.States(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	for _, st := range states {
		if st.Recipient == name {
			if st.Status != status {
				t.Fatalf("%s: %s has status %q, want %q", where, name, st.Status, status)
			}
			return
		}
	}
	t.Fatalf("%s: no state entry for %s (entries: %+v)", where, name, states)
}

// recorder collects what the server writes, line by line.
type recorder struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	close(r.changed)
	r.changed = make(chan struct{})
	return len(p), nil
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return splitLines(r.buf.Bytes())
}

// waitFor waits until the server has written the line want.
func (r *recorder) waitFor(want string, d time.Duration) error {
	deadline := time.After(d)
	for {
		r.mu.Lock()
		found, changed := bytes.Contains(r.buf.Bytes(), []byte(want+"\n")), r.changed
		r.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("no answer to a !sync ping within %v: is a tool call held?", d)
		}
	}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalizeUUIDs replaces each distinct UUID by <uuid-N>, numbered in order
// of first appearance over all lines.
func normalizeUUIDs(lines []string) []string {
	seen := map[string]string{}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = uuidRE.ReplaceAllStringFunc(l, func(u string) string {
			if p, ok := seen[u]; ok {
				return p
			}
			p := "<uuid-" + strconv.Itoa(len(seen)+1) + ">"
			seen[u] = p
			return p
		})
	}
	return out
}

// checkWellBehaved checks what must hold of any conversation.
func checkWellBehaved(t *testing.T, lines []string) {
	t.Helper()
	for i, l := range lines {
		v, err := decodeJSON(l)
		if err != nil {
			t.Errorf("server line %d is not JSON: %v\n%s", i+1, err, l)
			continue
		}
		msgs, isArray := v.([]any)
		if !isArray {
			msgs = []any{v}
		}
		for _, m := range msgs {
			obj, ok := m.(map[string]any)
			if !ok {
				t.Errorf("server line %d holds a message that is not an object:\n%s", i+1, l)
				continue
			}
			method, isMsg := obj["method"]
			_, hasID := obj["id"]
			switch {
			case isMsg && hasID:
				t.Errorf("server line %d is a request to the client:\n%s", i+1, l)
			case isMsg && method != "notifications/subscriptions/acknowledged":
				t.Errorf("server line %d is an unexpected notification:\n%s", i+1, l)
			}
		}
	}
}

func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// compareLines reports every expected line the server did not write as
// expected, and any extra or missing line.
func compareLines(t *testing.T, want, got []string, logs string) {
	t.Helper()
	failed := false
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(got):
			t.Errorf("missing server line %d:\nwant %s", i+1, want[i])
			failed = true
		case i >= len(want):
			t.Errorf("unexpected server line %d:\ngot  %s", i+1, got[i])
			failed = true
		default:
			w, err := decodeJSON(want[i])
			if err != nil {
				t.Fatalf("expected server line %d is not JSON: %v\n%s", i+1, err, want[i])
			}
			g, err := decodeJSON(got[i])
			if err != nil {
				t.Errorf("server line %d is not JSON: %v", i+1, err)
				failed = true
				continue
			}
			if !matchJSON(w, g) {
				t.Errorf("server line %d differs:\nwant %s\ngot  %s", i+1, want[i], got[i])
				failed = true
			}
		}
	}
	if failed {
		t.Logf("server log:\n%s", logs)
	}
}

// linesMatch reports whether the line got matches the expected line want.
func linesMatch(want, got string) bool {
	w, err := decodeJSON(want)
	if err != nil {
		return false
	}
	g, err := decodeJSON(got)
	return err == nil && matchJSON(w, g)
}

// matchJSON reports whether got equals want, where "<any>" in want matches
// any value.
func matchJSON(want, got any) bool {
	switch w := want.(type) {
	case string:
		if w == "<any>" {
			return true
		}
		return w == got
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !matchJSON(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matchJSON(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

// TestGoldenMatching checks the harness's own comparison, so that a golden
// file cannot pass by accident.
func TestGoldenMatching(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		match     bool
	}{
		{`{"a":1,"b":"x"}`, `{"b":"x","a":1}`, true},
		{`{"id":1}`, `{"id":"1"}`, false},
		{`{"id":9007199254740993}`, `{"id":9007199254740992}`, false},
		{`{"id":1e3}`, `{"id":1000}`, false},
		{`{"a":"<any>"}`, `{"a":{"deep":[1,2]}}`, true},
		{`{"a":"<any>"}`, `{}`, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":null}`, `{}`, false},
	} {
		if got := linesMatch(tc.want, tc.got); got != tc.match {
			t.Errorf("linesMatch(%s, %s) = %v, want %v", tc.want, tc.got, got, tc.match)
		}
	}

	got := normalizeUUIDs([]string{
		`{"text":"Message #01a20057-5b1e-7cd0-aa50-9ecc8f5807e5 sent"}`,
		`{"id":"01a2005b-e31c-7382-bf57-81ad1c5f49a7","again":"01a20057-5b1e-7cd0-aa50-9ecc8f5807e5"}`,
	})
	want := []string{
		`{"text":"Message #<uuid-1> sent"}`,
		`{"id":"<uuid-2>","again":"<uuid-1>"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("normalizeUUIDs:\n got %q\nwant %q", got, want)
	}
}

// TestCancelledCallNotLogged checks that a tool call ended by a cancellation
// leaves no log line, while a call that fails on its own does: during a
// shutdown or a loss of tmux, the line that says why is the only one.
func TestCancelledCallNotLogged(t *testing.T) {
	_, logs := converse(t, t.Name(), []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`!hold`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"receive","arguments":{}}}`,
		`!blocked`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`,
		`!sync`,
		`!release`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"send","arguments":{"recipient":"nobody","message":"x"}}}`,
		`!sync`,
	})
	if !strings.Contains(logs, "send: recipient not found") {
		t.Errorf("the failed send was not logged; log:\n%s", logs)
	}
	if strings.Contains(logs, "receive") {
		t.Errorf("the cancelled receive was logged; log:\n%s", logs)
	}
}
