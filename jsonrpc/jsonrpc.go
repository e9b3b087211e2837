// Package jsonrpc speaks JSON-RPC 2.0. It knows nothing of MCP or mail:
// callers supply a Handler and decide what each method means.
//
// The layers, from the bytes up:
//
//   - Frames (Reader). A message is one line ending in "\n" or "\r\n" and
//     holding at most MaxFrame bytes; blank lines are skipped. A longer
//     line is discarded up to its end, its top-level "id" read on the way,
//     and the next line is read normally.
//   - Messages (Decode). A frame holds one request, notification or
//     response, or a batch of them; an invalid one becomes the error that
//     answers it. Ids are kept as the exact bytes received.
//   - Streams (Stream). A Conn reads messages from a Stream and writes
//     answers and notifications to it: LineStream over a byte stream, or
//     a transport's own, such as one HTTP exchange.
//   - Connections (Conn). Requests are handled one at a time, in arrival
//     order, by the goroutine that reads them, so answers leave in order.
//     A handler returns its result or error; one that waits (for mail, or
//     for the end of a stream), or must act only once its answer is out,
//     returns ErrAsync and answers through Conn.Respond, so that reading
//     goes on: a cancellation or a duplicate id is noticed while the wait
//     it concerns runs.
package jsonrpc

import (
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

// Error is a JSON-RPC error object. Handlers return it, possibly wrapped,
// to choose the code and message of the error answer; any other error
// becomes CodeInternalError.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error returns the message, so that a wrapped *Error reads naturally.
func (e *Error) Error() string { return e.Message }

// Is matches errors by code, so that errors.Is(err, ErrInvalidParams)
// holds for every -32602 whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && e.Code == t.Code
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// The standard errors, for errors.Is.
var (
	ErrParse          = &Error{Code: CodeParseError, Message: "Parse error"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "Invalid Request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "Method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "Invalid params"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "Internal error"}
)

// invalidRequest returns a CodeInvalidRequest error with the standard prefix.
func invalidRequest(msg string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + msg}
}

// wireError turns a handler's error into the error object sent to the
// client.
func wireError(err error) *Error {
	var e *Error
	switch {
	case !errors.As(err, &e):
		return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
	case e == nil:
		// A typed nil *Error is a handler bug; answer something rather than panic.
		return &Error{Code: CodeInternalError, Message: "Internal error"}
	case e.Code == 0:
		return &Error{Code: CodeInternalError, Message: e.Message, Data: e.Data}
	}
	return e
}
