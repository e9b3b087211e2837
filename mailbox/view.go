package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
)

// Messages calls fn for each well-formed message of name's mailbox, oldest
// first, until fn returns false. It holds a shared lock, so it sees whole
// lines only, and changes nothing: malformed lines are skipped, and a
// reader that never marks anything read may look at any mailbox.
func (s *Store) Messages(ctx context.Context, name string, fn func(m *Message) bool) error {
	if err := ValidName(name); err != nil {
		return err
	}
	f, fi, err := s.openMailbox(ctx, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = scanLines(f.File, 0, fi.Size(), func(line []byte, _ int64) (bool, error) {
		m, ok := decodeMessage(line)
		return ok && !fn(&m), nil
	})
	return err
}

// Recent returns up to n of the newest well-formed messages of name's
// mailbox for which keep (when not nil) returns true, newest first. It
// reads the file backwards from its end, so that its cost does not grow
// with the mailbox's history, only with how far back it must go to find n
// messages to keep.
func (s *Store) Recent(ctx context.Context, name string, n int, keep func(*Message) bool) ([]Message, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	f, fi, err := s.openMailbox(ctx, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Message
	end := fi.Size()
	var tail []byte // the start of a line that began before the last chunk read
	const chunk = 64 << 10
	for end > 0 && len(out) < n {
		start := max(0, end-chunk)
		buf := make([]byte, end-start, end-start+int64(len(tail)))
		if _, err := f.ReadAt(buf, start); err != nil {
			return nil, err
		}
		buf = append(buf, tail...)
		// Every line but the first in buf is whole; the first is whole
		// only when the chunk starts the file.
		for len(out) < n {
			i := bytes.LastIndexByte(buf[:max(0, len(buf)-1)], '\n')
			if i < 0 {
				break
			}
			if m, ok := decodeMessage(buf[i+1:]); ok && (keep == nil || keep(&m)) {
				out = append(out, m)
			}
			buf = buf[:i+1]
		}
		tail = buf
		end = start
		if end == 0 && len(out) < n {
			if m, ok := decodeMessage(tail); ok && (keep == nil || keep(&m)) {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// decodeMessage decodes one mailbox line, with or without its newline.
// A line without an id or a sender is not a message.
func decodeMessage(line []byte) (Message, bool) {
	line = bytes.TrimRight(line, "\r\n")
	if isBlank(line) {
		return Message{}, false
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil || m.ID == "" || m.From == "" {
		return Message{}, false
	}
	return m, true
}
