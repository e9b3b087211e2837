package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"agentmail/jsonrpc"
)

// timeout bounds every wait in these tests. Nothing waits for it to pass:
// it only ends a test that has already failed.
const timeout = 5 * time.Second

// recorder is the peer's end of a LineStream. It keeps every Write apart,
// so that a test can check that each line went out in exactly one call,
// and lets a test wait until a number of lines have been written.
type recorder struct {
	mu     sync.Mutex
	writes []string
	grew   chan struct{} // closed at the next Write, when someone waits
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, string(p))
	if r.grew != nil {
		close(r.grew)
		r.grew = nil
	}
	return len(p), nil
}

// count returns how many Writes have been made.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

// waitLines waits until at least n lines have been written.
func (r *recorder) waitLines(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got := len(r.writes)
		if got >= n {
			r.mu.Unlock()
			return
		}
		if r.grew == nil {
			r.grew = make(chan struct{})
		}
		grew := r.grew
		r.mu.Unlock()
		select {
		case <-grew:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %d lines; have %d", n, got)
		}
	}
}

// lines returns the lines written so far, checking that each Write was
// one line of valid JSON: ending in the only "\n" it holds.
func (r *recorder) lines(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.writes))
	for _, w := range r.writes {
		line, ok := strings.CutSuffix(w, "\n")
		if !ok || strings.Contains(line, "\n") {
			t.Errorf("Write(%.100q) is not exactly one line", w)
		}
		if !json.Valid([]byte(line)) {
			t.Errorf("Write(%.100q) is not valid JSON", w)
		}
		out = append(out, line)
	}
	return out
}

// logs collects Logf lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *logs) contains(s string) bool {
	return slices.ContainsFunc(l.all(), func(line string) bool { return strings.Contains(line, s) })
}

// testHandler answers the methods the tests use.
func testHandler(ctx context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case "ping":
		return nil, nil
	case "echo":
		return req.Params, nil
	case "batchflag":
		return map[string]bool{"batch": req.Batch}, nil
	case "fail":
		return nil, errors.New("disk on fire")
	case "badparams":
		return nil, fmt.Errorf("checking params: %w", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: %s", "x must be set"))
	case "zerocode":
		return nil, &jsonrpc.Error{Message: "no code"}
	case "nilerror":
		return nil, (*jsonrpc.Error)(nil)
	case "data":
		return nil, &jsonrpc.Error{Code: -32001, Message: "with data", Data: map[string]int{"n": 1}}
	case "baddata":
		return nil, &jsonrpc.Error{Code: -32001, Message: "bad data", Data: make(chan int)}
	case "panic":
		panic("boom")
	case "multiline":
		return json.RawMessage("{\n\"a\": [1,\n2]\n}"), nil
	case "html":
		return map[string]string{"s": "<a&b>"}, nil
	case "string":
		return "not an object", nil
	case "array":
		return []int{1}, nil
	case "nilmap":
		return map[string]int(nil), nil
	case "nilpointer":
		return (*struct{ A int })(nil), nil
	case "unencodable":
		return map[string]any{"c": make(chan int)}, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s", req.Method)
}

// methods records the methods a handler is called with.
type methods struct {
	mu   sync.Mutex
	seen []string
}

// wrap returns h, recording each method before h runs.
func (m *methods) wrap(h jsonrpc.Handler) jsonrpc.Handler {
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		m.mu.Lock()
		m.seen = append(m.seen, req.Method)
		m.mu.Unlock()
		return h(ctx, req)
	}
}

func (m *methods) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

// serve runs a Conn on a LineStream over input until its end, and returns
// the lines written.
func serve(t *testing.T, input string, h jsonrpc.Handler, opt jsonrpc.Options) []string {
	t.Helper()
	var out recorder
	c := jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(input), &out), h, opt)
	if err := c.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	return out.lines(t)
}

// match reports whether got equals want or, when want ends in "*",
// starts with the text before it.
func match(got, want string) bool {
	if prefix, ok := strings.CutSuffix(want, "*"); ok {
		return strings.HasPrefix(got, prefix)
	}
	return got == want
}

func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = match(got[i], want[i])
	}
	if !ok {
		t.Errorf("output:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// recv returns the next value from ch, failing the test after timeout.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case v := <-ch:
		return v
	case <-deadline.C:
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// pipeConn is a Conn served on a pipe, for tests that interleave their
// input with the handling of what came before it.
type pipeConn struct {
	t    *testing.T
	conn *jsonrpc.Conn
	in   *io.PipeWriter
	out  *recorder
	done chan error // Serve's result
}

func startPipe(t *testing.T, ctx context.Context, h jsonrpc.Handler, opt jsonrpc.Options) *pipeConn {
	pr, pw := io.Pipe()
	p := &pipeConn{t: t, in: pw, out: &recorder{}, done: make(chan error, 1)}
	p.conn = jsonrpc.NewConn(jsonrpc.NewLineStream(pr, p.out), h, opt)
	go func() { p.done <- p.conn.Serve(ctx) }()
	// Closing the input ends Serve, and frees a reader that Serve left
	// behind when its context ended.
	t.Cleanup(func() { pw.Close() })
	return p
}

// send writes lines to the Conn's input.
func (p *pipeConn) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			p.t.Fatalf("writing input: %v", err)
		}
	}
}

// served waits for Serve and returns its error.
func (p *pipeConn) served() error {
	p.t.Helper()
	return recv(p.t, p.done, "Serve to return")
}

// finish ends the input, checks that Serve returns nil and returns the
// lines written.
func (p *pipeConn) finish() []string {
	p.t.Helper()
	p.in.Close()
	if err := p.served(); err != nil {
		p.t.Fatalf("Serve = %v, want nil", err)
	}
	return p.out.lines(p.t)
}

// preempter wraps a test's handler: it takes the notification "cancel",
// whose params name the id to cancel, and passes what Conn.Cancel returns
// to found; and the notification "mark", which it reports on marks: once
// a mark is seen, every line before it has been read and each of its
// requests is in flight or answered.
type preempter struct {
	conn  *jsonrpc.Conn
	found chan bool
	marks chan struct{}
}

func newPreempter() *preempter {
	return &preempter{found: make(chan bool, 16), marks: make(chan struct{}, 16)}
}

// wrap returns h with the preempter's notifications taken first.
func (p *preempter) wrap(h jsonrpc.Handler) jsonrpc.Handler {
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if p.preempt(req) {
			return nil, nil
		}
		return h(ctx, req)
	}
}

func (p *preempter) preempt(req *jsonrpc.Request) bool {
	switch req.Method {
	case "cancel":
		var params struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(req.Params, &params); err != nil {
			panic(err) // the tests' own cancels are well formed
		}
		p.found <- p.conn.Cancel(params.ID)
	case "mark":
		p.marks <- struct{}{}
	default:
		return false
	}
	return true
}

const markLine = `{"jsonrpc":"2.0","method":"mark"}`

// cancelLine is the notification that makes a preempter cancel id, a raw
// JSON id.
func cancelLine(id string) string {
	return `{"jsonrpc":"2.0","method":"cancel","params":{"id":` + id + `}}`
}

// slow is a handler whose method "slow" reports on started that it runs,
// and waits for release, or for its context to end, whose cause it then
// reports on ended. Other methods go to testHandler.
type slow struct {
	started chan string
	release chan struct{}
	ended   chan error
}

// isSlow is an Options.Slow that runs "slow" aside.
func isSlow(req *jsonrpc.Request) bool { return req.Method == "slow" }

func newSlow() *slow {
	return &slow{started: make(chan string, 16), release: make(chan struct{}), ended: make(chan error, 16)}
}

func (s *slow) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method != "slow" {
		return testHandler(ctx, req)
	}
	s.started <- string(req.ID)
	select {
	case <-s.release:
		return map[string]string{"slow": "done"}, nil
	case <-ctx.Done():
		s.ended <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

const (
	ping     = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	pong     = `{"jsonrpc":"2.0","id":1,"result":{}}`
	slowDone = `{"jsonrpc":"2.0","id":1,"result":{"slow":"done"}}`
	tooLong  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the 65536-byte line limit; split it into several smaller messages"}}`
	noBatch  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: JSON-RPC batching is not supported"}}`
	dupID    = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: duplicate id of a request in progress"}}`
	badReq   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: *`
	parseErr = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: *`
)

// call is a request line for method with the raw JSON id.
func call(id, method string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"}`
}

// answer is the answer line to id with the raw JSON result.
func answer(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

func TestServeAnswers(t *testing.T) {
	bigParams := `{"s":"` + strings.Repeat("a", jsonrpc.MaxFrame-60) + `"}`
	bigLine := `{"jsonrpc":"2.0","id":1,"method":"echo","params":` + bigParams + `}`
	bigLine += strings.Repeat(" ", jsonrpc.MaxFrame-len(bigLine))
	overParams := `{"s":"` + strings.Repeat("a", jsonrpc.MaxFrame) + `"}`

	tests := []struct {
		name  string
		input []string
		want  []string
		ran   []string // when set, the methods the handler saw, in order
	}{
		{"ping", []string{ping}, []string{pong}, nil},
		{"CRLF and blank lines", []string{"", ping + "\r", "  ", "\t\r"}, []string{pong}, nil},
		{"answers in order", []string{call(`"a"`, "ping"), call(`"b"`, "fail"), call(`"c"`, "ping")}, []string{
			answer(`"a"`, `{}`),
			`{"jsonrpc":"2.0","id":"b","error":{"code":-32603,"message":"Internal error: disk on fire"}}`,
			answer(`"c"`, `{}`),
		}, nil},
		{"errors in order", []string{call(`"a"`, "ping"), `{oops`, call(`"b"`, "ping")},
			[]string{answer(`"a"`, `{}`), parseErr, answer(`"b"`, `{}`)}, nil},

		// Frames.
		{"parse error keeps serving", []string{`{"jsonrpc":"2.0","id":1,`, ping}, []string{parseErr, pong}, nil},
		{"invalid UTF-8", []string{"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", ping}, []string{parseErr, pong}, nil},
		{"frame of exactly MaxFrame bytes", []string{bigLine}, []string{answer("1", bigParams)}, nil},
		{"frame too large keeps serving", []string{bigLine + "x", ping}, []string{tooLong, pong}, nil},
		{"200 KB frame keeps serving", []string{strings.Repeat("[", 200*1024), ping}, []string{tooLong, pong}, nil},
		{"frame too large answered with its id", []string{`{"jsonrpc":"2.0","id":7,"method":"echo","params":` + overParams + `}`, ping},
			[]string{strings.Replace(tooLong, "null", "7", 1), pong}, []string{"ping"}},
		{"frame too large answered with its id written last", []string{`{"jsonrpc":"2.0","method":"echo","params":` + overParams + `,"id":"last"}`},
			[]string{strings.Replace(tooLong, "null", `"last"`, 1)}, nil},
		{"frame too large answered with its id as written", []string{`{"jsonrpc":"2.0","id":"a\u0062","method":"echo","params":` + overParams + `}`},
			[]string{strings.Replace(tooLong, "null", `"a\u0062"`, 1)}, nil},
		{"frame too large with two ids", []string{`{"jsonrpc":"2.0","id":1,"method":"echo","params":` + overParams + `,"id":2}`},
			[]string{tooLong}, nil},

		// Invalid requests: -32600, with the id when it can be read.
		{"wrong version", []string{`{"jsonrpc":"1.0","id":5,"method":"ping"}`},
			[]string{`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}`}, nil},
		{"missing version", []string{`{"id":"v","method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":"v","error":{"code":-32600,*`}, nil},
		{"non-string method", []string{`{"jsonrpc":"2.0","id":6,"method":6}`}, []string{`{"jsonrpc":"2.0","id":6,"error":{"code":-32600,*`}, nil},
		{"missing method", []string{`{"jsonrpc":"2.0","id":6}`}, []string{`{"jsonrpc":"2.0","id":6,"error":{"code":-32600,*`}, nil},
		{"string params", []string{`{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}`}, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,*`}, nil},
		{"null params", []string{`{"jsonrpc":"2.0","id":7,"method":"ping","params":null}`}, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,*`}, nil},
		{"repeated member", []string{`{"jsonrpc":"2.0","id":8,"method":"ping","method":"fail"}`},
			[]string{`{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"Invalid Request: repeated member \"method\""}}`}, nil},
		{"repeated id", []string{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`}, []string{badReq}, nil},
		{"null id", []string{`{"jsonrpc":"2.0","id":null,"method":"ping"}`}, []string{badReq}, nil},
		{"object id", []string{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`}, []string{badReq}, nil},
		{"array id", []string{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`}, []string{badReq}, nil},
		{"bool id", []string{`{"jsonrpc":"2.0","id":false,"method":"ping"}`}, []string{badReq}, nil},
		{"invalid without id is answered", []string{`{"jsonrpc":"2.0","method":1}`, `{"jsonrpc":"1.0","method":"n"}`}, []string{badReq, badReq}, nil},
		{"not an object", []string{`5`, `"ping"`, `null`}, []string{badReq, badReq, badReq}, nil},
		{"empty object", []string{`{}`}, []string{badReq}, nil},
		{"empty batch", []string{`[]`, ` [ ] `}, []string{badReq, badReq}, nil},
		{"invalid keeps serving", []string{`{}`, ping}, []string{badReq, pong}, []string{"ping"}},

		// Notifications run, and are never answered.
		{"notifications unanswered", []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"nope"}`,
			`{"jsonrpc":"2.0","method":"fail"}`,
			`{"jsonrpc":"2.0","method":"panic"}`,
			`{"jsonrpc":"2.0","method":"string"}`,
			ping,
		}, []string{pong}, []string{"notifications/initialized", "nope", "fail", "panic", "string", "ping"}},
		{"notifications with bad params dropped", []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}`,
			`{"jsonrpc":"2.0","method":"panic","params":true}`,
			ping,
		}, []string{pong}, []string{"ping"}},

		// Responses from the peer are ignored.
		{"peer responses ignored", []string{
			`{"jsonrpc":"2.0","id":99,"result":{}}`,
			`{"jsonrpc":"2.0","id":98,"error":{"code":-32601,"message":"x"}}`,
			ping,
		}, []string{pong}, []string{"ping"}},

		// Ids go back as they were written.
		{"ids echoed exactly", []string{
			call(`"1"`, "ping"),
			call(`9007199254740993`, "ping"),
			call(`0`, "ping"),
			call(`-1`, "ping"),
			call(`1.5e3`, "ping"),
			call(`"\u00e9<"`, "ping"),
			`{"jsonrpc":"2.0", "id" : 12345678901234567890 ,"method":"ping"}`,
		}, []string{
			answer(`"1"`, `{}`),
			answer(`9007199254740993`, `{}`),
			answer(`0`, `{}`),
			answer(`-1`, `{}`),
			answer(`1.5e3`, `{}`),
			answer(`"\u00e9<"`, `{}`),
			answer(`12345678901234567890`, `{}`),
		}, nil},

		// Results: nil is {}, anything else must be an object.
		{"nil result", []string{call("1", "ping")}, []string{pong}, nil},
		{"nil map result", []string{call("1", "nilmap")}, []string{answer("1", `{}`)}, nil},
		{"nil pointer result", []string{call("1", "nilpointer")}, []string{answer("1", `{}`)}, nil},
		{"absent params echoed", []string{call("1", "echo")}, []string{answer("1", `{}`)}, nil},
		{"object result", []string{`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,"<\n>"]}}`},
			[]string{answer("1", `{"a":[1,"<\n>"]}`)}, nil},
		{"string result", []string{call("8", "string"), ping},
			[]string{`{"jsonrpc":"2.0","id":8,"error":{"code":-32603,"message":"Internal error: *`, pong}, nil},
		{"array result", []string{call("8", "array")},
			[]string{`{"jsonrpc":"2.0","id":8,"error":{"code":-32603,"message":"Internal error: *`}, nil},
		{"array params echoed", []string{`{"jsonrpc":"2.0","id":9,"method":"echo","params":[1]}`},
			[]string{`{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"Internal error: *`}, nil},
		{"unencodable result", []string{call("11", "unencodable"), ping},
			[]string{`{"jsonrpc":"2.0","id":11,"error":{"code":-32603,"message":"Internal error: *`, pong}, nil},
		{"multi-line raw result on one line", []string{call("12", "multiline")}, []string{answer("12", `{"a":[1,2]}`)}, nil},
		{"no HTML escaping", []string{call("6", "html")}, []string{answer("6", `{"s":"<a&b>"}`)}, nil},

		// Errors: *Error keeps its code, anything else is internal.
		{"method not found is the handler's", []string{call(`"x"`, "nope/nope")},
			[]string{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found: nope/nope"}}`}, nil},
		{"plain error is internal", []string{call("2", "fail")},
			[]string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error: disk on fire"}}`}, nil},
		{"wrapped *Error keeps its code", []string{call("3", "badparams")},
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: x must be set"}}`}, nil},
		{"zero code is internal", []string{call("3", "zerocode")},
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no code"}}`}, nil},
		{"typed nil *Error is internal", []string{call("3", "nilerror")},
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error"}}`}, nil},
		{"error data", []string{call("4", "data")},
			[]string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"with data","data":{"n":1}}}`}, nil},
		{"unencodable error data dropped", []string{call("4", "baddata")},
			[]string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"bad data"}}`}, nil},
		{"panic is internal and serving goes on", []string{call("5", "panic"), ping},
			[]string{`{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error: the handler panicked"}}`, pong},
			[]string{"panic", "ping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m methods
			var l logs
			got := serve(t, strings.Join(tt.input, "\n")+"\n", m.wrap(testHandler), jsonrpc.Options{Logf: l.Logf})
			checkLines(t, got, tt.want)
			if tt.ran != nil && !slices.Equal(m.list(), tt.ran) {
				t.Errorf("handler ran %q, want %q", m.list(), tt.ran)
			}
		})
	}
}

func TestServeLogsPanics(t *testing.T) {
	var l logs
	serve(t, call("5", "panic"), testHandler, jsonrpc.Options{Logf: l.Logf})
	if !l.contains("panic") || !l.contains("boom") {
		t.Errorf("logs = %q, want the panic", l.all())
	}
}

func TestServeReadError(t *testing.T) {
	boom := errors.New("boom")
	var out recorder
	in := io.MultiReader(strings.NewReader(ping+"\n"), iotest.ErrReader(boom))
	c := jsonrpc.NewConn(jsonrpc.NewLineStream(in, &out), testHandler, jsonrpc.Options{})
	if err := c.Serve(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Serve = %v, want %v", err, boom)
	}
	checkLines(t, out.lines(t), []string{pong})
}

// TestServeDuplicateID checks that a request reusing the id of one in
// flight (one waiting to be answered through Respond) is answered with id
// null, which cannot be taken for the answer to the first, and that the
// first is answered as if nothing had come.
func TestServeDuplicateID(t *testing.T) {
	w := newWaiter()
	pre := newPreempter()
	p := startWaiterWith(t, context.Background(), w, pre)

	p.send(call("1", "wait"), call("1", "ping"), call(`"1"`, "ping"), markLine)
	recv(t, pre.marks, "the mark")
	close(w.release)
	if r := recv(t, w.responded, "Respond"); r.err != nil {
		t.Fatalf("Respond = %v, want nil", r.err)
	}
	p.send(call("1", "ping")) // no longer in flight

	checkLines(t, p.finish(), []string{dupID, answer(`"1"`, `{}`), answer("1", `{"woke":"released"}`), pong})
}

// TestServeTooLargeDuplicateID checks that a line too large whose id is
// that of a request in flight is answered with id null.
func TestServeTooLargeDuplicateID(t *testing.T) {
	w := newWaiter()
	pre := newPreempter()
	p := startWaiterWith(t, context.Background(), w, pre)

	p.send(call("1", "wait"))
	p.send(`{"jsonrpc":"2.0","method":"echo","params":{"s":"`+strings.Repeat("a", jsonrpc.MaxFrame)+`"},"id":1}`, markLine)
	recv(t, pre.marks, "the mark")
	close(w.release)
	recv(t, w.responded, "Respond")
	checkLines(t, p.finish(), []string{tooLong, answer("1", `{"woke":"released"}`)})
}

// TestServeSameStringID checks that ids are compared as JSON values: a
// string id written with an escape is the id of the request in flight,
// for a duplicate, a cancellation and Respond, and is still echoed as
// written. A lone surrogate escape, which decodes to U+FFFD, stays apart
// from another one.
func TestServeSameStringID(t *testing.T) {
	w := newWaiter()
	pre := newPreempter()
	responded := make(chan error, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "respond" {
			responded <- conn.Respond(req, map[string]string{"by": "respond"}, nil)
			return nil, jsonrpc.ErrAsync
		}
		return w.handle(ctx, req)
	}
	p := startPipe(t, context.Background(), pre.wrap(h), jsonrpc.Options{})
	pre.conn, conn = p.conn, p.conn
	w.conn, w.out = p.conn, p.out

	p.send(call(`"a"`, "wait"))
	p.send(call(`"\u0061"`, "ping"), cancelLine(`"\u0061"`))
	if !recv(t, pre.found, "the cancel") {
		t.Error(`Cancel("\u0061") did not find the request "a"`)
	}
	if err := recv(t, w.woke, "the waiting request to end"); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("the cancelled request's context ended with %v, want ErrCancelled", err)
	}
	p.send(call(`"\u0062"`, "ping"), call(`"c"`, "respond"))
	if err := recv(t, responded, "Respond"); err != nil {
		t.Errorf(`Respond("\u0063") = %v, want nil`, err)
	}

	p.send(call(`"\ud800"`, "wait"))
	p.send(cancelLine(`"\ud801"`))
	if recv(t, pre.found, "the cancel") {
		t.Error(`Cancel("\ud801") found the request "\ud800"`)
	}
	p.send(cancelLine(`"\ud800"`))
	if !recv(t, pre.found, "the cancel") {
		t.Error(`Cancel("\ud800") did not find its request`)
	}

	checkLines(t, p.finish(), []string{
		dupID,
		answer(`"\u0062"`, `{}`),
		answer(`"c"`, `{"by":"respond"}`),
	})
}

// TestServeCancelRunning checks that a cancelled request's handler sees
// its context end with ErrCancelled, and that what it returns then is not
// sent. A handler on the reading goroutine holds the reading up, so a
// cancellation of it cannot come through the stream: it comes from
// another goroutine, by Conn.Cancel, as the HTTP transport cancels a call
// from the exchange that posts the cancellation. One running aside
// (Options.Slow) is cancelled through the stream.
func TestServeCancelRunning(t *testing.T) {
	for _, tt := range []struct {
		name   string
		slow   func(*jsonrpc.Request) bool
		cancel func(p *pipeConn, pre *preempter) bool
	}{
		{"aside, by a notification", isSlow, func(p *pipeConn, pre *preempter) bool {
			p.send(cancelLine("8"))
			return recv(p.t, pre.found, "the cancel")
		}},
		{"on the reading goroutine, by Conn.Cancel", nil, func(p *pipeConn, _ *preempter) bool {
			return p.conn.Cancel(json.RawMessage("8"))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSlow()
			pre := newPreempter()
			p := startPipe(t, context.Background(), pre.wrap(s.handle), jsonrpc.Options{Slow: tt.slow})
			pre.conn = p.conn

			p.send(call("8", "slow"))
			recv(t, s.started, "the slow request")
			if !tt.cancel(p, pre) {
				t.Error("Cancel did not find the running request")
			}
			if err := recv(t, s.ended, "the slow request to end"); !errors.Is(err, jsonrpc.ErrCancelled) {
				t.Errorf("the handler's context ended with %v, want ErrCancelled", err)
			}
			p.send(ping)
			checkLines(t, p.finish(), []string{pong})
		})
	}
}

// TestServeCancelWaiting checks that Cancel finds a request waiting to be
// answered by its id as a JSON value, once, and that the id is free at
// once.
func TestServeCancelWaiting(t *testing.T) {
	w := newWaiter()
	pre := newPreempter()
	p := startWaiterWith(t, context.Background(), w, pre)

	p.send(call("2", "wait"))
	for _, tt := range []struct {
		id    string
		found bool
	}{
		{"2", true},
		{`"2"`, false}, // a different id
		{"12345", false},
		{"2", false}, // cancelled already
	} {
		p.send(cancelLine(tt.id))
		if got := recv(t, pre.found, "the cancel of "+tt.id); got != tt.found {
			t.Errorf("Cancel(%s) = %v, want %v", tt.id, got, tt.found)
		}
	}
	if err := recv(t, w.woke, "the cancelled wait"); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("the cancelled wait's context ended with %v, want ErrCancelled", err)
	}
	if r := recv(t, w.responded, "its Respond"); !errors.Is(r.err, jsonrpc.ErrCancelled) {
		t.Errorf("Respond after the cancel = %v, want ErrCancelled", r.err)
	}
	p.send(call("2", "ping")) // the id is free again
	checkLines(t, p.finish(), []string{answer("2", `{}`)})
}

// TestServeCancelAfterHandlerReturned checks that a cancellation that
// comes after the handler has returned, but before its answer is written,
// still drops the answer. The handler cancelling itself makes that race
// certain.
func TestServeCancelAfterHandlerReturned(t *testing.T) {
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "selfcancel" {
			conn.Cancel(req.ID)
			return map[string]int{"late": 1}, nil
		}
		return testHandler(ctx, req)
	}
	var out recorder
	conn = jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(call("3", "selfcancel")+"\n"+ping), &out), h, jsonrpc.Options{})
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkLines(t, out.lines(t), []string{pong})
}

func TestServeBatch(t *testing.T) {
	yes := func() bool { return true }
	no := func() bool { return false }
	tests := []struct {
		name  string
		batch func() bool
		input []string
		want  []string
		ran   []string // the methods the handler saw, in order
	}{
		{"refused when Options.Batch is nil", nil,
			[]string{`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":"b","method":"ping"}]`, ping},
			[]string{noBatch, pong}, []string{"ping"}},
		{"refused when Options.Batch says no", no,
			[]string{`[{"jsonrpc":"2.0","id":"a","method":"ping"}]`, ping},
			[]string{noBatch, pong}, []string{"ping"}},
		{"refused with invalid elements", nil,
			[]string{`[1,{"jsonrpc":"2.0","id":"a","method":"ping"}]`},
			[]string{noBatch}, nil},
		{"empty batch", yes, []string{`[]`}, []string{badReq}, nil},
		{"allowed", yes,
			[]string{`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":"b","method":"batchflag"}]`, call("1", "batchflag")},
			[]string{`[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","result":{"batch":true}}]`, answer("1", `{"batch":false}`)},
			[]string{"ping", "note", "batchflag", "batchflag"}},
		{"one element", yes,
			[]string{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
			[]string{`[` + pong + `]`}, []string{"ping"}},
		{"all notifications", yes,
			[]string{`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`, ping},
			[]string{pong}, []string{"a", "b", "ping"}},
		{"invalid elements answered inside", yes,
			[]string{`[1,{"jsonrpc":"1.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"fail"},[],{"jsonrpc":"2.0","id":4,"method":"panic"}]`},
			[]string{`[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a JSON object"}},` +
				`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}},` +
				`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error: disk on fire"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a JSON object"}},` +
				`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"Internal error: the handler panicked"}}]`},
			[]string{"fail", "panic"}},
		{"only invalid elements", yes,
			[]string{`[1,2]`},
			[]string{`[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,*`}, nil},
		{"duplicate id inside", yes,
			[]string{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
			[]string{`[` + pong + `,` + dupID + `]`}, []string{"ping"}},
		{"notification with bad params inside dropped", yes,
			[]string{`[{"jsonrpc":"2.0","method":"note","params":3},{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
			[]string{`[` + answer("2", `{}`) + `]`}, []string{"ping"}},
		{"peer responses inside ignored", yes,
			[]string{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
			[]string{`[` + answer("2", `{}`) + `]`}, []string{"ping"}},
		{"not JSON", yes, []string{`[{"jsonrpc":"2.0","id":1,"method":"ping"},]`}, []string{parseErr}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m methods
			var l logs
			got := serve(t, strings.Join(tt.input, "\n"), m.wrap(testHandler), jsonrpc.Options{Batch: tt.batch, Logf: l.Logf})
			checkLines(t, got, tt.want)
			if !slices.Equal(m.list(), tt.ran) {
				t.Errorf("handler ran %q, want %q", m.list(), tt.ran)
			}
		})
	}
}

// TestServeBatchRefusedFreesIDs checks that the ids of a refused batch
// are free once it is answered.
func TestServeBatchRefusedFreesIDs(t *testing.T) {
	p := startPipe(t, context.Background(), testHandler, jsonrpc.Options{})
	p.send(`[` + ping + `]`)
	p.out.waitLines(t, 1)
	p.send(ping)
	checkLines(t, p.finish(), []string{noBatch, pong})
}

// TestServeBatchRefusalLogged checks that a refused batch is logged, as
// every message the connection refuses.
func TestServeBatchRefusalLogged(t *testing.T) {
	var l logs
	got := serve(t, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, testHandler, jsonrpc.Options{Logf: l.Logf})
	checkLines(t, got, []string{noBatch})
	if !l.contains("JSON-RPC batching is not supported") {
		t.Errorf("logs = %q, want the refusal", l.all())
	}
}

// TestServeBatchAskedInOrder checks that Options.Batch sees the state the
// requests before the array left, as an MCP server does when initialize
// picks a version that allows batches.
func TestServeBatchAskedInOrder(t *testing.T) {
	allowed := false // only the reading goroutine reads and writes it
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "initialize" {
			allowed = true
		}
		return nil, nil
	}
	got := serve(t, strings.Join([]string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		call("2", "initialize"),
		`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
	}, "\n"), h, jsonrpc.Options{Batch: func() bool { return allowed }})
	checkLines(t, got, []string{noBatch, answer("2", `{}`), `[` + answer("3", `{}`) + `]`})
}

// TestServeCancelInsideBatch checks that a cancel inside a batch drops
// the answer of an element already answered.
func TestServeCancelInsideBatch(t *testing.T) {
	pre := newPreempter()
	var out recorder
	input := `[{"jsonrpc":"2.0","id":1,"method":"ping"},` + cancelLine("1") + `,{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	conn := jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(input), &out), pre.wrap(testHandler), jsonrpc.Options{
		Batch: func() bool { return true },
	})
	pre.conn = conn
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !recv(t, pre.found, "the cancel") {
		t.Error("Cancel did not find the batch's first request")
	}
	checkLines(t, out.lines(t), []string{`[` + answer("2", `{}`) + `]`})
}

// TestServeCancelBatchElementNotRun checks that a batch element
// cancelled before its turn never runs and is left out of the array. The
// elements of a batch run one after another on the reading goroutine, so
// the cancellation comes from a notification earlier in the same batch,
// or from another goroutine (Conn.Cancel) while an element before it runs.
func TestServeCancelBatchElementNotRun(t *testing.T) {
	yes := func() bool { return true }
	t.Run("by a notification before it", func(t *testing.T) {
		pre := newPreempter()
		var m methods
		p := startPipe(t, context.Background(), pre.wrap(m.wrap(testHandler)), jsonrpc.Options{Batch: yes})
		pre.conn = p.conn

		p.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},` + cancelLine("2") + `,{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
		if !recv(t, pre.found, "the cancel") {
			t.Error("Cancel did not find the batch element not yet run")
		}
		checkLines(t, p.finish(), []string{`[` + pong + `]`})
		if got, want := m.list(), []string{"ping"}; !slices.Equal(got, want) {
			t.Errorf("handler ran %q, want %q", got, want)
		}
	})
	t.Run("by Conn.Cancel while an element before it runs", func(t *testing.T) {
		s := newSlow()
		var m methods
		p := startPipe(t, context.Background(), m.wrap(s.handle), jsonrpc.Options{Batch: yes})

		p.send(`[` + call("1", "slow") + `,` + call("2", "ping") + `]`)
		recv(t, s.started, "the batch's slow request")
		if !p.conn.Cancel(json.RawMessage("2")) {
			t.Error("Cancel did not find the batch element not yet run")
		}
		close(s.release)
		checkLines(t, p.finish(), []string{`[` + slowDone + `]`})
		if got, want := m.list(), []string{"slow"}; !slices.Equal(got, want) {
			t.Errorf("handler ran %q, want %q", got, want)
		}
	})
}

// early is a handler whose method "early" answers through Respond before
// it returns: it reports on responded what Respond returned and how many
// lines were written by then, waits for release, and returns ErrAsync
// when Respond succeeded, or a result of its own when it did not. Other
// methods go to testHandler.
type early struct {
	conn      *jsonrpc.Conn
	out       *recorder
	responded chan respondReport
	release   chan struct{}
}

// respondReport is what an early handler saw: Respond's error, and the
// lines written when Respond returned.
type respondReport struct {
	err     error
	written int
}

func newEarly(out *recorder) *early {
	return &early{out: out, responded: make(chan respondReport, 16), release: make(chan struct{})}
}

func (e *early) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method != "early" {
		return testHandler(ctx, req)
	}
	err := e.conn.Respond(req, map[string]string{"from": "respond"}, nil)
	e.responded <- respondReport{err, e.out.count()}
	<-e.release
	if err != nil {
		return map[string]string{"from": "return"}, nil
	}
	return nil, jsonrpc.ErrAsync
}

// TestRespondInsideHandler checks the answer a handler gives through
// Respond before it returns: it is written when Respond returns, and the
// requests after it wait for the handler.
func TestRespondInsideHandler(t *testing.T) {
	e := newEarly(nil)
	var m methods
	p := startPipe(t, context.Background(), m.wrap(e.handle), jsonrpc.Options{})
	e.conn, e.out = p.conn, p.out

	// One write: the ping is read only once the handler returns.
	p.send(call("1", "early") + "\n" + call("2", "ping"))
	r := recv(t, e.responded, "Respond")
	if r.err != nil {
		t.Fatalf("Respond = %v, want nil", r.err)
	}
	if r.written != 1 {
		t.Errorf("Respond returned with %d lines written, want 1", r.written)
	}
	// The handler has not returned, so the ping behind it cannot have run.
	if got, want := m.list(), []string{"early"}; !slices.Equal(got, want) {
		t.Errorf("before the handler returned, ran %q, want %q", got, want)
	}
	close(e.release)
	checkLines(t, p.finish(), []string{answer("1", `{"from":"respond"}`), answer("2", `{}`)})
}

// TestRespondInBatch checks Respond from inside a batch: only the last
// request of the batch can answer before the batch has run, and its
// Respond writes the whole array, answers of invalid elements after it
// included; the notifications after it run once its handler returns.
func TestRespondInBatch(t *testing.T) {
	for _, tt := range []struct {
		name    string
		input   string
		wantErr error
		want    string
		ran     []string
	}{
		{"not last",
			`[{"jsonrpc":"2.0","id":1,"method":"early"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
			jsonrpc.ErrBatchPending,
			`[` + answer("1", `{"from":"return"}`) + `,` + answer("2", `{}`) + `]`,
			[]string{"early", "ping"}},
		{"last",
			`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"early"},` +
				`{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"1.0","id":3,"method":"ping"}]`,
			nil,
			`[` + pong + `,` + answer("2", `{"from":"respond"}`) + `,` +
				`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}]`,
			[]string{"ping", "early", "note"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := &recorder{}
			e := newEarly(out)
			close(e.release)
			var m methods
			conn := jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(tt.input), out), m.wrap(e.handle), jsonrpc.Options{Batch: func() bool { return true }})
			e.conn = conn
			if err := conn.Serve(context.Background()); err != nil {
				t.Fatalf("Serve = %v", err)
			}
			r := recv(t, e.responded, "Respond")
			if !errors.Is(r.err, tt.wantErr) || (tt.wantErr == nil) != (r.err == nil) {
				t.Errorf("Respond = %v, want %v", r.err, tt.wantErr)
			}
			if r.err == nil && r.written != 1 {
				t.Errorf("Respond returned with %d lines written, want the array", r.written)
			}
			checkLines(t, out.lines(t), []string{tt.want})
			if got := m.list(); !slices.Equal(got, tt.ran) {
				t.Errorf("handler ran %q, want %q", got, tt.ran)
			}
		})
	}
}

// waiter is a handler whose method "wait" returns ErrAsync at once and
// answers from a goroutine of its own: when release is closed or its
// context ends. It reports the context's cause (nil when released) on
// woke, and what Respond returned, with the lines written by then, on
// responded. Other methods go to testHandler.
type waiter struct {
	conn      *jsonrpc.Conn
	out       *recorder
	release   chan struct{}
	after     chan struct{} // when set, Respond waits for it after waking
	woke      chan error
	responded chan respondReport
}

func newWaiter() *waiter {
	return &waiter{
		release:   make(chan struct{}),
		woke:      make(chan error, 16),
		responded: make(chan respondReport, 16),
	}
}

func (w *waiter) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method != "wait" {
		return testHandler(ctx, req)
	}
	go func() {
		var cause error
		select {
		case <-w.release:
		case <-ctx.Done():
			cause = context.Cause(ctx)
		}
		w.woke <- cause
		if w.after != nil {
			<-w.after
		}
		result := map[string]string{"woke": "released"}
		if cause != nil {
			result["woke"] = cause.Error()
		}
		err := w.conn.Respond(req, result, nil)
		w.responded <- respondReport{err, w.out.count()}
	}()
	return nil, jsonrpc.ErrAsync
}

// startWaiter serves w on a pipe.
func startWaiter(t *testing.T, ctx context.Context, w *waiter, opt jsonrpc.Options) *pipeConn {
	p := startPipe(t, ctx, w.handle, opt)
	w.conn, w.out = p.conn, p.out
	return p
}

// startWaiterWith is startWaiter with the preempter's notifications, for
// the Conn it serves.
func startWaiterWith(t *testing.T, ctx context.Context, w *waiter, pre *preempter) *pipeConn {
	p := startPipe(t, ctx, pre.wrap(w.handle), jsonrpc.Options{})
	w.conn, w.out, pre.conn = p.conn, p.out, p.conn
	return p
}

// TestAsyncDoesNotHoldUp checks that a handler that returns ErrAsync lets
// the requests after it be answered first, and that its Respond returns
// nil once its answer is written.
func TestAsyncDoesNotHoldUp(t *testing.T) {
	w := newWaiter()
	p := startWaiter(t, context.Background(), w, jsonrpc.Options{})
	p.send(call("1", "wait"), call("2", "ping"))
	p.out.waitLines(t, 1)
	p.send(call("1", "ping")) // its id is still in flight
	p.out.waitLines(t, 2)
	close(w.release)
	if err := recv(t, w.woke, "the waiter"); err != nil {
		t.Errorf("the waiter's context ended with %v before it answered", err)
	}
	r := recv(t, w.responded, "Respond")
	if r.err != nil {
		t.Errorf("Respond = %v, want nil", r.err)
	}
	if r.written != 3 {
		t.Errorf("Respond returned with %d lines written, want 3", r.written)
	}
	checkLines(t, p.finish(), []string{answer("2", `{}`), dupID, answer("1", `{"woke":"released"}`)})
}

// TestAsyncCancelled checks that a call answered through Respond that is
// cancelled sees its context end with ErrCancelled, that Respond then
// returns ErrCancelled, and that nothing is written for it.
func TestAsyncCancelled(t *testing.T) {
	w := newWaiter()
	pre := newPreempter()
	p := startWaiterWith(t, context.Background(), w, pre)
	p.send(call(`"w"`, "wait"), call("2", "ping"))
	p.out.waitLines(t, 1)
	p.send(cancelLine(`"w"`))
	if !recv(t, pre.found, "the cancel") {
		t.Error("Cancel did not find the call waiting to be answered")
	}
	if err := recv(t, w.woke, "the waiter"); !errors.Is(err, jsonrpc.ErrCancelled) {
		t.Errorf("the waiter's context ended with %v, want ErrCancelled", err)
	}
	if r := recv(t, w.responded, "Respond"); !errors.Is(r.err, jsonrpc.ErrCancelled) {
		t.Errorf("Respond after Cancel = %v, want ErrCancelled", r.err)
	}
	p.send(call(`"w"`, "ping")) // the id is free again
	checkLines(t, p.finish(), []string{answer("2", `{}`), answer(`"w"`, `{}`)})
}

// TestAsyncBatchElement checks that a batch element cannot answer later:
// when its handler returns ErrAsync it is left out of the array, and its
// context ends.
func TestAsyncBatchElement(t *testing.T) {
	w := newWaiter()
	var out recorder
	w.out = &out
	conn := jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(
		`[{"jsonrpc":"2.0","id":1,"method":"wait"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`), &out),
		w.handle, jsonrpc.Options{Batch: func() bool { return true }})
	w.conn = conn
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, w.woke, "the waiter"); err == nil {
		t.Error("the waiter was released, want its context ended")
	}
	if r := recv(t, w.responded, "Respond"); r.err == nil {
		t.Error("Respond from a batch element after its batch = nil, want an error")
	}
	checkLines(t, out.lines(t), []string{`[` + answer("2", `{}`) + `]`})
}

// TestAsyncStopping checks that when the connection stops reading, at the
// end of its input or when its context is cancelled without a cause of
// its own, a call still to be answered through Respond has its context
// cancelled with the cause ErrStopping, and that its answer, given then,
// still goes out before Serve returns.
func TestAsyncStopping(t *testing.T) {
	for _, tt := range []struct {
		name    string
		stop    func(p *pipeConn, cancel context.CancelFunc)
		wantErr error
	}{
		{"end of input", func(p *pipeConn, _ context.CancelFunc) { p.in.Close() }, nil},
		{"context cancelled", func(_ *pipeConn, cancel context.CancelFunc) { cancel() }, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := newWaiter()
			p := startWaiter(t, ctx, w, jsonrpc.Options{})
			p.send(call("1", "wait"), call("2", "ping"))
			// The ping's answer means the waiter's handler has returned.
			p.out.waitLines(t, 1)
			tt.stop(p, cancel)
			if err := recv(t, w.woke, "the waiter"); !errors.Is(err, jsonrpc.ErrStopping) {
				t.Errorf("the waiter's context ended with %v, want ErrStopping", err)
			}
			if r := recv(t, w.responded, "Respond"); r.err != nil {
				t.Errorf("Respond = %v, want nil", r.err)
			}
			if err := p.served(); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Serve = %v, want %v", err, tt.wantErr)
			}
			checkLines(t, p.out.lines(t), []string{
				answer("2", `{}`),
				answer("1", `{"woke":"`+jsonrpc.ErrStopping.Error()+`"}`),
			})
		})
	}
}

// TestAsyncAfterStopping checks that a handler that returns ErrAsync once
// reading has stopped has its context cancelled with ErrStopping at once,
// and that its answer still goes out. Reading stops while such a handler
// runs at the end of the input, read meanwhile when the handler runs
// aside (Options.Slow), or when Serve's context is cancelled, which a
// handler on the reading goroutine learns through Stopping.
func TestAsyncAfterStopping(t *testing.T) {
	t.Run("aside, at the end of the input", func(t *testing.T) {
		w := newWaiter()
		stopped := make(chan struct{})
		h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method == "late" {
				<-stopped
				req.Method = "wait" // Respond takes this very request
				return w.handle(ctx, req)
			}
			return w.handle(ctx, req)
		}
		// "late" runs aside, so the end of the input is read while it runs.
		p := startPipe(t, context.Background(), h, jsonrpc.Options{Slow: func(req *jsonrpc.Request) bool { return req.Method == "late" }})
		w.conn, w.out = p.conn, p.out
		p.send(call("1", "wait"), call("2", "late"))
		p.in.Close()
		// The first waiter's context ends when reading stops.
		for i := range 2 {
			if err := recv(t, w.woke, "a waiter"); !errors.Is(err, jsonrpc.ErrStopping) {
				t.Errorf("a waiter's context ended with %v, want ErrStopping", err)
			}
			if i == 0 {
				close(stopped)
			}
			if r := recv(t, w.responded, "Respond"); r.err != nil {
				t.Errorf("Respond = %v, want nil", r.err)
			}
		}
		if err := p.served(); err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
		got := p.out.lines(t)
		slices.Sort(got)
		woke := `{"woke":"` + jsonrpc.ErrStopping.Error() + `"}`
		checkLines(t, got, []string{answer("1", woke), answer("2", woke)})
	})
	t.Run("on the reading goroutine, at a cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := newWaiter()
		started := make(chan struct{}, 1)
		h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method == "late" {
				started <- struct{}{}
				select {
				case <-jsonrpc.Stopping(ctx):
				case <-time.After(timeout):
					return nil, errors.New("Stopping was never closed")
				}
				req.Method = "wait" // Respond takes this very request
			}
			return w.handle(ctx, req)
		}
		p := startPipe(t, ctx, h, jsonrpc.Options{})
		w.conn, w.out = p.conn, p.out
		p.send(call("1", "wait"), call("2", "late"))
		recv(t, started, "the late request")
		cancel()
		for range 2 {
			if err := recv(t, w.woke, "a waiter"); !errors.Is(err, jsonrpc.ErrStopping) {
				t.Errorf("a waiter's context ended with %v, want ErrStopping", err)
			}
			if r := recv(t, w.responded, "Respond"); r.err != nil {
				t.Errorf("Respond = %v, want nil", r.err)
			}
		}
		if err := p.served(); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
		got := p.out.lines(t)
		slices.Sort(got)
		woke := `{"woke":"` + jsonrpc.ErrStopping.Error() + `"}`
		checkLines(t, got, []string{answer("1", woke), answer("2", woke)})
	})
}

// TestServeGone checks that a context cancelled with a cause of its own,
// which says the peer is gone, ends Serve without the grace period: Serve
// returns while a call is still to be answered and a handler still runs,
// with nothing to log (the grace running out would be logged), the
// running handler's context ends, the request after it never runs, and a
// Respond after it returns ErrClosed. The request after the running
// handler is read at once when that handler runs aside (Options.Slow), and
// once it has returned when it runs on the reading goroutine: either way
// Serve has given up by then, and it must not run.
func TestServeGone(t *testing.T) {
	for _, tt := range []struct {
		name string
		slow func(*jsonrpc.Request) bool
	}{
		{"handler aside", isSlow},
		{"handler on the reading goroutine", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var l logs
			s := newSlow()
			w := newWaiter()
			w.after = make(chan struct{})
			var m methods
			h := m.wrap(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				if req.Method == "wait" {
					return w.handle(ctx, req)
				}
				return s.handle(ctx, req)
			})
			p := startPipe(t, ctx, h, jsonrpc.Options{Logf: l.Logf, Slow: tt.slow})
			w.conn, w.out = p.conn, p.out
			// One write for the slow request and the one after it: a
			// handler on the reading goroutine holds the reading up.
			p.send(call("1", "wait"), call("2", "slow")+"\n"+call("3", "after"))
			recv(t, s.started, "the slow request")

			cancel(errors.New("gone"))
			if err := p.served(); !errors.Is(err, context.Canceled) {
				t.Errorf("Serve = %v, want context.Canceled", err)
			}
			if err := recv(t, w.woke, "the waiter"); !errors.Is(err, jsonrpc.ErrStopping) {
				t.Errorf("the waiter's context ended with %v, want ErrStopping", err)
			}
			recv(t, s.ended, "the slow request's context to end")
			close(w.after)
			if r := recv(t, w.responded, "Respond"); !errors.Is(r.err, jsonrpc.ErrClosed) {
				t.Errorf("Respond after Serve returned = %v, want ErrClosed", r.err)
			}
			if err := p.conn.Notify("late", nil); !errors.Is(err, jsonrpc.ErrClosed) {
				t.Errorf("Notify after Serve returned = %v, want ErrClosed", err)
			}

			// Once every goroutine of the Conn has ended, nothing more can run.
			p.in.Close()
			settleGoroutines(t, before)
			if got, want := m.list(), []string{"wait", "slow"}; !slices.Equal(got, want) {
				t.Errorf("handler ran %q, want %q", got, want)
			}
			if got := p.out.lines(t); len(got) != 0 {
				t.Errorf("wrote %q", got)
			}
			if got := l.all(); len(got) != 0 {
				t.Errorf("logs = %q, want none", got)
			}
		})
	}
}

// TestServeContextCancelled checks that a context cancelled without a
// cause of its own lets the running request finish within the grace, with
// its answer, and that handlers keep Serve's context values.
func TestServeContextCancelled(t *testing.T) {
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	defer cancel()
	s := newSlow()
	values := make(chan any, 1)
	h := func(hctx context.Context, req *jsonrpc.Request) (any, error) {
		values <- hctx.Value(key{})
		return s.handle(hctx, req)
	}
	p := startPipe(t, ctx, h, jsonrpc.Options{})
	p.send(call("1", "slow"))
	recv(t, s.started, "the slow request")
	if v := recv(t, values, "the handler"); v != "v" {
		t.Errorf("the handler's context has value %v, want Serve's v", v)
	}
	cancel()
	close(s.release)
	if err := p.served(); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v, want context.Canceled", err)
	}
	checkLines(t, p.out.lines(t), []string{slowDone})
}

// TestServeOneWritePerLine checks that answers, batch arrays and
// notifications written at the same time each go out in one Write.
func TestServeOneWritePerLine(t *testing.T) {
	var out recorder
	var input strings.Builder
	for i := range 200 {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"i":%d,"s":"%s"}}`+"\n", i, i, strings.Repeat("x", i*50))
	}
	input.WriteString(`[{"jsonrpc":"2.0","id":"b1","method":"echo","params":{"s":"a\nb"}},{"jsonrpc":"2.0","id":"b2","method":"multiline"}]` + "\n")
	conn := jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(input.String()), &out), testHandler, jsonrpc.Options{Batch: func() bool { return true }})
	errs := make(chan error, 4*50)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				errs <- conn.Notify("notifications/progress", map[string]any{"g": i, "j": j, "s": "x\ny"})
			}
		})
	}
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		// A notification sent after Serve returned is refused.
		if err != nil && !errors.Is(err, jsonrpc.ErrClosed) {
			t.Errorf("Notify = %v", err)
		}
	}
	answers := 0
	for _, l := range out.lines(t) {
		if !strings.Contains(l, `"method":"notifications/progress"`) {
			answers++
		}
	}
	if answers != 201 {
		t.Errorf("got %d answer lines, want 201", answers)
	}
}

func TestNotify(t *testing.T) {
	var out recorder
	conn := jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(""), &out), testHandler, jsonrpc.Options{})
	if err := conn.Notify("notifications/message", map[string]string{"text": "<b>&"}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Notify("notifications/tools/list_changed", nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.Notify("bad", make(chan int)); err == nil {
		t.Error("Notify with unencodable params = nil, want an error")
	}
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := conn.Notify("late", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Notify after Serve returned = %v, want ErrClosed", err)
	}
	if err := conn.Respond(&jsonrpc.Request{ID: json.RawMessage("1"), Method: "x"}, nil, nil); err == nil {
		t.Error("Respond after Serve returned = nil, want an error")
	}
	if err := conn.Serve(context.Background()); err == nil {
		t.Error("a second Serve = nil, want an error")
	}
	checkLines(t, out.lines(t), []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"text":"<b>&"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	})
}

// failingWriter fails every Write, and counts them.
type failingWriter struct {
	mu    sync.Mutex
	calls int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	return 0, errors.New("broken pipe")
}

// TestServeWriteError checks that after a failed Write nothing more is
// written, since the peer could not find where the next line starts: the
// answers after it are dropped and logged, and Notify returns the error.
func TestServeWriteError(t *testing.T) {
	var l logs
	w := &failingWriter{}
	notified := make(chan error, 1)
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "notify" {
			notified <- conn.Notify("notifications/message", nil)
		}
		return nil, nil
	}
	input := ping + "\n" + call("2", "notify") + "\n" + `[` + call("3", "ping") + `]`
	conn = jsonrpc.NewConn(jsonrpc.NewLineStream(strings.NewReader(input), w), h, jsonrpc.Options{Logf: l.Logf, Batch: func() bool { return true }})
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	if err := recv(t, notified, "Notify"); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("Notify after a failed write = %v, want the write error", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls != 1 {
		t.Errorf("Write called %d times, want 1: after a failure the stream is unusable", w.calls)
	}
	if !l.contains("broken pipe") {
		t.Errorf("logs = %q, want the write error", l.all())
	}
}

// settleGoroutines waits until no more goroutines run than before. There
// is nothing to wait on for a goroutine's end, so it polls.
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		<-tick.C
	}
}

// TestServeNoGoroutineLeak checks that no goroutine of a Conn outlives
// Serve, whichever way it ends: at the end of its input, with calls
// answered later, cancelled, or in batches, and when its context is
// cancelled with a cause of its own while a handler runs, aside or on the
// reading goroutine (once its input ends too, since a Read cannot be
// interrupted).
func TestServeNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 5 {
		serve(t, ping+"\n"+`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n"+call("3", "panic"), testHandler, jsonrpc.Options{Batch: func() bool { return true }})

		w := newWaiter()
		pre := newPreempter()
		p := startWaiterWith(t, context.Background(), w, pre)
		p.send(call("1", "wait"), call("2", "wait"), call("3", "wait"), call("4", "ping"))
		p.out.waitLines(t, 1) // the waiters' handlers have returned
		p.send(cancelLine("2"))
		if !recv(t, pre.found, "the cancel") {
			t.Fatal("Cancel did not find a call waiting to be answered")
		}
		recv(t, w.woke, "the cancelled waiter")
		recv(t, w.responded, "the cancelled waiter's Respond")
		close(w.release)
		recv(t, w.woke, "a released waiter")
		recv(t, w.responded, "a released waiter's Respond")
		recv(t, w.woke, "a released waiter")
		recv(t, w.responded, "a released waiter's Respond")
		p.finish()

		// Gone while a handler runs aside, and while one runs on the
		// reading goroutine. One write: the latter holds the reading up.
		for _, slow := range []func(*jsonrpc.Request) bool{isSlow, nil} {
			ctx, cancel := context.WithCancelCause(context.Background())
			s := newSlow()
			p = startPipe(t, ctx, s.handle, jsonrpc.Options{Slow: slow})
			p.send(call("1", "slow") + "\n" + ping)
			recv(t, s.started, "the slow request")
			cancel(errors.New("gone"))
			p.served()
			p.in.Close()
		}
	}
	settleGoroutines(t, before)
}
