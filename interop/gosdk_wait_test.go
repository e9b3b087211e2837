package interop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// arriveWithin is how soon a waiting receive must return a message sent
// meanwhile: the one-second budget of every call, doubled for a loaded
// machine.
const arriveWithin = 2 * time.Second

// sentRE matches send's answer: the id, and the note a send adds for a
// recipient that set no status and has nothing to wake it.
var sentRE = regexp.MustCompile(`^Message #([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) sent(?: \([a-z]+ has set no status and nothing wakes it; it is kept until [a-z]+ reads it\))?$`)

// TestGoSDKWaitReplyResources drives the features a client can only use
// well if its SDK copes with them, at each revision: a receive that waits
// (on one session, while other requests on it are answered), its time
// running out, a reply in the message's thread, and the inbox and thread
// resources, listed and read. In the legacy eras bob also subscribes to
// his inbox and must hear of alice's message.
func TestGoSDKWaitReplyResources(t *testing.T) {
	bin := agentmailBin(t)
	tm := startTmux(t)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			// Each revision gets its own project, so that its inbox and
			// thread hold only its own messages.
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			updated := make(chan string, 16)
			bob := connectWith(ctx, t, bin, root, tm, tm.bob, v, &mcp.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
					select {
					case updated <- req.Params.URI:
					default:
					}
				},
			})
			checkResourceLists(ctx, t, bob.cs)

			// Nothing comes: the wait ends with the usual empty result.
			start := time.Now()
			call(ctx, t, bob.cs, "receive", map[string]any{"timeout_seconds": 0.3}, false,
				"No unread messages", `{"status":"No unread messages","timed_out":true}`)
			if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
				t.Errorf("a wait of 0.3 s took %v", d)
			}

			// The SDK opens a subscriptions/listen stream for Subscribe in
			// the modern era; the legacy subscription is the one to prove.
			legacy := v < "2026-07-28"
			if legacy {
				if err := bob.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "agentmail://inbox"}); err != nil {
					t.Fatalf("resources/subscribe: %v", err)
				}
			}

			id, body := waitForMail(ctx, t, bin, tm, root, bob)
			if legacy {
				select {
				case uri := <-updated:
					if uri != "agentmail://inbox" {
						t.Errorf("resource update for %q, want agentmail://inbox", uri)
					}
				case <-time.After(arriveWithin):
					t.Errorf("no notifications/resources/updated for the inbox within %v", arriveWithin)
				}
			}

			// bob answers in the thread; alice sees the reply with it.
			reply := "fix/watchdog at " + v
			res := callTool(ctx, t, bob.cs, "send", map[string]any{"recipient": "alice", "message": reply, "reply_to": id})
			m := sentRE.FindStringSubmatch(onlyText(t, res))
			if res.IsError || m == nil {
				t.Fatalf("reply: isError=%v, text %q", res.IsError, onlyText(t, res))
			}
			rid := m[1]
			alice := connect(ctx, t, bin, root, tm, tm.alice, v)
			call(ctx, t, alice.cs, "receive", nil, false,
				"From: bob\nID: "+rid+"\nReply-To: "+id+"\nThread: "+id+"\n\n"+reply,
				`{"from":"bob","id":`+quote(rid)+`,"message":`+quote(reply)+`,"reply_to":`+quote(id)+`,"thread_id":`+quote(id)+`}`)
			alice.close(t)
			alice.checkWire(t)

			inbox := readResource(ctx, t, bob.cs, "agentmail://inbox")
			for _, want := range []string{"# Inbox of bob\n\nNo unread messages.\n", "- read, from alice, ", "id " + id + ": " + body + "\n"} {
				if !strings.Contains(inbox, want) {
					t.Errorf("inbox lacks %q:\n%s", want, inbox)
				}
			}
			thread := readResource(ctx, t, bob.cs, "agentmail://threads/"+id)
			for _, want := range []string{
				"# " + body + "\n", "Thread " + id + ", 2 messages.\n",
				"**From alice to bob**", "\n\n" + body + "\n",
				"**From bob to alice**", ", id " + rid + ", in reply to " + id + "\n\n" + reply + "\n",
			} {
				if !strings.Contains(thread, want) {
					t.Errorf("thread lacks %q:\n%s", want, thread)
				}
			}
			// An unknown thread is "not found", with the era's code.
			_, err := bob.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agentmail://threads/nosuchthread"})
			wantCode := int64(-32002)
			if !legacy {
				wantCode = -32602
			}
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != wantCode || !strings.HasPrefix(werr.Message, "Resource not found") {
				t.Errorf("read of an unknown thread: %v, want error %d Resource not found", err, wantCode)
			}
			bob.wireErrors++

			if legacy {
				if err := bob.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "agentmail://inbox"}); err != nil {
					t.Errorf("resources/unsubscribe: %v", err)
				}
			}
			bob.close(t)
			bob.checkWire(t)
		})
	}
}

// waitForMail starts a receive that waits on bob's session, checks that
// the session answers other calls meanwhile, has alice send bob a message
// with the CLI, and checks that the waiting call returns it at once. It
// returns the message's id and body.
func waitForMail(ctx context.Context, t *testing.T, bin string, tm *tmuxServer, root string, bob *session) (id, body string) {
	t.Helper()
	type result struct {
		res *mcp.CallToolResult
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		res, err := bob.cs.CallTool(ctx, &mcp.CallToolParams{Name: "receive", Arguments: map[string]any{"timeout_seconds": 20}})
		done <- result{res, err, time.Now()}
	}()
	// The message must be sent only once the call is on the wire, or the
	// receive could find it without waiting.
	for !strings.Contains(bob.wire.String(), `"timeout_seconds":20`) {
		select {
		case r := <-done:
			t.Fatalf("receive returned before any mail was sent: %v %v", r.res, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	call(ctx, t, bob.cs, "list-recipients", nil, false,
		"alice\nbob [you]",
		`{"recipients":[{"name":"alice","is_current":false},{"name":"bob","is_current":true}]}`)
	select {
	case r := <-done:
		t.Fatalf("receive returned before any mail was sent: %v %v", r.res, r.err)
	default:
	}

	body = "are you there? " + bob.version
	cmd := exec.CommandContext(ctx, bin, "send", "bob", body)
	cmd.Dir = root
	cmd.Env = paneEnv(tm, tm.alice)
	// The time counts from the start of the send: the receive may well
	// return before the CLI has exited.
	sent := time.Now()
	out, err := cmd.CombinedOutput()
	m := sentRE.FindStringSubmatch(strings.TrimSpace(string(out)))
	if err != nil || m == nil {
		t.Fatalf("agentmail send as alice: %v: %s", err, out)
	}
	id = m[1]

	var r result
	select {
	case r = <-done:
	case <-time.After(arriveWithin):
		t.Fatalf("the waiting receive did not return within %v of the send's end", arriveWithin)
	}
	if r.err != nil {
		t.Fatalf("waiting receive: %v", r.err)
	}
	if d := r.at.Sub(sent); d > arriveWithin {
		t.Errorf("the waiting receive returned %v after the send began", d)
	}
	if r.res.IsError {
		t.Fatalf("waiting receive: tool error %q", onlyText(t, r.res))
	}
	if got, want := onlyText(t, r.res), "From: alice\nID: "+id+"\n\n"+body; got != want {
		t.Errorf("waiting receive: text %q, want %q", got, want)
	}
	checkStructured(t, "waiting receive", r.res,
		`{"from":"alice","id":`+quote(id)+`,"message":`+quote(body)+`}`)
	return id, body
}

// checkResourceLists checks that the inbox is the one resource and the
// thread the one template, both Markdown.
func checkResourceLists(ctx context.Context, t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	rs, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	if len(rs.Resources) != 2 || rs.Resources[0].URI != "agentmail://inbox" || rs.Resources[0].MIMEType != "text/markdown" || rs.Resources[0].Name != "inbox" ||
		rs.Resources[1].URI != "agentmail://sent" || rs.Resources[1].MIMEType != "text/markdown" {
		t.Errorf("resources/list: %+v, want the inbox and the sent view", rs.Resources)
	}
	ts, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	if len(ts.ResourceTemplates) != 1 || ts.ResourceTemplates[0].URITemplate != "agentmail://threads/{thread_id}" || ts.ResourceTemplates[0].MIMEType != "text/markdown" {
		t.Errorf("resources/templates/list: %+v, want the thread template only", ts.ResourceTemplates)
	}
}

// readResource reads uri and returns the text of its one Markdown content.
func readResource(ctx context.Context, t *testing.T, cs *mcp.ClientSession, uri string) string {
	t.Helper()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %d contents, want 1", uri, len(res.Contents))
	}
	c := res.Contents[0]
	if c.URI != uri || c.MIMEType != "text/markdown" {
		t.Errorf("resources/read %s: uri %q, mimeType %q", uri, c.URI, c.MIMEType)
	}
	return c.Text
}
