package mcpclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The kinds of error a call ends with; errors.Is tells them.
var (
	ErrUnreachable = errors.New("hub unreachable")
	ErrToken       = errors.New("token refused")
	ErrForbidden   = errors.New("forbidden")
	ErrCertificate = errors.New("certificate not trusted")
	ErrTooOld      = errors.New("hub too old")
	// ErrNotFound is a resource the hub does not have, or that the caller
	// may not read.
	ErrNotFound = errors.New("resource not found")
	// ErrHub is any other error the hub answered a request with.
	ErrHub = errors.New("hub error")
)

// Error is an error of a call: one line that says what went wrong and
// what to do, and its kind.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// ToolError is a tool's own failure (a result with isError): its text, as
// the same operation run locally says it.
type ToolError struct{ Text string }

func (e *ToolError) Error() string { return e.Text }

// tooOld is a hub that lacks what this client needs, and what it lacks.
type tooOld struct{ what string }

func (e *tooOld) Error() string { return e.what }

// codeResourceNotFound is the legacy era's error for a resource that does
// not exist.
const codeResourceNotFound = -32002

// explain turns the error of a call into an Error that says what to do.
// Nothing in it holds the token: the request's headers are never part of
// an error of net/http.
func (c *Client) explain(err error, method string, wait time.Duration) error {
	if err == nil {
		return nil
	}
	var (
		old    *tooOld
		status *statusError
		rpc    *rpcError
		e      *Error
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &old):
		return c.fail(ErrTooOld, "the hub at %s is too old for this agentmail (%s): update agentmail there", c.url, old.what)
	case isCertificate(err):
		return c.fail(ErrCertificate, "the certificate of the hub at %s is not trusted (%v): set $%s to the PEM file of the CA that signed it", c.url, certCause(err), CAFileEnv)
	case errors.Is(err, context.DeadlineExceeded):
		return c.fail(ErrUnreachable, "the hub at %s did not answer within %v: is it running, and reachable from here?", c.url, c.cfg.Timeout+wait)
	case errors.As(err, &status):
		return c.statusFail(status, method)
	case errors.As(err, &rpc):
		return c.rpcFail(rpc, method)
	}
	var d *dropped
	if errors.As(err, &d) {
		err = d.err
	}
	return c.fail(ErrUnreachable, "cannot reach the hub at %s: %v; is \"agentmail mcp --transport http\" running there?", c.url, cause(err))
}

func (c *Client) fail(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// statusFail explains an HTTP status.
func (c *Client) statusFail(e *statusError, method string) error {
	switch {
	case e.status == http.StatusUnauthorized && c.cfg.Token == "":
		return c.fail(ErrToken, "the hub at %s asks for a token: set $%s", c.url, TokenEnv)
	case e.status == http.StatusUnauthorized:
		return c.fail(ErrToken, "the hub at %s refused the token: check $%s", c.url, TokenEnv)
	case e.status == http.StatusForbidden:
		return c.fail(ErrForbidden, "the hub at %s refused: %s", c.url, e.msg)
	case strings.Contains(e.msg, "no agent named") && c.cfg.Agent == "":
		// A hub refuses at initialize a session that names no agent.
		return c.noAgent()
	case e.status == http.StatusNotFound && method == "initialize":
		return c.fail(ErrUnreachable, "%s serves no MCP (HTTP 404): check $%s, which ends in the path the hub prints, usually /mcp", c.url, URLEnv)
	}
	return c.fail(ErrHub, "the hub at %s answered %s with HTTP %d: %s", c.url, method, e.status, e.msg)
}

// rpcFail explains a JSON-RPC error.
func (c *Client) rpcFail(e *rpcError, method string) error {
	switch {
	case e.Code == -32601 || method == "initialize":
		return c.fail(ErrTooOld, "the hub at %s is too old for this agentmail (%s: %s): update agentmail there", c.url, method, e.Message)
	case e.Code == codeResourceNotFound || method == "resources/read" && strings.Contains(e.Message, "not found"):
		return c.fail(ErrNotFound, "%s", e.Message)
	case strings.Contains(e.Message, "unknown tool"):
		return c.fail(ErrTooOld, "the hub at %s is too old for this agentmail (%s): update agentmail there", c.url, e.Message)
	case strings.Contains(e.Message, "no agent named") && c.cfg.Agent == "":
		return c.noAgent()
	}
	return c.fail(ErrHub, "the hub at %s: %s", c.url, e.Message)
}

// noAgent is the error for a hub that does not know which agent the
// client is.
func (c *Client) noAgent() error {
	return c.fail(ErrHub, "the hub at %s does not know which agent you are: set $%s to your agent's name there, or use the token the hub made for your agent (agentmail agent add)", c.url, AgentEnv)
}

// isCertificate reports whether err is a failed check of the hub's
// certificate.
func isCertificate(err error) bool {
	var v *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var h x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &v) || errors.As(err, &ua) || errors.As(err, &h) || errors.As(err, &ci)
}

// certCause is what is wrong with the certificate, without the request
// around it.
func certCause(err error) error {
	var v *tls.CertificateVerificationError
	if errors.As(err, &v) {
		return v.Err
	}
	return cause(err)
}

// cause is the innermost useful part of a transport error: a url.Error's
// own, without the method and URL that the message already says.
func cause(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || !strings.HasPrefix(err.Error(), "Post ") {
			return err
		}
		err = u.Unwrap()
	}
}
