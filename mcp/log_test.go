package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tools"
)

// Every error the server answers with is also logged, one line each: tool
// calls whose arguments fail validation as well as JSON-RPC errors.
func TestErrorsAreLogged(t *testing.T) {
	calls := []struct{ request, log string }{
		{`"method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob"}}`, `send: missing required argument "message"`},
		{`"method":"tools/call","params":{"name":"status","arguments":{"status":5}}`, `status: argument "status" must be a string`},
		{`"method":"tools/call","params":{"name":"nope","arguments":{}}`, `tools/call: Invalid params: unknown tool "nope"`},
		{`"method":"foo"`, `foo: Method not found: foo`},
		{`"method":"tools/call","params":{"name":"status","arguments":{"status":"busy"}}`, `status: Invalid status: busy. Valid: ready, work, offline`},
	}
	var in strings.Builder
	in.WriteString(initLine)
	for i, c := range calls {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,%s}`+"\n", i+1, c.request)
	}
	in.WriteString(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"list-recipients","arguments":{}}}` + "\n")
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	svc := &tools.Service{Store: mailbox.New(t.TempDir()), Term: newFakeTerm("alice", "alice", "bob")}
	var out bytes.Buffer
	if err := mcp.NewServer("test", logf).ServeStdio(context.Background(), strings.NewReader(in.String()), &out, svc); err != nil {
		t.Fatal(err)
	}
	if len(logged) != len(calls) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(logged), len(calls), strings.Join(logged, "\n"))
	}
	for i, c := range calls {
		if logged[i] != c.log {
			t.Errorf("log line %d = %q, want %q", i+1, logged[i], c.log)
		}
	}
}
