package mcp

import (
	"encoding/json"
	"testing"
)

// TestParseParams checks the split of params into members and _meta
// members, and the answers to params the methods cannot use.
func TestParseParams(t *testing.T) {
	for _, tc := range []struct {
		name     string
		params   string
		wantErr  bool
		present  bool
		object   bool
		members  map[string]string // name → raw value
		meta     map[string]string // nil: no _meta object
		notThere []string          // names member must not find
	}{
		{name: "absent", params: ""},
		{name: "empty", params: "{}", present: true, object: true, members: map[string]string{}},
		{name: "array", params: `["send"]`, present: true},
		{
			name:    "members",
			params:  `{ "name" : "send" , "arguments":{"a":[1,{"b":"}"}]},"n":-1.5e3,"t":true,"z":null }`,
			present: true, object: true,
			members: map[string]string{"name": `"send"`, "arguments": `{"a":[1,{"b":"}"}]}`, "n": `-1.5e3`, "t": `true`, "z": `null`},
		},
		{
			name:    "escaped names and quotes in strings",
			params:  `{"na\u006de":"a\"b\\","\u005fmeta":{"k\"":"v"}}`,
			present: true, object: true,
			members: map[string]string{"name": `"a\"b\\"`},
			meta:    map[string]string{`k"`: `"v"`},
		},
		{
			name:    "names are matched exactly",
			params:  `{"Name":"x","NAME":"y","_Meta":{}}`,
			present: true, object: true,
			members:  map[string]string{"Name": `"x"`},
			notThere: []string{"name", "_meta"},
		},
		// Which copy of a repeated member counts is not something client,
		// server and a gateway reading the message can be sure to agree on.
		{name: "a repeated member", params: `{"name":"a","name":"b"}`, wantErr: true},
		{name: "a repeated member of _meta", params: `{"_meta":{"v":1,"v":2}}`, wantErr: true},
		{
			name:    "many members",
			params:  `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"_meta":{"p":"2026-07-28","q":{},"r":[],"s":0,"t":1}}`,
			present: true, object: true,
			members: map[string]string{"a": "1", "i": "9"},
			meta:    map[string]string{"p": `"2026-07-28"`, "q": "{}", "t": "1"},
		},
		{name: "null _meta", params: `{"_meta":null}`, present: true, object: true, members: map[string]string{"_meta": "null"}},
		{name: "_meta not an object", params: `{"_meta":"2026-07-28"}`, wantErr: true},
		{name: "_meta an array", params: `{"_meta":[]}`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseParams(json.RawMessage(tc.params))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.present != tc.present || p.object != tc.object {
				t.Errorf("present %v object %v, want %v %v", p.present, p.object, tc.present, tc.object)
			}
			_, err = p.member("x")
			if wantErr := tc.present && !tc.object; (err != nil) != wantErr {
				t.Errorf("member on %s: error %v", tc.params, err)
			}
			for name, want := range tc.members {
				if got, _ := p.member(name); string(got) != want {
					t.Errorf("member %q = %s, want %s", name, got, want)
				}
			}
			for _, name := range tc.notThere {
				if got, _ := p.member(name); got != nil {
					t.Errorf("member %q = %s, want none", name, got)
				}
			}
			if (p.meta != nil) != (tc.meta != nil) {
				t.Errorf("meta %v", p.meta)
			}
			for name, want := range tc.meta {
				if got, ok := p.metaValue(name); !ok || string(got) != want {
					t.Errorf("_meta %q = %s, want %s", name, got, want)
				}
			}
		})
	}
}
