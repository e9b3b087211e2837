package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// AppendString appends s to dst as a JSON string, as encoding/json writes
// it with HTML escaping off: "<", ">" and "&" stay as they are on the wire,
// as they do in every answer, while invalid UTF-8 becomes U+FFFD and U+2028
// and U+2029 are escaped. It lets fixed texts be assembled into results
// once, at start-up.
func AppendString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// A string always encodes; Encode can only fail for values that are
	// not representable in JSON.
	_ = enc.Encode(s)
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
