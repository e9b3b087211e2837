package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"agentmail/jsonrpc"
)

// encodingJSON is what encoding/json writes for s with HTML escaping off,
// the form AppendString must match.
func encodingJSON(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var appendStringSeeds = []string{
	"",
	"plain text",
	`quote " and backslash \ and slash /`,
	"\b\f\n\r\t\x00\x01\x1f\x7f",
	"<html> & 'single'",
	"héllo wörld, 日本語, 🙂",
	"line\u2028separator\u2029paragraph",
	"bad \xff utf-8 \xc3 \xe2\x82 end",
	"\xed\xa0\x80 surrogate half",
}

// TestAppendString checks that AppendString writes what encoding/json
// writes with HTML escaping off, after what dst already holds.
func TestAppendString(t *testing.T) {
	for _, s := range appendStringSeeds {
		got := jsonrpc.AppendString([]byte("prefix:"), s)
		want := append([]byte("prefix:"), encodingJSON(t, s)...)
		if !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}
