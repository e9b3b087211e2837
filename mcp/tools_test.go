package mcp

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"agentmail/jsonrpc"
	"agentmail/tools"
)

// TestToolListing checks the listing every client parses (checklist item
// 43): names that every revision and client accepts, object schemas that
// allow nothing undeclared, a title and annotations, and an input schema
// that requires exactly the arguments the tool reads.
func TestToolListing(t *testing.T) {
	var list struct {
		Tools []struct {
			Name         string
			Title        string
			Description  string
			InputSchema  json.RawMessage
			OutputSchema json.RawMessage
			Annotations  map[string]any
		}
		NextCursor *string
	}
	b, err := jsonrpc.Marshal(toolsListResult{Tools: toolSet})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	if list.NextCursor != nil {
		t.Error("nextCursor on the only page")
	}
	name := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if !name.MatchString(tl.Name) {
			t.Errorf("tool name %q is not portable", tl.Name)
		}
		if tl.Title == "" || tl.Description == "" || len(tl.Annotations) == 0 {
			t.Errorf("%s: missing title, description or annotations", tl.Name)
		}
		for what, raw := range map[string]json.RawMessage{"inputSchema": tl.InputSchema, "outputSchema": tl.OutputSchema} {
			var s struct {
				Type                 string
				Properties           map[string]json.RawMessage
				Required             []string
				AdditionalProperties *bool
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatalf("%s %s: %v", tl.Name, what, err)
			}
			if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("%s %s: not a closed object schema: %s", tl.Name, what, raw)
			}
			for p, v := range s.Properties {
				if len(v) == 0 || v[0] != '{' {
					t.Errorf("%s %s: property %s is not a schema object", tl.Name, what, p)
				}
			}
			if what == "inputSchema" {
				params := argFields(reflect.TypeOf(findTool(tl.Name).args()).Elem())
				var required []string
				for _, p := range params {
					if !p.optional {
						required = append(required, p.name)
					}
					if _, ok := s.Properties[p.name]; !ok {
						t.Errorf("%s: inputSchema lacks the argument %q", tl.Name, p.name)
					}
				}
				if !slices.Equal(s.Required, required) {
					t.Errorf("%s: inputSchema requires %q, the tool requires %q", tl.Name, s.Required, required)
				}
				if len(s.Properties) != len(params) {
					t.Errorf("%s: inputSchema has %d properties, the tool reads %d arguments", tl.Name, len(s.Properties), len(params))
				}
			}
		}
	}
	if want := []string{"send", "receive", "status", "list-recipients"}; !slices.Equal(names, want) {
		t.Errorf("tools %q, want %q", names, want)
	}
}

// TestSendSchemaSize checks that the send schema promises no limit that
// MCP cannot carry: a maxLength would count characters in some clients,
// while the frame bounds the bytes of the whole escaped request. The
// description says what fits and what to do with longer text instead.
func TestSendSchemaSize(t *testing.T) {
	var schema struct {
		Properties struct {
			Message map[string]any
		}
	}
	if err := json.Unmarshal(findTool("send").InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	m := schema.Properties.Message
	if v, ok := m["maxLength"]; ok {
		t.Errorf("send schema: maxLength %v, which a frame of %d bytes cannot always carry", v, jsonrpc.MaxFrame)
	}
	d, _ := m["description"].(string)
	for _, want := range []string{"64 KB", "JSON escaping", strconv.Itoa(jsonrpc.MaxFrame) + " bytes", "several messages"} {
		if !strings.Contains(d, want) {
			t.Errorf("send schema: the message description %q does not say %q", d, want)
		}
	}
}

// TestArgumentsLoneSurrogate checks that a string argument holding half of
// a surrogate pair, which would decode to U+FFFD, is refused: the message
// with the CLI's words, any other argument by name. A whole pair passes.
func TestArgumentsLoneSurrogate(t *testing.T) {
	send := findTool("send")
	for _, tt := range []struct{ args, err string }{
		{`{"recipient":"bob","message":"smile \ud83d\ude00"}`, ""},
		{`{"recipient":"bob","message":"half \ud83d"}`, tools.ErrNotUTF8.Error()},
		{`{"recipient":"b\udc00b","message":"x"}`, `argument "recipient" is not valid UTF-8 text`},
	} {
		var args sendArgs
		err := decodeArgs(send.Name, json.RawMessage(tt.args), &args)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("arguments(%s) = %v", tt.args, err)
		case tt.err == "" && args.Message != "smile \U0001F600":
			t.Errorf("arguments(%s) gave message %q", tt.args, args.Message)
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("arguments(%s) = %v, want %q", tt.args, err, tt.err)
		}
	}
}
