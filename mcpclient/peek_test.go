package mcpclient_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// peekMethod reads the JSON-RPC method of a POST and gives the request
// back with its body intact.
func peekMethod(t *testing.T, r *http.Request) (*http.Request, string) {
	if r.Method != http.MethodPost {
		return r, r.Method
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Error(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(body, &m)
	if m.Params.Name != "" {
		return r, m.Method + " " + m.Params.Name
	}
	return r, m.Method
}
