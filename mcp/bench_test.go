package mcp_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tools"
)

// BenchmarkServe measures requests streamed through one in-process server,
// answered back to back: the cost of the MCP layer and the wire, without
// pipes, process switches or tmux.
func BenchmarkServe(b *testing.B) {
	const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, bm := range []struct{ name, request string }{
		{"ping", `"method":"ping"}`},
		{"tools-list-legacy", `"method":"tools/list"}`},
		{"tools-list-modern", `"method":"tools/list","params":{` + modernMeta + `}}`},
		{"discover", `"method":"server/discover","params":{` + modernMeta + `}}`},
		{"call-list-recipients-legacy", `"method":"tools/call","params":{"name":"list-recipients","arguments":{}}}`},
		{"call-list-recipients-modern", `"method":"tools/call","params":{"name":"list-recipients","arguments":{},` + modernMeta + `}}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			var in bytes.Buffer
			in.WriteString(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}` + "\n")
			for i := range b.N {
				in.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,` + bm.request + "\n")
			}
			svc := &tools.Service{Store: mailbox.New(b.TempDir()), Term: newFakeTerm("alice", "alice", "bob")}
			srv := mcp.NewServer("bench", nil)
			var out countLines
			b.ReportAllocs()
			b.ResetTimer()
			if err := srv.ServeStdio(context.Background(), &in, &out, svc); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if out.n != b.N+1 || out.errors != 0 {
				b.Fatalf("%d answers (%d errors) for %d requests", out.n, out.errors, b.N+1)
			}
		})
	}
}

// countLines counts the answers written to it and those that are errors.
type countLines struct{ n, errors int }

func (w *countLines) Write(p []byte) (int, error) {
	w.n += bytes.Count(p, []byte("\n"))
	if strings.Contains(string(p), `"error":`) || strings.Contains(string(p), `"isError":true`) {
		w.errors++
	}
	return len(p), nil
}
