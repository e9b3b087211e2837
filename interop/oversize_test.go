package interop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKOversize sends a message too big for one 65536-byte line through
// the official Go SDK client at each revision. The call must fail with the
// server's size error, carried under the call's own id, and the session must
// stay open: the next calls on it succeed. An error with id null would leave
// the SDK unable to match it to the call; the SDK then closes the session.
func TestGoSDKOversize(t *testing.T) {
	bin := agentmailBin(t)
	tm := startTmux(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 70000)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			alice := connect(ctx, t, bin, root, tm, tm.alice, v)

			_, err := alice.cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"recipient": "bob", "message": body}})
			var werr *jsonrpc.Error
			switch {
			case err == nil:
				t.Fatal("send of 70000 bytes succeeded, want the size error")
			case !errors.As(err, &werr):
				t.Fatalf("send of 70000 bytes: %v, want a JSON-RPC error from the server\nstderr:\n%s", err, alice.stderr)
			case werr.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(werr.Message, "65536") || !strings.Contains(werr.Message, "split"):
				t.Errorf("send of 70000 bytes: error %d %q, want -32600 naming 65536 and saying to split", werr.Code, werr.Message)
			}

			if _, err := alice.cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("tools/list after the size error: %v\nstderr:\n%s", err, alice.stderr)
			}
			call(ctx, t, alice.cs, "list-recipients", nil, false,
				"alice [you]\nbob",
				`{"recipients":[{"name":"alice","is_current":true},{"name":"bob","is_current":false}]}`)
			if _, err := os.Stat(filepath.Join(root, ".agentmail", "mailboxes", "bob.jsonl")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("bob's mailbox after a refused send: %v, want none", err)
			}
			alice.close(t)
		})
	}
}
