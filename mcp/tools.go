package mcp

import (
	"context"
	"encoding/json"
	"errors"

	"agentmail/internal/text"
	"agentmail/jsonrpc"
	"agentmail/tools"
)

// tool describes one MCP tool: its listing, and the function that runs it
// with its arguments decoded into their struct (see decodeArgs). The input
// schema is written out for the client; TestToolSchemas checks it against
// the struct.
type tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  annotations     `json:"annotations"`

	args func() any // a new arguments struct
	run  func(ctx context.Context, tc *toolCall, args any) (text string, structured any, err error)
}

type annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// bind makes a tool's run function from one that takes its own arguments
// struct.
func bind[A any](run func(ctx context.Context, tc *toolCall, a *A) (string, any, error)) (func() any, func(context.Context, *toolCall, any) (string, any, error)) {
	return func() any { return new(A) }, func(ctx context.Context, tc *toolCall, a any) (string, any, error) {
		return run(ctx, tc, a.(*A))
	}
}

// toolCall is one tools/call in progress.
type toolCall struct {
	ss  *session
	svc *tools.Service
	req *request
}

// toolResult is a tools/call result; modernFields only in the modern era.
type toolResult struct {
	Content           []textContent `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
	*modernFields
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// result is the tools/call result of a tool's return values: a failure is
// a result with isError set and one line of text, so that the model sees
// it and can correct itself.
func (tc *toolCall) result(txt string, structured any, err error) toolResult {
	r := toolResult{Content: []textContent{{Type: "text", Text: txt}}, StructuredContent: structured}
	if err != nil {
		r = toolResult{Content: []textContent{{Type: "text", Text: text.OneLine(err.Error())}}, IsError: true}
	}
	if tc.req.modern {
		r.modernFields = tc.ss.srv.complete()
	}
	return r
}

// toolsCall runs a tools/call of either era. A malformed call or an
// unknown tool is a protocol error (-32602); arguments that do not fit the
// tool, and failures while running, are results with isError set.
func (ss *session) toolsCall(ctx context.Context, r *request) (any, error) {
	t, rawArgs, err := findCall(r.p)
	if err != nil {
		return nil, err
	}
	svc, err := serviceOf(ctx)
	if err != nil {
		return nil, err
	}
	tc := &toolCall{ss: ss, svc: svc, req: r}
	args := t.args()
	if err := decodeArgs(t.Name, rawArgs, args); err != nil {
		ss.srv.logf("%s: %v", t.Name, err)
		return tc.result("", nil, err), nil
	}
	txt, structured, err := t.run(ctx, tc, args)
	if errors.Is(err, jsonrpc.ErrAsync) {
		return nil, err
	}
	if err != nil && ctx.Err() == nil && !tools.NotInTmux(err) {
		// A call cancelled by the client or by a shutdown is not answered,
		// and not worth a log line either; nor is one that found its
		// agent's pane gone, which the watchdog reports in its one line.
		ss.srv.logf("%s: %v", t.Name, err)
	}
	return tc.result(txt, structured, err), nil
}

// findCall reads the tool name and arguments of a tools/call.
func findCall(p *params) (*tool, json.RawMessage, error) {
	if !p.present {
		return nil, nil, invalidParams("tools/call needs params with a tool name")
	}
	name, ok, err := p.str("name", "the tool name must be a string")
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, invalidParams("missing tool name")
	}
	t := findTool(name)
	if t == nil {
		return nil, nil, invalidParams("unknown tool %q", name)
	}
	raw := p.members["arguments"]
	if len(raw) > 0 && string(raw) != "null" && raw[0] != '{' {
		return nil, nil, invalidParams("arguments must be an object")
	}
	return t, raw, nil
}

// findTool returns the tool with this name, or nil.
func findTool(name string) *tool {
	for _, t := range toolSet {
		if t.Name == name {
			return t
		}
	}
	return nil
}
