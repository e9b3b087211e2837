package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
)

// maxAnswer bounds an answer's size: a tool result holds at most one
// message of 64 KiB, escaped.
const maxAnswer = 4 << 20

// dropped is a call whose connection failed, or whose session the hub
// did not know; notSent says that the hub certainly did not act on it.
type dropped struct {
	notSent bool
	err     error
}

func (d *dropped) Error() string { return d.err.Error() }
func (d *dropped) Unwrap() error { return d.err }

// statusError is an HTTP answer other than 200 or 202, with the message
// of the JSON-RPC error it carries, if any.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.msg) }

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

// response is a JSON-RPC answer, or, without an id, a notification.
type response struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// roundTrip sends a request of the session and returns its result.
func (c *Client) roundTrip(ctx context.Context, method string, params any, session, version string, wait time.Duration) (json.RawMessage, error) {
	return c.post(ctx, method, params, session, version, wait, nil)
}

// post sends one message and reads its answer, as JSON or as a stream of
// events; a notification's answer is 202 with nothing. hdr, when not nil,
// receives the answer's headers.
func (c *Client) post(ctx context.Context, method string, params any, session, version string, wait time.Duration, hdr *http.Header) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout+wait)
	defer cancel()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	var id json.RawMessage
	if !strings.HasPrefix(method, "notifications/") {
		id = json.RawMessage(fmt.Sprint(c.id()))
		msg["id"] = id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.headers(req.Header, session, version)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil || isCertificate(err) {
			return nil, err
		}
		return nil, &dropped{notSent: !wrote.Load(), err: err}
	}
	defer resp.Body.Close()
	if hdr != nil {
		*hdr = resp.Header
	}
	if err := checkStatus(resp, session); err != nil || id == nil {
		return nil, err
	}
	return c.answer(ctx, resp, id)
}

// headers sets a request's headers. The token goes only here.
func (c *Client) headers(h http.Header, session, version string) {
	for k, v := range c.cfg.Header {
		h[k] = v
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("User-Agent", "agentmail/"+c.cfg.Version)
	if c.cfg.Token != "" {
		h.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	if c.cfg.Agent != "" {
		h.Set(HeaderAgent, c.cfg.Agent)
	}
	if session != "" {
		h.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		h.Set("MCP-Protocol-Version", version)
	}
}

// checkStatus turns an answer's status other than 200 and 202 into an
// error: 404 for a request of a session is the session lost.
func checkStatus(resp *http.Response, session string) error {
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var r response
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &r) == nil && r.Error != nil {
		msg = r.Error.Message
	}
	if resp.StatusCode == http.StatusNotFound && session != "" {
		return &dropped{notSent: true, err: fmt.Errorf("session not found: %s", msg)}
	}
	return &statusError{status: resp.StatusCode, msg: msg}
}

// answer reads the answer to request id from resp.
func (c *Client) answer(ctx context.Context, resp *http.Response, id json.RawMessage) (json.RawMessage, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var r *response
	var err error
	switch ct {
	case "application/json":
		r = &response{}
		err = json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(r)
	case "text/event-stream":
		r, err = readEvents(resp.Body, id)
	default:
		return nil, &tooOld{fmt.Sprintf("it answered with %q, not JSON or events", ct)}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, &dropped{err: fmt.Errorf("reading the answer: %w", err)}
	case r.Error != nil:
		return nil, r.Error
	case !bytes.Equal(r.ID, id):
		return nil, fmt.Errorf("the hub answered request %s with id %s", id, r.ID)
	}
	return r.Result, nil
}

// readEvents reads a stream of server-sent events until the answer to
// request id, skipping notifications and anything else.
func readEvents(body io.Reader, id json.RawMessage) (*response, error) {
	sc := bufio.NewScanner(io.LimitReader(body, maxAnswer))
	sc.Buffer(make([]byte, 64<<10), maxAnswer)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
			continue
		}
		if line != "" || len(data) == 0 {
			continue // event:, id:, retry:, a comment
		}
		var r response
		if json.Unmarshal([]byte(strings.Join(data, "\n")), &r) == nil && bytes.Equal(r.ID, id) && r.Method == "" {
			return &r, nil
		}
		data = data[:0]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("the stream ended without an answer")
}
