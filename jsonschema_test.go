package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file holds a JSON Schema (draft-07) validator for exactly the
// keywords the MCP Registry's server.schema.json uses. A full validator
// library would be a dependency of the product module for one test; this
// one is small enough to read, and it refuses any keyword it does not
// implement, so a newer registry schema that needs more cannot pass by
// being half understood.

// schemaAnnotations are keywords that describe and never constrain.
var schemaAnnotations = map[string]bool{
	"$comment": true, "$id": true, "$schema": true, "title": true,
	"description": true, "example": true, "examples": true, "default": true,
	"definitions": true,
}

// jsonSchema validates documents against one schema document.
type jsonSchema struct {
	root map[string]any
}

// parseJSONSchema decodes a schema. Numbers stay json.Number so that
// lengths compare exactly.
func parseJSONSchema(data []byte) (*jsonSchema, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema is not an object")
	}
	return &jsonSchema{root: root}, nil
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// validate returns every violation found, each naming the instance path;
// none means the document is valid.
func (s *jsonSchema) validate(doc any) []string {
	var errs []string
	s.check(s.root, doc, "", &errs)
	return errs
}

// check validates v at path against schema, appending violations to errs.
func (s *jsonSchema) check(schema map[string]any, v any, path string, errs *[]string) {
	fail := func(format string, args ...any) {
		p := path
		if p == "" {
			p = "/"
		}
		*errs = append(*errs, p+": "+fmt.Sprintf(format, args...))
	}
	// Keywords in a fixed order, so that messages come out the same way
	// every run.
	keys := make([]string, 0, len(schema))
	for k := range schema {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv := schema[k]
		switch k {
		case "$ref":
			ref, _ := kv.(string)
			target, err := s.resolve(ref)
			if err != nil {
				fail("%v", err)
				continue
			}
			s.check(target, v, path, errs)
		case "allOf":
			for _, sub := range kv.([]any) {
				s.check(sub.(map[string]any), v, path, errs)
			}
		case "anyOf":
			ok := false
			for _, sub := range kv.([]any) {
				if s.valid(sub.(map[string]any), v, path) {
					ok = true
					break
				}
			}
			if !ok {
				fail("matches none of anyOf")
			}
		case "not":
			if s.valid(kv.(map[string]any), v, path) {
				fail("matches a schema it must not")
			}
		case "type":
			if !hasType(v, kv.(string)) {
				fail("is %s, want %s", typeOf(v), kv)
			}
		case "enum":
			if !slices.ContainsFunc(kv.([]any), func(e any) bool { return reflect.DeepEqual(e, v) }) {
				fail("%v is not one of %v", v, kv)
			}
		case "const":
			if !reflect.DeepEqual(kv, v) {
				fail("%v is not %v", v, kv)
			}
		case "pattern":
			str, ok := v.(string)
			if !ok {
				continue
			}
			re, err := regexp.Compile(kv.(string))
			if err != nil {
				fail("schema pattern %q: %v", kv, err)
			} else if !re.MatchString(str) {
				fail("%q does not match %s", str, kv)
			}
		case "minLength", "maxLength":
			str, ok := v.(string)
			if !ok {
				continue
			}
			n, _ := kv.(json.Number).Int64()
			if l := int64(utf8.RuneCountInString(str)); (k == "minLength" && l < n) || (k == "maxLength" && l > n) {
				fail("length %d breaks %s %d", l, k, n)
			}
		case "format":
			str, ok := v.(string)
			if !ok {
				continue
			}
			if kv != "uri" {
				fail("schema format %q is not implemented", kv)
			} else if u, err := url.Parse(str); err != nil || u.Scheme == "" {
				fail("%q is not an absolute URI", str)
			}
		case "required":
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for _, name := range kv.([]any) {
				if _, ok := obj[name.(string)]; !ok {
					fail("missing required member %q", name)
				}
			}
		case "properties":
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for name, sub := range kv.(map[string]any) {
				if mv, ok := obj[name]; ok {
					s.check(sub.(map[string]any), mv, path+"/"+name, errs)
				}
			}
		case "additionalProperties":
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			props, _ := schema["properties"].(map[string]any)
			for name, mv := range obj {
				if _, declared := props[name]; declared {
					continue
				}
				switch ap := kv.(type) {
				case bool:
					if !ap {
						fail("member %q is not allowed", name)
					}
				case map[string]any:
					s.check(ap, mv, path+"/"+name, errs)
				}
			}
		case "items":
			arr, ok := v.([]any)
			if !ok {
				continue
			}
			for i, item := range arr {
				s.check(kv.(map[string]any), item, fmt.Sprintf("%s/%d", path, i), errs)
			}
		default:
			if !schemaAnnotations[k] {
				fail("schema keyword %q is not implemented by this validator", k)
			}
		}
	}
}

// valid reports whether v matches schema, for anyOf and not.
func (s *jsonSchema) valid(schema map[string]any, v any, path string) bool {
	var errs []string
	s.check(schema, v, path, &errs)
	return len(errs) == 0
}

// resolve finds a local reference, "#/definitions/Name".
func (s *jsonSchema) resolve(ref string) (map[string]any, error) {
	name, ok := strings.CutPrefix(ref, "#/definitions/")
	if !ok {
		return nil, fmt.Errorf("reference %q is not implemented", ref)
	}
	defs, _ := s.root["definitions"].(map[string]any)
	target, ok := defs[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("reference %q names no definition", ref)
	}
	return target, nil
}

func hasType(v any, want string) bool {
	switch want {
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	}
	return typeOf(v) == want
}

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
