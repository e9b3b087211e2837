package tools

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
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
	if err := json.Unmarshal(toolsListResult(), &list); err != nil {
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
				params := toolsByName[tl.Name].params
				if !slices.Equal(s.Required, params) && !(len(s.Required) == 0 && len(params) == 0) {
					t.Errorf("%s: inputSchema requires %q, the tool reads %q", tl.Name, s.Required, params)
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
