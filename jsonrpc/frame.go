package jsonrpc

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
)

// ErrFrameTooLarge reports a line longer than MaxFrame. The line has been
// discarded, and the Reader is ready to return the one after it. Next
// returns it as a *TooLargeError, which errors.Is matches to it.
var ErrFrameTooLarge = errors.New("jsonrpc: message exceeds the " + maxFrameText + "-byte line limit")

// TooLargeError is the error Next returns for a line longer than MaxFrame.
// ID is the line's top-level "id" member, as written, when it could be read
// while the line was discarded; nil otherwise.
type TooLargeError struct {
	ID json.RawMessage
}

// Error returns the text of ErrFrameTooLarge.
func (e *TooLargeError) Error() string { return ErrFrameTooLarge.Error() }

// Is reports whether target is ErrFrameTooLarge, so that callers that need
// no id can keep testing for it.
func (e *TooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// Reader splits a byte stream into frames, one per line.
//
// It is built on bufio.Reader.ReadSlice rather than bufio.Scanner because a
// Scanner stops for good after a token that is too long, while ReadSlice
// reports a full buffer and lets the rest of the line be skipped.
type Reader struct {
	br *bufio.Reader
	// err is sticky: once the input has ended or failed, every later call
	// reports it instead of reading again, which on a terminal would block.
	err error
	// scan reads the id of an oversized line as it is discarded.
	scan idScanner
}

// NewReader returns a Reader for r. It buffers MaxFrame+2 bytes so that the
// longest acceptable line and its "\r\n" fit in the buffer at once.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, MaxFrame+2)}
}

// Next returns the next non-blank line without its "\n" or "\r\n". The slice
// is only valid until the next call. A line longer than MaxFrame returns
// a *TooLargeError after discarding the rest of that line, and the following
// call returns the next line. A final line without "\n" is returned. At the
// end of the input Next returns io.EOF; a read error is returned as is, after
// any lines read before it.
func (r *Reader) Next() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		line, err := r.br.ReadSlice('\n')
		switch err {
		case nil:
		case bufio.ErrBufferFull:
			// Skip to the end of the line so the stream stays in step,
			// reading its id on the way.
			r.scan.reset()
			r.scan.feed(line)
			for err == bufio.ErrBufferFull {
				line, err = r.br.ReadSlice('\n')
				r.scan.feed(line)
			}
			r.err = err // nil when the line ended normally
			return nil, &TooLargeError{ID: r.scan.result()}
		default:
			// The input ended or failed; line holds whatever came before.
			r.err = err
		}
		line = trimEOL(line)
		if len(line) > MaxFrame {
			r.scan.reset()
			r.scan.feed(line)
			return nil, &TooLargeError{ID: r.scan.result()}
		}
		if isBlank(line) {
			continue
		}
		return line, nil
	}
}

// trimEOL removes a trailing "\n" and then a trailing "\r".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// isBlank reports whether b holds only JSON whitespace.
func isBlank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// isSpace reports whether c is whitespace as JSON defines it.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
