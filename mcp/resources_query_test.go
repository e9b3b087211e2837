package mcp_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"agentmail/tools"
)

// The inbox and sent views take a query for the CLI's flags, and give
// the view as JSON with format=json; a query the server does not know is
// not found, so that a client can tell a hub that lacks it.
func TestResourceQuery(t *testing.T) {
	svc, _ := mailForAlice(t)
	h := aliceHandler(svc)
	read := func(uri string) (mime, text string, errMsg string) {
		t.Helper()
		w := httptest.NewRecorder()
		post(h, w, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`",`+modernMeta+`}}`)
		var resp struct {
			Result struct {
				Contents []struct{ MimeType, Text string }
			}
			Error *struct{ Message string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("%s: %v: %s", uri, err, w.Body)
		}
		if resp.Error != nil {
			return "", "", resp.Error.Message
		}
		return resp.Result.Contents[0].MimeType, resp.Result.Contents[0].Text, ""
	}
	mime, text, _ := read("agentmail://inbox?all=false&from=bob&format=json")
	var in tools.Inbox
	if err := json.Unmarshal([]byte(text), &in); mime != "application/json" || err != nil {
		t.Fatalf("inbox as JSON: %s %q: %v", mime, text, err)
	}
	if in.Agent != "alice" || in.Unread != 1 || len(in.Messages) != 1 || in.Messages[0].FirstLine != "for alice" {
		t.Errorf("inbox %+v", in)
	}
	if _, text, _ := read("agentmail://inbox?from=carol"); !strings.Contains(text, "1 unread message.") || strings.Contains(text, "for alice") {
		t.Errorf("inbox from carol, as Markdown: %q", text)
	}
	if mime, text, _ := read("agentmail://sent?limit=5&to=bob&format=json"); mime != "application/json" || !strings.HasPrefix(text, `{"agent":"alice","messages":[]`) {
		t.Errorf("sent as JSON: %s %q", mime, text)
	}
	for _, uri := range []string{"agentmail://inbox?all=maybe", "agentmail://inbox?format=xml", "agentmail://inbox?to=bob",
		"agentmail://sent?limit=0", "agentmail://sent?from=x", "agentmail://inbox?from=a&from=b", "agentmail://threads/x?format=json"} {
		if _, _, msg := read(uri); !strings.Contains(msg, "not found") {
			t.Errorf("%s: error %q, want not found", uri, msg)
		}
	}
}
