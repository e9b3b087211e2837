package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"agentmail/mailbox"
	"agentmail/mcp"
	"agentmail/tools"
)

// TestHundredCallsMemory runs 100 consecutive tool calls, 25 of each tool,
// through one server and checks that none fails and that the live Go heap
// grows by less than 10 MB over them. The script req_sc005 measures the
// process's resident memory, which a -race build inflates with shadow
// memory; the heap measured here is not, so this check holds in every build.
func TestHundredCallsMemory(t *testing.T) {
	store := mailbox.New(t.TempDir())
	for i := range 25 {
		if _, err := store.Append(context.Background(), "bob", "alice", fmt.Sprintf("message %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	svc := &tools.Service{Store: store, Term: newFakeTerm("alice", "alice", "bob")}
	calls := []string{
		`{"name":"list-recipients","arguments":{}}`,
		`{"name":"status","arguments":{"status":"work"}}`,
		`{"name":"send","arguments":{"recipient":"bob","message":"hello"}}`,
		`{"name":"receive","arguments":{}}`,
	}
	session := func(first, n int) []byte {
		var in bytes.Buffer
		in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n")
		for i := first; i < first+n; i++ {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`+"\n", i+1, calls[i%len(calls)])
		}
		return in.Bytes()
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}

	// A warm-up of one call each, so that one-time allocations (the
	// encoded tool list, package state) are not counted as growth.
	srv := mcp.NewServer("test", nil)
	var warm bytes.Buffer
	if err := srv.ServeStdio(context.Background(), bytes.NewReader(session(0, len(calls))), &warm, svc); err != nil {
		t.Fatal(err)
	}
	before := heap()
	srv = mcp.NewServer("test", nil)
	var out bytes.Buffer
	if err := srv.ServeStdio(context.Background(), bytes.NewReader(session(0, 100)), &out, svc); err != nil {
		t.Fatal(err)
	}
	after := heap()

	answers := 0
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatalf("answer %s: %v", line, err)
		}
		if msg.ID == 0 {
			continue // the initialize answer
		}
		answers++
		if msg.Error != nil || bytes.Contains(msg.Result, []byte(`"isError":true`)) {
			t.Errorf("call %d failed: %s", msg.ID, line)
		}
	}
	if answers != 100 {
		t.Errorf("%d answers to 100 calls", answers)
	}
	growth := int64(after) - int64(before)
	t.Logf("heap in use: %d kB before, %d kB after 100 calls", before/1024, after/1024)
	if growth > 10<<20 {
		t.Errorf("heap grew by %d kB over 100 calls, want less than 10 MB", growth/1024)
	}
}
