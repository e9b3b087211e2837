package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Stream carries the messages of one connection. Read returns the next
// message, and io.EOF once there are no more. Write sends one value: a
// *Response, a []*Response (the answer to a batch, one array) or a
// *Notification; a Conn never calls it from two
// goroutines at once.
type Stream interface {
	Read() (Message, error)
	Write(v any) error
}

// LineStream is a Stream of one message a line: the MCP stdio transport.
type LineStream struct {
	r   *Reader
	w   io.Writer
	buf bytes.Buffer
}

// NewLineStream returns a Stream that reads lines from r and writes them
// to w.
func NewLineStream(r io.Reader, w io.Writer) *LineStream {
	return &LineStream{r: NewReader(r), w: w}
}

// Read returns the message of the next line. A line longer than MaxFrame
// is the message TooLarge, carrying its id when it could be read.
func (s *LineStream) Read() (Message, error) {
	frame, err := s.r.Next()
	var tooLarge *TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return TooLarge(tooLarge.ID), nil
	case err != nil:
		return Message{}, err
	}
	return Decode(frame), nil
}

// Write writes v as one line, in a single Write call, so that a reader
// never sees half a line.
func (s *LineStream) Write(v any) error {
	s.buf.Reset()
	// A message that encodes itself is written as it says: passed through
	// an Encoder, its output would be compacted a second time.
	if m, ok := v.(json.Marshaler); ok {
		b, err := m.MarshalJSON()
		if err != nil {
			return err
		}
		s.buf.Write(b)
		s.buf.WriteByte('\n')
	} else if err := encode(&s.buf, v); err != nil {
		return err
	}
	_, err := s.w.Write(s.buf.Bytes())
	return err
}
