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
	"slices"
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
//	!mail A B TEXT  !sync, then store a message TEXT from A to B, as another
//	                agent's own process would, without this server
//	!await ID       wait until the server has answered the request with id ID
//	                (JSON, such as 3 or "w"): for a call that waits detached
//	!notified JSON  wait until the server writes a line matching JSON
//	                (placeholders allowed) after the one the previous
//	                !notified matched
//
// Every other line, blank ones included, is sent as it is, ended by "\n",
// except that <uuid-N> stands for the UUID the server section calls so
// (the server must have written it already): a client can answer a
// message by the id it was given.
// !sync sends a ping with an id of its own and waits for its answer: the
// server answers in order, so every request before it has been answered.
// Those pings and their answers are not part of the conversation. A call
// that detaches to wait (receive with timeout_seconds, subscriptions/listen)
// is answered out of that order, whenever its wait ends: !await it.
//
// notifications/resources/updated are not part of the server section. The
// server gathers the file events of one change of the mailbox for a short
// while before it notifies, so how many notifications one change makes, and
// where they fall among the answers, depends on how fast the disk is. The
// conversation waits for them with !notified instead, which, while it
// waits, also opens the agent's mailbox for writing now and then, changing
// nothing: a subscriptions/listen stream starts to watch only after its
// acknowledgement, so a change made at once may come too early for it.
//
// Whatever the conversation, the server must write only JSON objects and
// arrays, one a line; never a request (the server asks the client
// nothing); and no notification but the acknowledgement of
// subscriptions/listen and notifications/resources/updated. Those go only
// to a subscriber: in the legacy era from resources/subscribe to the answer
// to resources/unsubscribe; in the modern era to a listen stream whose
// acknowledgement honoured the inbox, until its result, and not after the
// answer to a request sent after its cancellation.
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

	tr, logs := converse(t, file, splitLines(client.Data))
	checkWellBehaved(t, tr)
	got := normalizeUUIDs(tr.compared())

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

// converse runs one server, feeds it the client lines and returns what was
// said, both ways, and what the server logged.
func converse(t *testing.T, file string, lines []string) (tr transcript, logs string) {
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
	svc := &tools.Service{Store: store, Term: term}
	srv := mcp.NewServer("test", logf)

	pr, pw := io.Pipe()
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, pr, rec, svc) }()
	// The reader may stop early; unblock any write still pending then.
	defer pr.Close()

	send := func(s string) {
		// Noted before it is written, so that everything the line causes
		// comes after it in the transcript.
		rec.note(strings.TrimRight(s, "\r\n"))
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
		want := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
		if _, err := rec.waitFor(0, func(l string) bool { return l == want }, patience, nil); err != nil {
			t.Fatalf("%s: no answer to a !sync ping: %v: is a tool call held?", where, err)
		}
	}
	notifiedFrom := 0 // the server line after the one the last !notified matched
	for n, line := range lines {
		where := fmt.Sprintf("%s: client line %d", file, n+1)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "!") {
			line, err := rec.expandUUIDs(line)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
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
		case cmd == "mail" && len(args) >= 3:
			sync(where)
			text := strings.SplitN(strings.TrimSpace(line[len("!mail"):]), " ", 3)[2]
			if _, err := store.Append(context.Background(), args[0], args[1], text); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case cmd == "await" && len(args) == 1:
			id, err := decodeJSON(args[0])
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if _, err := rec.waitFor(0, func(l string) bool { return answers(l, id) }, patience, nil); err != nil {
				t.Fatalf("%s: no answer to request %s: %v", where, args[0], err)
			}
		case cmd == "notified" && len(args) > 0:
			want, err := decodeJSON(strings.TrimSpace(line[len("!notified"):]))
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			match := func(l string) bool {
				g, err := decodeJSON(l)
				return err == nil && matchJSON(want, g)
			}
			touch := func() { touchMailbox(store, term.current()) }
			i, err := rec.waitFor(notifiedFrom, match, patience, touch)
			if err != nil {
				t.Fatalf("%s: no such notification: %v", where, err)
			}
			notifiedFrom = i + 1
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
	return rec.transcript(), logBuf.String()
}

// goldenTime is the time of every message in the conversations.
var goldenTime = time.Date(2026, 7, 28, 9, 30, 0, 0, time.UTC)

// syncPrefix starts the ids of the pings sent by !sync.
const syncPrefix = "golden-sync-"

// answers reports whether line is the answer to the request with id.
func answers(line string, id any) bool {
	v, err := decodeJSON(line)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return false
	}
	_, isMsg := obj["method"]
	got, hasID := obj["id"]
	return !isMsg && hasID && reflect.DeepEqual(got, id)
}

// touchMailbox opens name's mailbox for writing and closes it, changing
// nothing, so that whoever watches it looks again. A missing mailbox is
// left missing.
func touchMailbox(store *mailbox.Store, name string) {
	f, err := os.OpenFile(store.MailboxPath(name), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		f.Close()
	}
}

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

// said is one line of a conversation: sent by the client, or written by the
// server.
type said struct {
	client bool
	line   string
}

// transcript is a whole conversation, both ways, in the order it happened:
// a client line comes before everything the server wrote because of it.
type transcript []said

// compared returns the server lines that the server section holds: all of
// them but the answers to !sync's pings and notifications/resources/updated.
func (tr transcript) compared() []string {
	var out []string
	for _, s := range tr {
		if !s.client && !isSyncAnswer(s.line) && !isUpdated(s.line) {
			out = append(out, s.line)
		}
	}
	return out
}

func isSyncAnswer(line string) bool {
	return strings.HasPrefix(line, `{"jsonrpc":"2.0","id":"`+syncPrefix)
}

func isUpdated(line string) bool {
	return strings.Contains(line, `"method":"notifications/resources/updated"`)
}

// recorder collects what the server writes, line by line, and notes the
// client's lines among them.
type recorder struct {
	mu      sync.Mutex
	said    transcript
	partial []byte        // a server line not yet ended
	server  []string      // the server's lines so far
	changed chan struct{} // closed and replaced on every write
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		line := string(r.partial[:i])
		r.partial = r.partial[i+1:]
		r.server = append(r.server, line)
		r.said = append(r.said, said{line: line})
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return len(p), nil
}

// note records a line the client sends.
func (r *recorder) note(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.said = append(r.said, said{client: true, line: line})
}

func (r *recorder) transcript() transcript {
	r.mu.Lock()
	defer r.mu.Unlock()
	tr := r.said
	if len(r.partial) > 0 {
		tr = append(tr, said{line: string(r.partial)})
	}
	return tr
}

// waitFor waits until the server has written, at or after its line from, a
// line that match accepts, and returns that line's index. While it waits
// it calls poke, when not nil, every tenth of a second.
func (r *recorder) waitFor(from int, match func(string) bool, d time.Duration, poke func()) (int, error) {
	deadline := time.After(d)
	for {
		r.mu.Lock()
		lines, changed := r.server, r.changed
		r.mu.Unlock()
		for i := from; i < len(lines); i++ {
			if match(lines[i]) {
				return i, nil
			}
		}
		from = max(from, len(lines))
		var tick <-chan time.Time
		if poke != nil {
			tick = time.After(100 * time.Millisecond)
		}
		select {
		case <-changed:
		case <-tick:
			poke()
		case <-deadline:
			return 0, fmt.Errorf("not within %v", d)
		}
	}
}

// expandUUIDs replaces each <uuid-N> in a client line by the UUID the
// server section calls so, which the server must have written already.
func (r *recorder) expandUUIDs(line string) (string, error) {
	if !placeholderRE.MatchString(line) {
		return line, nil
	}
	r.mu.Lock()
	tr := r.said
	r.mu.Unlock()
	var uuids []string
	seen := map[string]bool{}
	for _, l := range tr.compared() {
		for _, u := range uuidRE.FindAllString(l, -1) {
			if !seen[u] {
				seen[u] = true
				uuids = append(uuids, u)
			}
		}
	}
	var err error
	line = placeholderRE.ReplaceAllStringFunc(line, func(p string) string {
		n, _ := strconv.Atoi(placeholderRE.FindStringSubmatch(p)[1])
		if n > len(uuids) {
			err = fmt.Errorf("%s: the server has written only %d UUIDs so far (!sync or !await first)", p, len(uuids))
			return p
		}
		return uuids[n-1]
	})
	return line, err
}

var placeholderRE = regexp.MustCompile(`<uuid-([1-9][0-9]*)>`)

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
func checkWellBehaved(t *testing.T, tr transcript) {
	t.Helper()
	for _, p := range wellBehaved(tr) {
		t.Error(p)
	}
}

// wellBehaved returns what the server did that no conversation allows.
func wellBehaved(tr transcript) (problems []string) {
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var sub subscribers
	n := 0 // server lines
	for _, s := range tr {
		if s.client {
			sub.client(s.line)
			continue
		}
		n++
		l := s.line
		v, err := decodeJSON(l)
		if err != nil {
			bad("server line %d is not JSON: %v\n%s", n, err, l)
			continue
		}
		msgs, isArray := v.([]any)
		if !isArray {
			msgs = []any{v}
		}
		for _, m := range msgs {
			obj, ok := m.(map[string]any)
			if !ok {
				bad("server line %d holds a message that is not an object:\n%s", n, l)
				continue
			}
			method, isMsg := obj["method"]
			id, hasID := obj["id"]
			switch {
			case isMsg && hasID:
				bad("server line %d is a request to the client:\n%s", n, l)
			case method == "notifications/subscriptions/acknowledged":
				sub.acknowledged(obj)
			case method == "notifications/resources/updated":
				if why := sub.updated(obj); why != "" {
					bad("server line %d is a notification %s:\n%s", n, why, l)
				}
			case isMsg:
				bad("server line %d is an unexpected notification:\n%s", n, l)
			default:
				sub.answered(idKey(id), obj)
			}
		}
	}
	return problems
}

// subscribers follows a conversation's subscriptions, to tell which
// notifications/resources/updated the server may send.
type subscribers struct {
	sent        int               // client requests so far
	requests    map[string]sentAs // the last request sent with each id
	legacy      bool              // subscribed with resources/subscribe
	listens     map[string]*listen
	cancelledAt map[string]int // listen id → requests sent before its cancellation
}

type sentAs struct {
	method string
	seq    int // its place among the client's requests
}

type listen struct {
	inbox bool // the acknowledgement honoured the inbox
	over  bool // answered, or cancelled and then overtaken
}

// client notes a line the client sent.
func (s *subscribers) client(line string) {
	if s.requests == nil {
		s.requests = map[string]sentAs{}
		s.listens = map[string]*listen{}
		s.cancelledAt = map[string]int{}
	}
	v, err := decodeJSON(line)
	if err != nil {
		return
	}
	msgs, isArray := v.([]any)
	if !isArray {
		msgs = []any{v}
	}
	for _, m := range msgs {
		obj, _ := m.(map[string]any)
		method, _ := obj["method"].(string)
		params, _ := obj["params"].(map[string]any)
		id, hasID := obj["id"]
		if !hasID {
			if method == "notifications/cancelled" && params != nil {
				if rid, ok := params["requestId"]; ok {
					s.cancelledAt[idKey(rid)] = s.sent
				}
			}
			continue
		}
		s.sent++
		s.requests[idKey(id)] = sentAs{method: method, seq: s.sent}
		if method == "resources/subscribe" {
			s.legacy = true
		}
	}
}

// acknowledged notes the acknowledgement of a listen stream.
func (s *subscribers) acknowledged(obj map[string]any) {
	params, _ := obj["params"].(map[string]any)
	meta, _ := params["_meta"].(map[string]any)
	id, ok := meta["io.modelcontextprotocol/subscriptionId"]
	if !ok {
		return
	}
	honoured, _ := params["notifications"].(map[string]any)
	uris, _ := honoured["resourceSubscriptions"].([]any)
	s.listens[idKey(id)] = &listen{inbox: slices.Contains(uris, any(mcp.InboxURI))}
}

// answered notes the answer to the request with id key.
func (s *subscribers) answered(key string, obj map[string]any) {
	req, ok := s.requests[key]
	if !ok {
		return
	}
	_, failed := obj["error"]
	switch {
	case req.method == "resources/unsubscribe" && !failed:
		s.legacy = false
	case req.method == "subscriptions/listen":
		if l := s.listens[key]; l != nil {
			l.over = true
		}
	}
	// A request sent after a listen's cancellation has been answered:
	// the cancellation has been read, and the stream must be silent.
	for lid, at := range s.cancelledAt {
		if req.seq > at {
			if l := s.listens[lid]; l != nil {
				l.over = true
			}
		}
	}
}

// updated says why a notifications/resources/updated may not be sent now,
// or returns "".
func (s *subscribers) updated(obj map[string]any) string {
	params, _ := obj["params"].(map[string]any)
	meta, _ := params["_meta"].(map[string]any)
	id, modern := meta["io.modelcontextprotocol/subscriptionId"]
	if !modern {
		if !s.legacy {
			return "without a legacy subscription"
		}
		return ""
	}
	l := s.listens[idKey(id)]
	switch {
	case l == nil:
		return "for a stream not acknowledged"
	case !l.inbox:
		return "for a stream that did not ask for the inbox"
	case l.over:
		return "for a stream that is over"
	}
	return ""
}

// idKey tells ids apart by type and value, as the server does.
func idKey(id any) string { return fmt.Sprintf("%T:%v", id, id) }

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

// TestGoldenWellBehaved checks the harness's rules for notifications, so
// that a conversation cannot pass with one sent to nobody.
func TestGoldenWellBehaved(t *testing.T) {
	const (
		meta     = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		sub      = `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"agentmail://inbox"}}`
		unsub    = `{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"agentmail://inbox"}}`
		updated  = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"agentmail://inbox"}}`
		listen   = `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["agentmail://inbox"]},` + meta + `}}`
		ack      = `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l"},"notifications":{"resourceSubscriptions":["agentmail://inbox"]}}}`
		ackNone  = `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l"},"notifications":{}}}`
		streamed = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"agentmail://inbox","_meta":{"io.modelcontextprotocol/subscriptionId":"l"}}}`
		cancel   = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l"}}`
		ping     = `{"jsonrpc":"2.0","id":3,"method":"ping"}`
		pong     = `{"jsonrpc":"2.0","id":3,"result":{}}`
		ended    = `{"jsonrpc":"2.0","id":"l","result":{"resultType":"complete"}}`
	)
	c := func(l string) said { return said{client: true, line: l} }
	s := func(l string) said { return said{line: l} }
	for _, tc := range []struct {
		name string
		tr   transcript
		ok   bool
	}{
		{"unsubscribed", transcript{s(updated)}, false},
		{"subscribed", transcript{c(sub), s(updated), s(`{"jsonrpc":"2.0","id":1,"result":{}}`), s(updated)}, true},
		{"after unsubscribe", transcript{c(sub), s(`{"jsonrpc":"2.0","id":1,"result":{}}`), c(unsub), s(updated), s(`{"jsonrpc":"2.0","id":2,"result":{}}`), s(updated)}, false},
		{"unsubscribe failed", transcript{c(sub), c(unsub), s(`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"x"}}`), s(updated)}, true},
		{"listening", transcript{c(listen), s(ack), s(streamed)}, true},
		{"before the acknowledgement", transcript{c(listen), s(streamed), s(ack)}, false},
		{"inbox not honoured", transcript{c(listen), s(ackNone), s(streamed)}, false},
		{"stream ended", transcript{c(listen), s(ack), s(ended), s(streamed)}, false},
		{"cancelled, not yet read", transcript{c(listen), s(ack), c(cancel), s(streamed), c(ping), s(pong)}, true},
		{"cancelled and overtaken", transcript{c(listen), s(ack), c(cancel), c(ping), s(pong), s(streamed)}, false},
		{"legacy is not modern", transcript{c(sub), s(streamed)}, false},
	} {
		problems := wellBehaved(tc.tr)
		if ok := len(problems) == 0; ok != tc.ok {
			t.Errorf("%s: well behaved = %v, want %v; problems: %q", tc.name, ok, tc.ok, problems)
		}
	}
}
