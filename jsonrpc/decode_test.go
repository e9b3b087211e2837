package jsonrpc_test

import (
	"strings"
	"testing"

	"agentmail/jsonrpc"
)

func TestDecode(t *testing.T) {
	// want describes the outcome: "request", "notification", "response", or
	// an error code. id is the id to echo, "" meaning nil (sent as null).
	tests := []struct {
		name   string
		frame  string
		want   string
		code   int
		id     string
		method string
		params string
	}{
		// Requests and notifications.
		{name: "request", frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, want: "request", id: `1`, method: "ping"},
		{name: "string id stays a string", frame: `{"jsonrpc":"2.0","id":"1","method":"ping"}`, want: "request", id: `"1"`, method: "ping"},
		{name: "big integer id exact", frame: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, want: "request", id: `9007199254740993`, method: "ping"},
		{name: "zero id", frame: `{"jsonrpc":"2.0","id":0,"method":"ping"}`, want: "request", id: `0`, method: "ping"},
		{name: "negative id", frame: `{"jsonrpc":"2.0","id":-1,"method":"ping"}`, want: "request", id: `-1`, method: "ping"},
		{name: "fractional id", frame: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, want: "request", id: `1.5`, method: "ping"},
		{name: "exponent id", frame: `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, want: "request", id: `1e3`, method: "ping"},
		{name: "escaped string id kept raw", frame: `{"jsonrpc":"2.0","id":"a\u0022b","method":"ping"}`, want: "request", id: `"a\u0022b"`, method: "ping"},
		{name: "empty string id", frame: `{"jsonrpc":"2.0","id":"","method":"ping"}`, want: "request", id: `""`, method: "ping"},
		{name: "object params", frame: `{"jsonrpc":"2.0","id":2,"method":"m","params":{"a":[1,"}"]}}`, want: "request", id: `2`, method: "m", params: `{"a":[1,"}"]}`},
		{name: "array params", frame: `{"jsonrpc":"2.0","id":2,"method":"m","params":[1,2]}`, want: "request", id: `2`, method: "m", params: `[1,2]`},
		{name: "member order free", frame: `{"params":{},"method":"m","id":3,"jsonrpc":"2.0"}`, want: "request", id: `3`, method: "m", params: `{}`},
		{name: "whitespace everywhere", frame: " { \"jsonrpc\" : \"2.0\" ,\t\"id\" : 4 , \"method\" : \"m\" , \"params\" : [ ] } ", want: "request", id: `4`, method: "m", params: `[ ]`},
		{name: "unknown members ignored", frame: `{"jsonrpc":"2.0","id":5,"method":"m","extra":{"id":9}}`, want: "request", id: `5`, method: "m"},
		{name: "escaped method", frame: `{"jsonrpc":"2.0","id":6,"method":"tools\/list"}`, want: "request", id: `6`, method: "tools/list"},
		{name: "escaped member name", frame: `{"jsonrpc":"2.0","\u0069d":7,"method":"m"}`, want: "request", id: `7`, method: "m"},
		{name: "escaped version", frame: `{"jsonrpc":"\u0032.0","id":8,"method":"m"}`, want: "request", id: `8`, method: "m"},
		{name: "request with method and result", frame: `{"jsonrpc":"2.0","id":9,"method":"m","result":{}}`, want: "request", id: `9`, method: "m"},
		{name: "notification", frame: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, want: "notification", method: "notifications/initialized"},
		{name: "notification with params", frame: `{"jsonrpc":"2.0","method":"n","params":{"x":1}}`, want: "notification", method: "n", params: `{"x":1}`},

		// Responses from the peer.
		{name: "response with result", frame: `{"jsonrpc":"2.0","id":99,"result":{}}`, want: "response"},
		{name: "response with error", frame: `{"jsonrpc":"2.0","id":99,"error":{"code":1,"message":"x"}}`, want: "response"},
		{name: "response with null id", frame: `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`, want: "response"},
		{name: "sloppy response", frame: `{"result":null}`, want: "response"},

		// Not JSON.
		{name: "truncated", frame: `{"jsonrpc":"2.0","id":1,`, want: "error", code: jsonrpc.CodeParseError},
		{name: "garbage", frame: `{not json`, want: "error", code: jsonrpc.CodeParseError},
		{name: "two values", frame: `{} {}`, want: "error", code: jsonrpc.CodeParseError},
		{name: "invalid UTF-8", frame: "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"m\"}", want: "error", code: jsonrpc.CodeParseError},
		{name: "byte order mark", frame: "\xef\xbb\xbf{}", want: "error", code: jsonrpc.CodeParseError},

		// JSON, but not a request: id echoed only when valid.
		{name: "number", frame: `5`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "string", frame: `"ping"`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "null", frame: `null`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "array", frame: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "empty object", frame: `{}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "wrong version", frame: `{"jsonrpc":"1.0","id":5,"method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `5`},
		{name: "numeric version", frame: `{"jsonrpc":2.0,"id":5,"method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `5`},
		{name: "missing version", frame: `{"id":"x","method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `"x"`},
		{name: "missing method", frame: `{"jsonrpc":"2.0","id":6}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `6`},
		{name: "numeric method", frame: `{"jsonrpc":"2.0","id":7,"method":5}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `7`},
		{name: "null method", frame: `{"jsonrpc":"2.0","id":7,"method":null}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `7`},
		{name: "method and invalid version without id", frame: `{"jsonrpc":"1.0","method":"n"}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "numeric method without id", frame: `{"jsonrpc":"2.0","method":1}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "null id", frame: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "object id", frame: `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "array id", frame: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "bool id", frame: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "string params", frame: `{"jsonrpc":"2.0","id":8,"method":"m","params":"x"}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `8`},
		{name: "null params", frame: `{"jsonrpc":"2.0","id":8,"method":"m","params":null}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `8`},
		{name: "number params", frame: `{"jsonrpc":"2.0","id":8,"method":"m","params":1}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `8`},
		{name: "repeated method", frame: `{"jsonrpc":"2.0","id":9,"method":"a","method":"b"}`, want: "error", code: jsonrpc.CodeInvalidRequest, id: `9`},
		{name: "repeated id", frame: `{"jsonrpc":"2.0","id":9,"id":10,"method":"a"}`, want: "error", code: jsonrpc.CodeInvalidRequest},
		{name: "case matters", frame: `{"JSONRPC":"2.0","ID":1,"Method":"ping"}`, want: "error", code: jsonrpc.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := []byte(tt.frame)
			req, id, isResponse, err := jsonrpc.Decode(frame)
			if string(id) != tt.id || (tt.id == "") != (id == nil) {
				t.Errorf("id = %q, want %q", id, tt.id)
			}
			switch tt.want {
			case "request", "notification":
				if err != nil || isResponse || req == nil {
					t.Fatalf("Decode = %v, %v, %v; want a %s", req, isResponse, err, tt.want)
				}
				if req.IsNotification() != (tt.want == "notification") {
					t.Errorf("IsNotification = %v", req.IsNotification())
				}
				if string(req.ID) != tt.id {
					t.Errorf("req.ID = %q, want %q", req.ID, tt.id)
				}
				if req.Method != tt.method {
					t.Errorf("Method = %q, want %q", req.Method, tt.method)
				}
				if string(req.Params) != tt.params || (tt.params == "") != (req.Params == nil) {
					t.Errorf("Params = %q, want %q", req.Params, tt.params)
				}
				if req.Batch {
					t.Errorf("Batch = true for a single message")
				}
				// The request must own its bytes: the frame buffer is reused.
				for i := range frame {
					frame[i] = 'X'
				}
				if string(req.ID) != tt.id || string(req.Params) != tt.params {
					t.Errorf("request aliases the frame: id %q params %q", req.ID, req.Params)
				}
			case "response":
				if !isResponse || req != nil || err != nil {
					t.Fatalf("Decode = %v, %v, %v; want a response", req, isResponse, err)
				}
			default:
				if err == nil || req != nil || isResponse {
					t.Fatalf("Decode = %v, %v, %v; want error %d", req, isResponse, err, tt.code)
				}
				if err.Code != tt.code {
					t.Errorf("code = %d, want %d (%s)", err.Code, tt.code, err.Message)
				}
				prefix := map[int]string{jsonrpc.CodeParseError: "Parse error: ", jsonrpc.CodeInvalidRequest: "Invalid Request: "}[tt.code]
				if !strings.HasPrefix(err.Message, prefix) {
					t.Errorf("message = %q, want prefix %q", err.Message, prefix)
				}
			}
		})
	}
}

func TestErrorf(t *testing.T) {
	err := jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s", "nope")
	if err.Code != jsonrpc.CodeMethodNotFound || err.Message != "Method not found: nope" || err.Error() != err.Message {
		t.Errorf("Errorf = %+v, Error() = %q", err, err.Error())
	}
}

func TestLoneSurrogate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{`""`, false},
		{`"plain"`, false},
		{`"\ufffd"`, false},
		{`"\ud83d\ude00"`, false},
		{`"\uD83D\uDE00 and \u00e9"`, false},
		{`"\\ud800"`, false}, // an escaped backslash, then text
		{`"\n\t\"\\"`, false},
		{`"\ud800"`, true},
		{`"\udc00"`, true},
		{`"a\ud83db"`, true},
		{`"\ud83d\u0041"`, true},
		{`"\ud83d\n"`, true},
		{`"\ude00\ud83d"`, true},
		{`"\ud83d\ude00\ud83d"`, true},
	} {
		if got := jsonrpc.LoneSurrogate([]byte(tt.in)); got != tt.want {
			t.Errorf("LoneSurrogate(%s) = %v, want %v", tt.in, got, tt.want)
		}
		// Cross-check: a string without lone surrogates decodes to text
		// that encodes back without U+FFFD unless the source had it.
		s, ok := jsonrpc.StringValue([]byte(tt.in))
		if !ok {
			t.Fatalf("StringValue(%s) failed", tt.in)
		}
		if changed := strings.Contains(s, "\ufffd") && !strings.Contains(strings.ToLower(tt.in), `\ufffd`); changed != tt.want {
			t.Errorf("%s decodes to %q: U+FFFD appearing is %v, LoneSurrogate should be %v", tt.in, s, changed, changed)
		}
	}
}
