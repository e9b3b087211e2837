// Package jsonrpc speaks JSON-RPC 2.0 over a byte stream in which every
// message is one line of JSON, as the MCP stdio transport requires. It knows
// nothing of MCP or mail: callers supply a Handler and decide what each method
// means.
//
// The contract, from the bytes up:
//
//   - Framing. A message is one line ending in "\n" or "\r\n" and holding at
//     most MaxFrame bytes. Blank and whitespace-only lines are skipped. A
//     longer line is discarded up to its end and answered with one -32600
//     error, after which the next line is read normally, so one oversized
//     message never ends the session. The error carries the line's
//     top-level "id" when it could be read while the line was discarded,
//     so that the client's call ends at once, and null otherwise.
//   - Decoding. A line that is not JSON (or not UTF-8) is answered -32700. Valid
//     JSON that is not a request is answered -32600, echoing the id when it
//     could be read and is valid, and null otherwise. Objects with "result" or
//     "error" and no "method" are responses from the peer and are ignored. A
//     notification whose "params" is neither an object nor an array is
//     logged and dropped, since a notification is never answered.
//   - Ids are kept as the exact bytes received and echoed verbatim, so "1" and
//     1 stay distinct and large integers stay exact.
//   - Ordering. Requests are handled one at a time, in arrival order, so
//     answers leave in the order the requests came. A separate reader keeps
//     reading meanwhile, so a cancellation or a duplicate id is noticed while
//     the work it concerns is still queued or running.
//   - Answers. Every request gets exactly one answer unless it is cancelled;
//     notifications are never answered. A handler may send its answer
//     before it returns (Reply), to act only once the answer is out. Each answer is written as one line in
//     a single Write call, so concurrent writers can never interleave.
//   - Shutdown. When the input ends or the context is cancelled, reading
//     stops and the requests already read are still answered for a bounded
//     grace period, unless Options.Abandon says the cause of the
//     cancellation means the peer is gone. Nothing is written after Serve
//     returns.
package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxFrame is the largest message accepted, in bytes per line, not counting
// the "\n" or "\r\n" that ends it. The limit bounds the memory one message
// can claim; a client with more to say must split it.
const MaxFrame = 65536

// maxFrameText is MaxFrame in decimal, for error texts that are constants
// (TestMaxFrameText checks that the two agree).
const maxFrameText = "65536"

// The error codes defined by JSON-RPC 2.0.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// ErrClosed is returned by Notify once Serve has returned, because nothing
// may be written to the stream after that.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Error is a JSON-RPC error object. Handlers return it, possibly wrapped with
// %w, to choose the code and message of the error response; any other error
// becomes CodeInternalError.
type Error struct {
	Code    int
	Message string
	Data    any // marshalled as "data" when non-nil
}

// Error returns the message, so that a wrapped *Error reads naturally.
func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Request is one decoded request or notification.
type Request struct {
	ID     json.RawMessage // nil for a notification; otherwise the exact bytes of the id as received
	Method string
	Params json.RawMessage // nil when absent
	Batch  bool            // true when the request arrived inside a batch array
}

// IsNotification reports whether r has no id, and so must never be answered.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Handler answers one request. For notifications the return values are
// ignored. An error that is or wraps *Error keeps its code and message (a zero
// code becomes CodeInternalError, since 0 means nothing to a client); any
// other error becomes CodeInternalError. A nil result with a nil error, or a
// result that marshals to null, is sent as {} because a result must be an
// object; a result that marshals to anything else but an object is a bug in
// the handler and is answered with CodeInternalError. A json.RawMessage
// result holding one line is written as it is, unchecked: it must be a
// valid JSON object.
//
// Handlers run one at a time, never concurrently, so they need no locking
// among themselves. For a request, the context is cancelled when the request
// is cancelled with Conn.Cancel, when Serve gives up waiting for it at
// shutdown, and once the handler returns. A notification, which nothing can
// cancel, gets a context that ends when Serve returns.
type Handler func(ctx context.Context, req *Request) (result any, err error)

// toError turns a handler's error into the error object sent to the client.
func toError(err error) *Error {
	var e *Error
	if !errors.As(err, &e) {
		return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
	}
	if e == nil {
		// A typed nil *Error is a handler bug; answer something rather than panic.
		return &Error{Code: CodeInternalError, Message: "Internal error"}
	}
	if e.Code == 0 {
		return &Error{Code: CodeInternalError, Message: e.Message, Data: e.Data}
	}
	return e
}
