package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"agentmail/jsonrpc"
	"agentmail/tools"
)

// params are the params of one request, split into members once: the era
// is read from _meta and each method decodes its own members. Members are
// matched exactly (encoding/json would match struct fields
// case-insensitively), and a repeated member is refused in params and in
// _meta alike: which copy counts is not something client, server and a
// gateway reading the message can be sure to agree on.
type params struct {
	present bool                       // params was sent, as an object or an array
	object  bool                       // params is an object
	members map[string]json.RawMessage // the members of an object
	meta    map[string]json.RawMessage // the members of _meta; nil when it has none
}

// parseParams splits the params of a request, which the connection has
// checked to be absent, an object or an array. An array is kept as "not
// an object", for a method that needs members to refuse.
func parseParams(raw json.RawMessage) (*params, error) {
	p := &params{present: len(raw) > 0}
	if !p.present || raw[0] != '{' {
		return p, nil
	}
	p.object = true
	var err error
	if p.members, err = members(raw, ""); err != nil {
		return nil, err
	}
	m, ok := p.members["_meta"]
	if !ok || string(m) == "null" {
		return p, nil
	}
	if m[0] != '{' {
		return nil, invalidParams("_meta must be an object")
	}
	p.meta, err = members(m, "_meta.")
	return p, err
}

// members splits a JSON object, refusing a repeated member.
func members(raw json.RawMessage, prefix string) (map[string]json.RawMessage, error) {
	ms, repeated, err := jsonrpc.Members(raw)
	if err != nil {
		return nil, invalidParams("%s", err)
	}
	if repeated != "" {
		return nil, invalidParams("repeated member %q", prefix+repeated)
	}
	return ms, nil
}

// member returns the raw value of a params member, nil when it is absent,
// and -32602 when params is not an object.
func (p *params) member(name string) (json.RawMessage, error) {
	if p.present && !p.object {
		return nil, invalidParams("params must be an object")
	}
	return p.members[name], nil
}

// str returns a string member: ok is false when it is absent or null, and
// the error says when it is not a string.
func (p *params) str(name, what string) (s string, ok bool, err error) {
	raw, err := p.member(name)
	if err != nil || raw == nil || string(raw) == "null" {
		return "", false, err
	}
	s, ok = jsonrpc.StringValue(raw)
	if !ok {
		return "", false, invalidParams("%s", what)
	}
	return s, true, nil
}

// metaValue returns a member of _meta, and whether it is there.
func (p *params) metaValue(name string) (json.RawMessage, bool) {
	v, ok := p.meta[name]
	return v, ok
}

// invalidParams is a -32602 error.
func invalidParams(format string, args ...any) *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: "+format, args...)
}

// decodeArgs decodes the members of a tool's arguments into the fields of
// dst, a pointer to a struct whose json tags name them: a tag with
// omitempty marks an optional argument, which may also be null. Names are
// matched exactly; an argument the struct lacks, a missing one, or one of
// the wrong type is refused, with the argument's name, in words the model
// can act on.
func decodeArgs(tool string, raw json.RawMessage, dst any) error {
	var ms map[string]json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		var repeated string
		ms, repeated, _ = jsonrpc.Members(raw)
		if repeated != "" {
			// As the CLI refuses a flag given twice.
			return fmt.Errorf("argument %q given twice", repeated)
		}
	}
	v := reflect.ValueOf(dst).Elem()
	fields := argFields(v.Type())
	if k, ok := unknownArgument(ms, fields); ok {
		return fmt.Errorf("unknown argument %q: %s takes %s", k, tool, describeArgs(fields))
	}
	for i, f := range fields {
		raw, ok := ms[f.name]
		if !ok || f.optional && string(raw) == "null" {
			if f.optional {
				continue
			}
			return fmt.Errorf("missing required argument %q", f.name)
		}
		if err := decodeArg(f, raw, v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// argField is one argument of a tool, from its struct field.
type argField struct {
	name     string
	optional bool
	number   bool
	list     bool // of strings
}

// argFields lists the arguments of an arguments struct, one per field.
func argFields(t reflect.Type) []argField {
	fields := make([]argField, t.NumField())
	for i := range fields {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		k := sf.Type.Kind()
		if k == reflect.Pointer {
			k = sf.Type.Elem().Kind()
		}
		fields[i] = argField{name: name, optional: opts == "omitempty", number: k == reflect.Float64, list: k == reflect.Slice}
	}
	return fields
}

// decodeArg decodes one argument into its field.
func decodeArg(f argField, raw json.RawMessage, dst reflect.Value) error {
	if f.number {
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return fmt.Errorf("argument %q must be a number", f.name)
		}
		return json.Unmarshal(raw, dst.Addr().Interface())
	}
	if f.list {
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return fmt.Errorf("argument %q must be an array of strings", f.name)
		}
		for _, it := range items {
			if it[0] != '"' || jsonrpc.LoneSurrogate(it) {
				return fmt.Errorf("argument %q must be an array of strings", f.name)
			}
		}
		return json.Unmarshal(raw, dst.Addr().Interface())
	}
	if raw[0] != '"' {
		return fmt.Errorf("argument %q must be a string", f.name)
	}
	if jsonrpc.LoneSurrogate(raw) {
		// Decoded, it would hold U+FFFD in its place: refused, as the CLI
		// refuses bytes that are not UTF-8.
		if f.name == "message" {
			return tools.ErrNotUTF8
		}
		return fmt.Errorf("argument %q is not valid UTF-8 text", f.name)
	}
	return json.Unmarshal(raw, dst.Addr().Interface())
}

// unknownArgument returns the first argument name, in sorted order, that
// the tool does not take, so that the error names the same one every time.
func unknownArgument(ms map[string]json.RawMessage, fields []argField) (string, bool) {
	first, found := "", false
	for k := range ms {
		known := false
		for _, f := range fields {
			known = known || f.name == k
		}
		if !known && (!found || k < first) {
			first, found = k, true
		}
	}
	return first, found
}

// describeArgs says which arguments a tool takes.
func describeArgs(fields []argField) string {
	if len(fields) == 0 {
		return "no arguments"
	}
	q := make([]string, len(fields))
	for i, f := range fields {
		q[i] = fmt.Sprintf("%q", f.name)
		if f.optional {
			q[i] += " (optional)"
		}
	}
	return strings.Join(q, " and ")
}
