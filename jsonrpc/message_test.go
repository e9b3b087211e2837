package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x","arguments":{"s":"}]"}}}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"m","params":[1,{"a":[]}]}`,
	`{"jsonrpc":"2.0","id":-1.5e3,"method":"m"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"1.0","id":5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`,
	`{"jsonrpc":"2.0","method":"m","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}`,
	`{"jsonrpc":"\u0032.0","\u0069d":"\u00e9","method":"\/m"}`,
	` { "jsonrpc" : "2.0" , "id" : 0 , "method" : "m" } `,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},1,[],"x"]`,
	`[]`,
	`{"jsonrpc":"2.0","id":1,`,
	`{}`,
	`5`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\\xff\",\"method\":\"m\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"m\"}",
}

// TestDecode checks what each kind of frame becomes.
func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		frame  string
		method string // of the one valid request
		code   int    // of the one invalid item
		id     string // echoed with it, or of the request
		items  int
	}{
		{frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, method: "ping", id: "1", items: 1},
		{frame: `{"jsonrpc":"2.0","id":"\u0061","method":"ping"}`, method: "ping", id: `"\u0061"`, items: 1},
		{frame: `{"jsonrpc":"2.0","method":"n"}`, method: "n", items: 1},
		{frame: `{"jsonrpc":"2.0","id":1,"result":{}}`, items: 0},
		{frame: `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, code: CodeInvalidRequest, id: "1", items: 1},
		{frame: `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, code: CodeInvalidRequest, items: 1},
		{frame: `{"jsonrpc":"2.0","id":7,"method":"m","method":"n"}`, code: CodeInvalidRequest, id: "7", items: 1},
		{frame: `{"jsonrpc":"2.0","ID":7,"method":"m"}`, method: "m", items: 1},
		{frame: `{"jsonrpc":"1.0","id":5,"method":"ping"}`, code: CodeInvalidRequest, id: "5", items: 1},
		{frame: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: CodeInvalidRequest, items: 1},
		{frame: `{"jsonrpc":"2.0","id":1,`, code: CodeParseError, items: 1},
		{frame: "{\"id\":\"\xff\"}", code: CodeParseError, items: 1},
		{frame: `[]`, code: CodeInvalidRequest, items: 1},
		{frame: `5`, code: CodeInvalidRequest, items: 1},
	} {
		m := Decode([]byte(tt.frame))
		if len(m.Items) != tt.items {
			t.Errorf("%s: %d items, want %d", tt.frame, len(m.Items), tt.items)
			continue
		}
		if tt.items == 0 {
			continue
		}
		it := m.Items[0]
		switch {
		case tt.code != 0 && (it.Err == nil || it.Err.Code != tt.code || string(it.ID) != tt.id):
			t.Errorf("%s: error %v id %s, want code %d id %s", tt.frame, it.Err, it.ID, tt.code, tt.id)
		case tt.code == 0 && (it.Err != nil || it.Method != tt.method || string(it.Request.ID) != tt.id):
			t.Errorf("%s: got %+v, want method %s id %s", tt.frame, it, tt.method, tt.id)
		}
	}
}

// TestBatchDecode checks that a batch's elements are decoded one by one.
func TestBatchDecode(t *testing.T) {
	m := Decode([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},1,{"jsonrpc":"2.0","id":2,"result":{}}]`))
	if !m.Batch || len(m.Items) != 3 || m.Items[0].Method != "ping" || !m.Items[0].Batch || m.Items[1].IsCall() || m.Items[2].Err == nil {
		t.Fatalf("got %+v", m)
	}
}

// TestErrorIs checks that errors match by code.
func TestErrorIs(t *testing.T) {
	err := Errorf(CodeInvalidParams, "Invalid params: x")
	if !errorsIs(err, ErrInvalidParams) || errorsIs(err, ErrInvalidRequest) {
		t.Fatal("errors.Is does not match by code")
	}
}

// FuzzDecode checks that Decode never panics, that a frame that is not
// well-formed is a parse error, and that answering what it decoded yields
// valid JSON with the same id bytes.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		m := Decode(frame)
		wellFormed := json.Valid(frame) && utf8.Valid(frame)
		for _, it := range m.Items {
			if !wellFormed && (it.Err == nil || it.Err.Code != CodeParseError) {
				t.Fatalf("malformed frame decoded as %+v", it)
			}
			id := it.ID
			if it.Request != nil {
				id = it.Request.ID
			}
			b, err := (&Response{ID: id, Error: it.Err, Result: json.RawMessage(`{}`)}).MarshalJSON()
			if err != nil || !json.Valid(b) || !utf8.Valid(b) {
				t.Fatalf("answer %q: %v", b, err)
			}
			if id != nil && !bytes.Contains(b, id) {
				t.Fatalf("answer %q lost id %q", b, id)
			}
		}
	})
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
