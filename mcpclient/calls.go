package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ToolResult is what a tool answered: its text, and its structured
// result when it gave one.
type ToolResult struct {
	Text       string
	Structured json.RawMessage
}

// repeatable are the tools that may be called twice for one call: they
// change nothing, or set what they set again. A send repeated would store
// its message twice; a receive repeated could take a second message while
// the first one is lost with the connection.
var repeatable = map[string]bool{"status": true, "list-recipients": true}

// CallTool calls a tool with its arguments. wait is how long the tool may
// wait on the hub (receive's timeout_seconds), added to the time-out. A
// tool's own failure is a *ToolError with the text the hub gave.
func (c *Client) CallTool(ctx context.Context, name string, args any, wait time.Duration) (*ToolResult, error) {
	if args == nil {
		args = map[string]any{}
	}
	raw, err := c.call(ctx, name, "tools/call", map[string]any{"name": name, "arguments": args}, wait, repeatable[name])
	if err != nil {
		return nil, err
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, c.explain(&tooOld{fmt.Sprintf("its result of %s is not one: %v", name, err)}, "tools/call", 0)
	}
	var text []string
	for _, ct := range r.Content {
		if ct.Type == "text" {
			text = append(text, ct.Text)
		}
	}
	res := &ToolResult{Text: strings.Join(text, "\n"), Structured: r.StructuredContent}
	if r.IsError {
		return nil, &ToolError{Text: res.Text}
	}
	return res, nil
}

// ReadResource reads the resource at uri and returns its text and type.
// A resource the hub does not have is an error of kind ErrNotFound.
func (c *Client) ReadResource(ctx context.Context, uri string) (text, mimeType string, err error) {
	raw, err := c.call(ctx, uri, "resources/read", map[string]any{"uri": uri}, 0, true)
	if err != nil {
		return "", "", err
	}
	var r struct {
		Contents []struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Contents) != 1 {
		return "", "", c.explain(&tooOld{fmt.Sprintf("it read %s as something else than one text", uri)}, "resources/read", 0)
	}
	return r.Contents[0].Text, r.Contents[0].MimeType, nil
}
