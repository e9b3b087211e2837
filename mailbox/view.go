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
	ms, _, err := s.RecentBefore(ctx, name, -1, n, keep)
	return ms, err
}

// RecentBefore is Recent for the lines that end at or before the byte
// offset before (the whole file when before is negative or past its end),
// and also returns the offset at which each message's line starts: a page
// of a long history ends at a message, and the next page reads the lines
// before it. Lines are only ever appended to a mailbox, or flipped in
// place by a receive, so an offset stays valid until cleanup rewrites the
// file; one that no longer falls on a line's start reads from the end.
func (s *Store) RecentBefore(ctx context.Context, name string, before int64, n int, keep func(*Message) bool) ([]Message, []int64, error) {
	if err := ValidName(name); err != nil {
		return nil, nil, err
	}
	f, fi, err := s.openMailbox(ctx, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	end := fi.Size()
	if before >= 0 && before < end && !lineStart(f.File, before) {
		before = -1
	}
	if before >= 0 && before < end {
		end = before
	}
	var out []Message
	var offs []int64
	take := func(line []byte, at int64) {
		if m, ok := decodeMessage(line); ok && (keep == nil || keep(&m)) {
			out, offs = append(out, m), append(offs, at)
		}
	}
	var tail []byte // the start of a line that began before the last chunk read
	const chunk = 64 << 10
	for end > 0 && len(out) < n {
		start := max(0, end-chunk)
		buf := make([]byte, end-start, end-start+int64(len(tail)))
		if _, err := f.ReadAt(buf, start); err != nil {
			return nil, nil, err
		}
		buf = append(buf, tail...)
		// Every line but the first in buf is whole; the first is whole
		// only when the chunk starts the file.
		for len(out) < n {
			i := bytes.LastIndexByte(buf[:max(0, len(buf)-1)], '\n')
			if i < 0 {
				break
			}
			take(buf[i+1:], start+int64(i+1))
			buf = buf[:i+1]
		}
		tail = buf
		end = start
		if end == 0 && len(out) < n {
			take(tail, 0)
		}
	}
	return out, offs, nil
}

// lineStart reports whether off, inside f, is where a line starts: just
// after a newline.
func lineStart(f *os.File, off int64) bool {
	if off == 0 {
		return true
	}
	var b [1]byte
	_, err := f.ReadAt(b[:], off-1)
	return err == nil && b[0] == '\n'
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
