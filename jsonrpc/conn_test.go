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
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"agentmail/jsonrpc"
)

// recorder is an io.Writer that keeps every Write call apart, so tests can
// check that each line went out in exactly one call.
type recorder struct {
	mu     sync.Mutex
	writes []string
	wrote  chan struct{} // receives a value after every Write, if non-nil
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, string(p))
	r.mu.Unlock()
	if r.wrote != nil {
		r.wrote <- struct{}{}
	}
	return len(p), nil
}

// lines returns the writes so far, checking that each is one JSON line.
func (r *recorder) lines(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, w := range r.writes {
		line, ok := strings.CutSuffix(w, "\n")
		if !ok || strings.Contains(line, "\n") {
			t.Errorf("Write(%q) is not exactly one line", w)
		}
		if !json.Valid([]byte(line)) {
			t.Errorf("Write(%q) is not valid JSON", w)
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

func (l *logs) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(line string) bool { return strings.Contains(line, s) })
}

// testHandler answers a few methods the tests use.
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
	case "nilmap":
		return map[string]int(nil), nil
	case "unencodable":
		return map[string]any{"c": make(chan int)}, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s", req.Method)
}

// serve runs a Conn over input until EOF and returns the lines written.
func serve(t *testing.T, input string, h jsonrpc.Handler, opt jsonrpc.Options) []string {
	t.Helper()
	var out recorder
	c := jsonrpc.NewConn(strings.NewReader(input), &out, h, opt)
	if err := c.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	return out.lines(t)
}

// match reports whether got equals want, or starts with want's text before a
// final "*".
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

const (
	ping     = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	pong     = `{"jsonrpc":"2.0","id":1,"result":{}}`
	tooLong  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message exceeds the 65536-byte line limit; split it into several smaller messages"}}`
	noBatch  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: JSON-RPC batching is not supported"}}`
	badReq   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: *`
	parseErr = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: *`
)

func TestServeAnswers(t *testing.T) {
	bigParams := `{"s":"` + strings.Repeat("a", jsonrpc.MaxFrame-60) + `"}`
	bigLine := `{"jsonrpc":"2.0","id":1,"method":"echo","params":` + bigParams + `}`
	for len(bigLine) < jsonrpc.MaxFrame {
		bigLine += " "
	}
	overParams := `{"s":"` + strings.Repeat("a", jsonrpc.MaxFrame) + `"}`

	tests := []struct {
		name  string
		input []string
		want  []string
	}{
		{"ping", []string{ping}, []string{pong}},
		{"CRLF and blank lines", []string{"", ping + "\r", "  ", "\t\r"}, []string{pong}},
		{"parse error keeps serving", []string{`{"jsonrpc":"2.0","id":1,`, ping}, []string{parseErr, pong}},
		{"frame of exactly MaxFrame bytes", []string{bigLine}, []string{`{"jsonrpc":"2.0","id":1,"result":` + bigParams + `}`}},
		{"frame too large keeps serving", []string{bigLine + "x", ping}, []string{tooLong, pong}},
		{"200 KB frame keeps serving", []string{strings.Repeat("[", 200*1024), ping}, []string{tooLong, pong}},
		{"frame too large echoes its id first", []string{`{"jsonrpc":"2.0","id":7,"method":"echo","params":` + overParams + `}`, ping},
			[]string{strings.Replace(tooLong, "null", "7", 1), pong}},
		{"frame too large echoes its id last", []string{`{"jsonrpc":"2.0","method":"echo","params":` + overParams + `,"id":"last"}`, ping},
			[]string{strings.Replace(tooLong, "null", `"last"`, 1), pong}},
		{"frame too large echoes its id as written", []string{`{"jsonrpc":"2.0","id":"a\u0062","method":"echo","params":` + overParams + `}`, ping},
			[]string{strings.Replace(tooLong, "null", `"a\u0062"`, 1), pong}},
		{"frame too large with two ids", []string{`{"jsonrpc":"2.0","id":1,"method":"echo","params":` + overParams + `,"id":2}`, ping},
			[]string{tooLong, pong}},

		// Invalid requests.
		{"wrong version echoes id", []string{`{"jsonrpc":"1.0","id":5,"method":"ping"}`},
			[]string{`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}`}},
		{"missing version", []string{`{"id":"v","method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":"v","error":{"code":-32600,*`}},
		{"non-string method", []string{`{"jsonrpc":"2.0","id":6,"method":6}`}, []string{`{"jsonrpc":"2.0","id":6,"error":{"code":-32600,*`}},
		{"missing method", []string{`{"jsonrpc":"2.0","id":6}`}, []string{`{"jsonrpc":"2.0","id":6,"error":{"code":-32600,*`}},
		{"string params", []string{`{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}`}, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,*`}},
		{"null params", []string{`{"jsonrpc":"2.0","id":7,"method":"ping","params":null}`}, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,*`}},
		{"null id", []string{`{"jsonrpc":"2.0","id":null,"method":"ping"}`}, []string{badReq}},
		{"object id", []string{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`}, []string{badReq}},
		{"array id", []string{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`}, []string{badReq}},
		{"bool id", []string{`{"jsonrpc":"2.0","id":false,"method":"ping"}`}, []string{badReq}},
		{"invalid without id is answered", []string{`{"jsonrpc":"2.0","method":1}`, `{"jsonrpc":"1.0","method":"n"}`}, []string{badReq, badReq}},
		{"not an object", []string{`5`, `"ping"`, `null`}, []string{badReq, badReq, badReq}},
		{"empty object", []string{`{}`}, []string{badReq}},
		{"invalid UTF-8", []string{"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}"}, []string{parseErr}},

		// Notifications are never answered.
		{"notifications unanswered", []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"nope"}`,
			`{"jsonrpc":"2.0","method":"fail"}`,
			`{"jsonrpc":"2.0","method":"panic"}`,
			`{"jsonrpc":"2.0","method":"string"}`,
			ping,
		}, []string{pong}},
		{"notifications with bad params unanswered", []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}`,
			`{"jsonrpc":"2.0","method":"panic","params":true}`,
			`{"jsonrpc":"2.0","method":"","params":1}`,
			ping,
		}, []string{pong}},

		// Ids go back byte for byte.
		{"ids echoed exactly", []string{
			`{"jsonrpc":"2.0","id":"1","method":"ping"}`,
			`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":0,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":-1,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":"\u00e9<","method":"ping"}`,
			`{"jsonrpc":"2.0", "id" : 12345678901234567890 ,"method":"ping"}`,
		}, []string{
			`{"jsonrpc":"2.0","id":"1","result":{}}`,
			`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`,
			`{"jsonrpc":"2.0","id":0,"result":{}}`,
			`{"jsonrpc":"2.0","id":-1,"result":{}}`,
			`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
			`{"jsonrpc":"2.0","id":"\u00e9<","result":{}}`,
			`{"jsonrpc":"2.0","id":12345678901234567890,"result":{}}`,
		}},

		{"peer responses ignored", []string{
			`{"jsonrpc":"2.0","id":99,"result":{}}`,
			`{"jsonrpc":"2.0","id":98,"error":{"code":-32601,"message":"x"}}`,
			ping,
		}, []string{pong}},

		// Handler results and errors.
		{"method not found is the handler's", []string{`{"jsonrpc":"2.0","id":"x","method":"nope/nope"}`},
			[]string{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found: nope/nope"}}`}},
		{"plain error is internal", []string{`{"jsonrpc":"2.0","id":2,"method":"fail"}`},
			[]string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error: disk on fire"}}`}},
		{"wrapped *Error keeps code", []string{`{"jsonrpc":"2.0","id":3,"method":"badparams"}`},
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: x must be set"}}`}},
		{"zero code becomes internal", []string{`{"jsonrpc":"2.0","id":3,"method":"zerocode"}`},
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no code"}}`}},
		{"typed nil *Error is internal", []string{`{"jsonrpc":"2.0","id":3,"method":"nilerror"}`},
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error"}}`}},
		{"error data", []string{`{"jsonrpc":"2.0","id":4,"method":"data"}`},
			[]string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"with data","data":{"n":1}}}`}},
		{"unencodable error data dropped", []string{`{"jsonrpc":"2.0","id":4,"method":"baddata"}`},
			[]string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"bad data"}}`}},
		{"panic is internal and serving goes on", []string{`{"jsonrpc":"2.0","id":5,"method":"panic"}`, ping},
			[]string{`{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error: the handler panicked"}}`, pong}},
		{"no HTML escaping", []string{`{"jsonrpc":"2.0","id":6,"method":"html"}`},
			[]string{`{"jsonrpc":"2.0","id":6,"result":{"s":"<a&b>"}}`}},
		// A one-line json.RawMessage goes out as it is; one that spans lines
		// is compacted, so that it cannot split the frame.
		{"raw params echoed as they are", []string{`{"jsonrpc":"2.0","id":7,"method":"echo","params":{ "b" : 2, "a":[1, "<\n>"] }}`},
			[]string{`{"jsonrpc":"2.0","id":7,"result":{ "b" : 2, "a":[1, "<\n>"] }}`}},
		{"multi-line raw result compacted", []string{`{"jsonrpc":"2.0","id":12,"method":"multiline"}`},
			[]string{`{"jsonrpc":"2.0","id":12,"result":{"a":[1,2]}}`}},
		{"non-object result", []string{`{"jsonrpc":"2.0","id":8,"method":"string"}`, `{"jsonrpc":"2.0","id":9,"method":"echo","params":[1]}`},
			[]string{`{"jsonrpc":"2.0","id":8,"error":{"code":-32603,*`, `{"jsonrpc":"2.0","id":9,"error":{"code":-32603,*`}},
		{"nil map result", []string{`{"jsonrpc":"2.0","id":10,"method":"nilmap"}`}, []string{`{"jsonrpc":"2.0","id":10,"result":{}}`}},
		{"unencodable result", []string{`{"jsonrpc":"2.0","id":11,"method":"unencodable"}`, ping},
			[]string{`{"jsonrpc":"2.0","id":11,"error":{"code":-32603,*`, pong}},

		// Answers come out in arrival order, errors included.
		{"order kept", []string{
			`{"jsonrpc":"2.0","id":"a","method":"ping"}`,
			`{oops`,
			`{"jsonrpc":"2.0","id":"b","method":"ping"}`,
		}, []string{
			`{"jsonrpc":"2.0","id":"a","result":{}}`,
			parseErr,
			`{"jsonrpc":"2.0","id":"b","result":{}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var l logs
			got := serve(t, strings.Join(tt.input, "\n")+"\n", testHandler, jsonrpc.Options{Logf: l.Logf})
			checkLines(t, got, tt.want)
		})
	}
}

func TestServeLogsPanics(t *testing.T) {
	var l logs
	serve(t, `{"jsonrpc":"2.0","id":5,"method":"panic"}`, testHandler, jsonrpc.Options{Logf: l.Logf})
	if !l.contains("panic") || !l.contains("boom") {
		t.Errorf("logs = %q, want the panic", l.lines)
	}
}

func TestServeBatch(t *testing.T) {
	yes := func() bool { return true }
	no := func() bool { return false }
	tests := []struct {
		name  string
		batch func() bool
		input []string
		want  []string
		ran   []string // methods the handler saw, in order
	}{
		{"refused when Options.Batch is nil", nil,
			[]string{`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"note"}]`, ping},
			[]string{noBatch, pong}, []string{"ping"}},
		{"refused when Options.Batch says no", no,
			[]string{`[{"jsonrpc":"2.0","id":"a","method":"ping"}]`, ping},
			[]string{noBatch, pong}, []string{"ping"}},
		{"empty batch", yes, []string{`[]`, ` [ ] `}, []string{badReq, badReq}, nil},
		{"empty batch when refused", nil, []string{`[]`}, []string{badReq}, nil},
		{"allowed", yes,
			[]string{`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":"b","method":"batchflag"}]`},
			[]string{`[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","result":{"batch":true}}]`},
			[]string{"ping", "note", "batchflag"}},
		{"all notifications", yes,
			[]string{`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`, ping},
			[]string{pong}, []string{"a", "b", "ping"}},
		{"invalid elements answered inside", yes,
			[]string{`[1,{"jsonrpc":"1.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"fail"},[]]`},
			[]string{`[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a JSON object"}},` +
				`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}},` +
				`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error: disk on fire"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a JSON object"}}]`},
			[]string{"fail"}},
		{"duplicate id inside a batch", yes,
			[]string{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
			[]string{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: duplicate id of a request in progress"}}]`},
			[]string{"ping"}},
		{"notification with bad params inside dropped", yes,
			[]string{`[{"jsonrpc":"2.0","method":"note","params":3},{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
			[]string{`[{"jsonrpc":"2.0","id":2,"result":{}}]`}, []string{"ping"}},
		{"peer responses inside ignored", yes,
			[]string{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
			[]string{`[{"jsonrpc":"2.0","id":2,"result":{}}]`}, []string{"ping"}},
		{"not JSON", yes, []string{`[{"jsonrpc":"2.0","id":1,"method":"ping"},]`}, []string{parseErr}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ran []string // only the worker appends, and it is done when Serve returns
			h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				ran = append(ran, req.Method)
				return testHandler(ctx, req)
			}
			got := serve(t, strings.Join(tt.input, "\n"), h, jsonrpc.Options{Batch: tt.batch})
			checkLines(t, got, tt.want)
			if !slices.Equal(ran, tt.ran) {
				t.Errorf("handler ran %q, want %q", ran, tt.ran)
			}
		})
	}
}

// A refused batch is logged, as every message the connection refuses.
func TestServeRefusedBatchLogged(t *testing.T) {
	var l logs
	got := serve(t, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, testHandler, jsonrpc.Options{Logf: l.Logf})
	checkLines(t, got, []string{noBatch})
	if !l.contains("JSON-RPC batching is not supported") {
		t.Errorf("logs = %q, want the refusal", l.lines)
	}
}

func TestServeBatchAskedInOrder(t *testing.T) {
	// Options.Batch must see the state left by the requests before the array,
	// as an MCP server does when initialize picks a version allowing batches.
	allowed := false
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "initialize" {
			allowed = true
		}
		return nil, nil
	}
	got := serve(t, strings.Join([]string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize"}`,
		`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
	}, "\n"), h, jsonrpc.Options{Batch: func() bool { return allowed }})
	checkLines(t, got, []string{
		noBatch,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`[{"jsonrpc":"2.0","id":3,"result":{}}]`,
	})
}

// pipeConn is a Conn served on a pipe, for tests that interleave input with
// the handling of earlier requests.
type pipeConn struct {
	t    *testing.T
	conn *jsonrpc.Conn
	in   *io.PipeWriter
	out  *recorder
	done chan error
}

func startPipe(t *testing.T, ctx context.Context, h jsonrpc.Handler, opt jsonrpc.Options) *pipeConn {
	out := &recorder{}
	return startPipeWriter(t, ctx, out, out, h, opt)
}

// startPipeWriter is startPipe with w as the Conn's writer. out is the
// recorder that w passes its writes on to, from which finish and waitLines
// read the lines.
func startPipeWriter(t *testing.T, ctx context.Context, w io.Writer, out *recorder, h jsonrpc.Handler, opt jsonrpc.Options) *pipeConn {
	pr, pw := io.Pipe()
	p := &pipeConn{t: t, in: pw, out: out, done: make(chan error, 1)}
	p.conn = jsonrpc.NewConn(pr, w, h, opt)
	go func() { p.done <- p.conn.Serve(ctx) }()
	t.Cleanup(func() { pw.Close() })
	return p
}

func (p *pipeConn) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			p.t.Fatalf("writing input: %v", err)
		}
	}
}

// waitLines waits until at least n lines have been written.
func (p *pipeConn) waitLines(n int) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.out.mu.Lock()
		got := len(p.out.writes)
		p.out.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %d lines, have %d", n, got)
		}
		time.Sleep(time.Millisecond)
	}
}

// finish closes the input and waits for Serve.
func (p *pipeConn) finish() []string {
	p.t.Helper()
	p.in.Close()
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		p.t.Fatal("Serve did not return")
	}
	return p.out.lines(p.t)
}

// marker returns a Preempt function that consumes the notification "marker"
// and signals on the returned channel when it does. Because Preempt runs on
// the reader, a marker seen means every line before it has been read.
func marker(then func(req *jsonrpc.Request) bool) (func(*jsonrpc.Request) bool, chan struct{}) {
	seen := make(chan struct{}, 10)
	return func(req *jsonrpc.Request) bool {
		if req.Method == "marker" {
			seen <- struct{}{}
			return true
		}
		if then != nil {
			return then(req)
		}
		return false
	}, seen
}

const markerLine = `{"jsonrpc":"2.0","method":"marker"}`

// blocking returns a handler whose method "slow" reports that it started and
// waits for release or for its context to end; other methods go to
// testHandler.
func blocking() (h jsonrpc.Handler, started chan string, release chan struct{}) {
	started = make(chan string, 10)
	release = make(chan struct{})
	h = func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method != "slow" {
			return testHandler(ctx, req)
		}
		started <- string(req.ID)
		select {
		case <-release:
			return map[string]string{"slow": "done"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h, started, release
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestServeDuplicateID(t *testing.T) {
	h, started, release := blocking()
	preempt, seen := marker(nil)
	p := startPipe(t, context.Background(), h, jsonrpc.Options{Preempt: preempt})

	p.send(`{"jsonrpc":"2.0","id":7,"method":"slow"}`)
	wait(t, started, "the slow request")
	p.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`, `{"jsonrpc":"2.0","id":"7","method":"ping"}`, markerLine)
	wait(t, seen, "the marker")
	close(release)
	p.waitLines(2)
	p.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`) // no longer in progress

	checkLines(t, p.finish(), []string{
		`{"jsonrpc":"2.0","id":7,"result":{"slow":"done"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: duplicate id of a request in progress"}}`,
		`{"jsonrpc":"2.0","id":"7","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
	})
}

// TestServeTooLargeDuplicateID checks that a line too large whose id is
// that of a request in progress is answered with id null, which cannot be
// taken for the answer to that request.
func TestServeTooLargeDuplicateID(t *testing.T) {
	h, started, release := blocking()
	preempt, seen := marker(nil)
	p := startPipe(t, context.Background(), h, jsonrpc.Options{Preempt: preempt})

	p.send(`{"jsonrpc":"2.0","id":7,"method":"slow"}`)
	wait(t, started, "the slow request")
	p.send(`{"jsonrpc":"2.0","method":"echo","params":{"s":"`+strings.Repeat("a", jsonrpc.MaxFrame)+`"},"id":7}`, markerLine)
	wait(t, seen, "the marker")
	close(release)

	checkLines(t, p.finish(), []string{
		`{"jsonrpc":"2.0","id":7,"result":{"slow":"done"}}`,
		tooLong,
	})
}

// TestServeSameStringID checks that ids are compared as JSON values: a
// string id written with an escape is the id of the request in progress,
// for a duplicate and for a cancellation, and is still echoed as written.
func TestServeSameStringID(t *testing.T) {
	var conn *jsonrpc.Conn
	h, started, release := blocking()
	preempt, seen := marker(cancelOn(&conn))
	p := startPipe(t, context.Background(), h, jsonrpc.Options{Preempt: preempt})
	conn = p.conn

	p.send(`{"jsonrpc":"2.0","id":"a","method":"slow"}`)
	wait(t, started, "the slow request")
	p.send(`{"jsonrpc":"2.0","id":"\u0061","method":"ping"}`, `{"jsonrpc":"2.0","id":"\ud800","method":"slow"}`, markerLine)
	wait(t, seen, "the marker")
	p.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":"\ud801"}}`, `{"jsonrpc":"2.0","method":"cancel","params":{"id":"\u0061"}}`, `{"jsonrpc":"2.0","id":"\u0062","method":"ping"}`)
	close(release)
	checkLines(t, p.finish(), []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: duplicate id of a request in progress"}}`,
		`{"jsonrpc":"2.0","id":"\ud800","result":{"slow":"done"}}`,
		`{"jsonrpc":"2.0","id":"\u0062","result":{}}`,
	})
}

// cancelOn returns a Preempt function that handles "cancel" notifications,
// whose params are the raw id to cancel, by calling conn.Cancel.
func cancelOn(conn **jsonrpc.Conn) func(*jsonrpc.Request) bool {
	return func(req *jsonrpc.Request) bool {
		if req.Method != "cancel" {
			return false
		}
		var p struct{ ID json.RawMessage }
		json.Unmarshal(req.Params, &p)
		(*conn).Cancel(p.ID)
		return true
	}
}

func TestServeCancelRunning(t *testing.T) {
	var conn *jsonrpc.Conn
	h, started, _ := blocking()
	p := startPipe(t, context.Background(), h, jsonrpc.Options{Preempt: cancelOn(&conn)})
	conn = p.conn

	p.send(`{"jsonrpc":"2.0","id":8,"method":"slow"}`)
	wait(t, started, "the slow request")
	// The handler returns ctx.Err() once cancelled; that answer must not go out.
	p.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":8}}`, ping)
	checkLines(t, p.finish(), []string{pong})
}

func TestServeCancelQueued(t *testing.T) {
	var conn *jsonrpc.Conn
	h, started, release := blocking()
	preempt, seen := marker(cancelOn(&conn))
	var mu sync.Mutex
	ran := map[string]int{}
	counting := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		mu.Lock()
		ran[string(req.ID)]++
		mu.Unlock()
		return h(ctx, req)
	}
	p := startPipe(t, context.Background(), counting, jsonrpc.Options{Preempt: preempt})
	conn = p.conn

	p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	wait(t, started, "the slow request")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"cancel","params":{"id":2}}`,
		`{"jsonrpc":"2.0","method":"cancel","params":{"id":"2"}}`, // a different id: ignored
		`{"jsonrpc":"2.0","method":"cancel","params":{"id":12345}}`,
		markerLine)
	wait(t, seen, "the marker")
	close(release)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // the id is free again

	checkLines(t, p.finish(), []string{
		`{"jsonrpc":"2.0","id":1,"result":{"slow":"done"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
	})
	// Only the second ping, sent after the release, may have run as id 2:
	// the cancelled one never reached the handler.
	mu.Lock()
	defer mu.Unlock()
	if n := ran["2"]; n != 1 {
		t.Errorf("id 2 ran %d times, want 1 (the cancelled request must not run)", n)
	}
}

func TestServeCancelAfterHandlerReturned(t *testing.T) {
	// A cancellation that arrives after the handler has finished, but before
	// its answer is written, still suppresses the answer. The handler
	// cancelling itself just before returning is that race, made certain.
	var conn *jsonrpc.Conn
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "selfcancel" {
			conn.Cancel(req.ID)
			return map[string]int{"late": 1}, nil
		}
		return testHandler(ctx, req)
	}
	var out recorder
	conn = jsonrpc.NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"selfcancel"}`+"\n"+ping), &out, h, jsonrpc.Options{})
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkLines(t, out.lines(t), []string{pong})
}

func TestServeCancelInsideBatch(t *testing.T) {
	var conn *jsonrpc.Conn
	var out recorder
	input := `[{"jsonrpc":"2.0","id":1,"method":"ping"},` +
		`{"jsonrpc":"2.0","method":"cancel","params":{"id":1}},` +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	conn = jsonrpc.NewConn(strings.NewReader(input), &out, testHandler, jsonrpc.Options{
		Preempt: cancelOn(&conn),
		Batch:   func() bool { return true },
	})
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkLines(t, out.lines(t), []string{`[{"jsonrpc":"2.0","id":2,"result":{}}]`})
}

// TestServeCancelQueuedInBatch checks that a batch element cancelled while
// an earlier element runs never runs and gets no answer.
func TestServeCancelQueuedInBatch(t *testing.T) {
	var conn *jsonrpc.Conn
	h, started, release := blocking()
	preempt, seen := marker(cancelOn(&conn))
	var ran atomic.Int32
	counting := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "ping" {
			ran.Add(1)
		}
		return h(ctx, req)
	}
	p := startPipe(t, context.Background(), counting, jsonrpc.Options{
		Preempt: preempt,
		Batch:   func() bool { return true },
	})
	conn = p.conn

	p.send(`[{"jsonrpc":"2.0","id":1,"method":"slow"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	wait(t, started, "the slow request")
	p.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":2}}`, markerLine)
	wait(t, seen, "the marker")
	close(release)
	checkLines(t, p.finish(), []string{`[{"jsonrpc":"2.0","id":1,"result":{"slow":"done"}}]`})
	if n := ran.Load(); n != 0 {
		t.Errorf("the cancelled ping ran %d times, want 0", n)
	}
}

func TestServeAnswersAfterEOF(t *testing.T) {
	// Requests read before the input ended are still answered, in order,
	// before Serve returns.
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		time.Sleep(20 * time.Millisecond)
		return map[string]string{"m": req.Method}, nil
	}
	got := serve(t, `{"jsonrpc":"2.0","id":1,"method":"a"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"b"}`, h, jsonrpc.Options{})
	checkLines(t, got, []string{
		`{"jsonrpc":"2.0","id":1,"result":{"m":"a"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"m":"b"}}`,
	})
}

// TestServeGraceExpires checks a grace period that runs out, and a negative
// one, which means no wait at all (the default would be a second).
func TestServeGraceExpires(t *testing.T) {
	t.Run("50ms", func(t *testing.T) { testServeGrace(t, 50*time.Millisecond, 5*time.Second) })
	t.Run("none", func(t *testing.T) { testServeGrace(t, -1, 500*time.Millisecond) })
}

func testServeGrace(t *testing.T, grace, most time.Duration) {
	returned := make(chan struct{})
	var ran sync.Map
	h := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		ran.Store(req.Method, true)
		if req.Method == "stuck" {
			<-ctx.Done() // cancelled when Serve gives up
			defer close(returned)
			return map[string]string{"too": "late"}, nil
		}
		return nil, nil
	}
	var out recorder
	input := `{"jsonrpc":"2.0","id":1,"method":"stuck"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"queued"}`
	conn := jsonrpc.NewConn(strings.NewReader(input), &out, h, jsonrpc.Options{Grace: grace})
	start := time.Now()
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if d := time.Since(start); d > most {
		t.Errorf("Serve took %v with grace %v", d, grace)
	}
	// With no grace the stuck request may not have started at all; once
	// started, it must see its context cancelled.
	if _, ok := ran.Load("stuck"); ok || grace > 0 {
		wait(t, returned, "the stuck handler to see its context cancelled")
	}
	time.Sleep(20 * time.Millisecond) // let the worker try to answer
	if got := out.lines(t); len(got) != 0 {
		t.Errorf("wrote after Serve returned: %q", got)
	}
	if _, ok := ran.Load("queued"); ok {
		t.Errorf("a queued request ran after Serve gave up")
	}
	if err := conn.Notify("late", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Notify after Serve = %v, want ErrClosed", err)
	}
}

func TestServeContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	type key struct{}
	ctx = context.WithValue(ctx, key{}, "v")
	h, started, release := blocking()
	handlerCtx := make(chan context.Context, 1)
	wrapped := func(hctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "slow" {
			handlerCtx <- hctx
		}
		return h(hctx, req)
	}
	p := startPipe(t, ctx, wrapped, jsonrpc.Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	wait(t, started, "the slow request")
	hctx := <-handlerCtx
	cancel()
	// Serve waits for the running request, whose context stays alive for
	// the grace period.
	time.Sleep(20 * time.Millisecond)
	if hctx.Err() != nil {
		t.Errorf("handler context cancelled with Serve's context: %v", hctx.Err())
	}
	if hctx.Value(key{}) != "v" {
		t.Errorf("handler context lost Serve's values")
	}
	close(release)
	if err := wait(t, p.done, "Serve"); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v, want context.Canceled", err)
	}
	checkLines(t, p.out.lines(t), []string{`{"jsonrpc":"2.0","id":1,"result":{"slow":"done"}}`})

	// Input read after cancellation is never acted upon.
	p.send(ping)
	p.in.Close()
	time.Sleep(20 * time.Millisecond)
	if got := p.out.lines(t); len(got) != 1 {
		t.Errorf("wrote after Serve returned: %q", got)
	}
}

// TestServeAbandoned checks that a context cancelled with a cause that
// Options.Abandon accepts ends Serve at once, without the grace period (a
// second here) or its log line: the running handler's context is
// cancelled, nothing more is written, and the queued request never runs.
// Any other cause, such as the one signal.NotifyContext gives, still gets
// the grace period.
func TestServeAbandoned(t *testing.T) {
	gone := errors.New("peer gone")
	opt := func(l *logs) jsonrpc.Options {
		return jsonrpc.Options{Logf: l.Logf, Abandon: func(cause error) bool { return errors.Is(cause, gone) }}
	}

	t.Run("abandoned", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		h, started, _ := blocking()
		var ran atomic.Bool
		wrapped := func(hctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method == "queued" {
				ran.Store(true)
			}
			return h(hctx, req)
		}
		var l logs
		p := startPipe(t, ctx, wrapped, opt(&l))
		p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`, `{"jsonrpc":"2.0","id":2,"method":"queued"}`)
		wait(t, started, "the slow request")
		t0 := time.Now()
		cancel(fmt.Errorf("watchdog: %w", gone))
		if err := wait(t, p.done, "Serve"); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
		if d := time.Since(t0); d > 500*time.Millisecond {
			t.Errorf("Serve took %v to return after its context was abandoned", d)
		}
		time.Sleep(20 * time.Millisecond) // let the worker try to answer
		if got := p.out.lines(t); len(got) != 0 {
			t.Errorf("wrote %q", got)
		}
		if ran.Load() {
			t.Error("the queued request ran")
		}
		// Nothing to say either: the caller that cancelled says why.
		if l.contains("") {
			t.Errorf("logs = %q, want none", l.lines)
		}
	})

	t.Run("other cause", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		h, started, release := blocking()
		var l logs
		p := startPipe(t, ctx, h, opt(&l))
		p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
		wait(t, started, "the slow request")
		cancel(errors.New("interrupt signal received"))
		time.Sleep(20 * time.Millisecond)
		close(release)
		wait(t, p.done, "Serve")
		checkLines(t, p.out.lines(t), []string{`{"jsonrpc":"2.0","id":1,"result":{"slow":"done"}}`})
	})
}

func TestServeNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 10 {
		serve(t, ping+"\n"+`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, testHandler, jsonrpc.Options{})
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestServeOneWritePerLine(t *testing.T) {
	// Answers and notifications written concurrently must each arrive in a
	// single Write; recorder.lines fails the test otherwise.
	var out recorder
	var input strings.Builder
	for i := range 200 {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"i":%d,"s":"%s"}}`+"\n", i, i, strings.Repeat("x", i*50))
	}
	input.WriteString(`[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]` + "\n")
	conn := jsonrpc.NewConn(strings.NewReader(input.String()), &out, testHandler, jsonrpc.Options{Batch: func() bool { return true }})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				conn.Notify("notifications/progress", map[string]int{"g": i, "j": j})
			}
		})
	}
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	lines := out.lines(t)
	answers := 0
	for _, l := range lines {
		if !strings.Contains(l, `"method":"notifications/progress"`) {
			answers++
		}
	}
	// Notifications sent after Serve returned fail with ErrClosed, so only
	// the answers have an exact count.
	if answers != 201 {
		t.Errorf("got %d answer lines, want 201", answers)
	}
}

func TestNotify(t *testing.T) {
	var out recorder
	conn := jsonrpc.NewConn(strings.NewReader(""), &out, testHandler, jsonrpc.Options{})
	if err := conn.Notify("notifications/message", map[string]string{"text": "<b>&"}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Notify("notifications/tools/list_changed", nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.Notify("bad", make(chan int)); err == nil {
		t.Error("Notify with unencodable params succeeded")
	}
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := conn.Notify("late", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("Notify after Serve = %v, want ErrClosed", err)
	}
	if err := conn.Serve(context.Background()); err == nil {
		t.Errorf("second Serve succeeded")
	}
	checkLines(t, out.lines(t), []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"text":"<b>&"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	})
}

// failingWriter fails every Write.
type failingWriter struct{ calls int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	return 0, errors.New("broken pipe")
}

func TestServeWriteError(t *testing.T) {
	var l logs
	w := &failingWriter{}
	conn := jsonrpc.NewConn(strings.NewReader(ping+"\n"+ping), w, testHandler, jsonrpc.Options{Logf: l.Logf})
	if err := conn.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if w.calls != 1 {
		t.Errorf("Write called %d times; after a failure the stream is unusable", w.calls)
	}
	if !l.contains("broken pipe") {
		t.Errorf("logs = %q, want the write error", l.lines)
	}
}

func TestServeReadError(t *testing.T) {
	boom := errors.New("boom")
	var out recorder
	conn := jsonrpc.NewConn(io.MultiReader(strings.NewReader(ping+"\n"), iotest.ErrReader(boom)), &out, testHandler, jsonrpc.Options{})
	if err := conn.Serve(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Serve = %v, want %v", err, boom)
	}
	checkLines(t, out.lines(t), []string{pong})
}
