package jsonrpc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzAppendMembers checks AppendMembers against encoding/json on any valid
// JSON object: the same names, each with the value of its last copy. The
// input is valid UTF-8, as the jsonrpc connection guarantees; encoding/json
// would replace invalid bytes in names where AppendMembers keeps them.
func FuzzAppendMembers(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":"x","b":[1,2,{"c":"]"}],"a":null}`,
		`{"\u0061":"\"","b":{"c":{"d":[]}}}`, " {\t\"k\" :\n\"v\" , \"l\":-0.5e-3}\r",
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"send"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want map[string]json.RawMessage
		if !utf8.ValidString(s) || json.Unmarshal([]byte(s), &want) != nil || want == nil {
			return
		}
		got := AppendMembers(nil, []byte(s))
		names := map[string]bool{}
		for _, m := range got {
			names[string(m.Name)] = true
		}
		if len(names) != len(want) {
			t.Fatalf("%s: %d names, want %d", s, len(names), len(want))
		}
		for name, w := range want {
			g, ok := LastMember(got, name)
			if !ok {
				t.Fatalf("%s: no member %q", s, name)
			}
			var gv, wv any
			if json.Unmarshal(g, &gv) != nil || json.Unmarshal(w, &wv) != nil {
				t.Fatalf("%s: member %q: value %s does not decode", s, name, g)
			}
			gb, _ := json.Marshal(gv)
			wb, _ := json.Marshal(wv)
			if string(gb) != string(wb) {
				t.Fatalf("%s: member %q = %s, want %s", s, name, g, w)
			}
		}
	})
}
