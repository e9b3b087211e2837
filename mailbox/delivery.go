package mailbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// deliveryFile records how far each message got after it was stored: when
// a wake reached its recipient (notified) and when the recipient took it
// (read), one JSON object a line, appended. It sits beside the mailboxes,
// whose lines stay as the earlier tool writes and reads them; that tool
// ignores the file.
const deliveryFile = "delivery.jsonl"

// The states of a message after "stored", which its line in the mailbox
// says by itself.
const (
	Notified = "notified"
	Read     = "read"
)

// DeliveryEvent is one line of the delivery record.
type DeliveryEvent struct {
	ID    string    `json:"id"`
	To    string    `json:"to"`
	State string    `json:"state"`
	At    time.Time `json:"at"`
	// By says how a notice reached the recipient: "hook", "mailman",
	// "codex".
	By string `json:"by,omitempty"`
}

// Delivery is what the record says of one message.
type Delivery struct {
	NotifiedAt time.Time
	NotifiedBy string
	ReadAt     time.Time
}

// RecordDelivery appends ev to the record. Each line is written with one
// write to a file opened for appending, so lines of several processes
// never interleave.
func (s *Store) RecordDelivery(ev DeliveryEvent) error {
	if ev.At.IsZero() {
		ev.At = s.now()
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if err := realDir(filepath.Join(s.Root, dirName), true); err != nil {
		return err
	}
	f, _, err := OpenOwn(filepath.Join(s.Root, dirName, deliveryFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Deliveries returns what the record says of each message, by id: the
// first notice and the first read of each. Lines it cannot parse are
// skipped. A record that is not a regular file, or has another hard link,
// is refused as RecordDelivery refuses it.
func (s *Store) Deliveries() (map[string]Delivery, error) {
	f, _, err := OpenOwn(filepath.Join(s.Root, dirName, deliveryFile), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Delivery{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]Delivery{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		addDelivery(out, sc.Bytes())
	}
	return out, sc.Err()
}

// addDelivery adds what one line of the record says to m: the first
// notice and the first read of each message count. A line it cannot
// parse is skipped.
func addDelivery(m map[string]Delivery, line []byte) {
	var ev DeliveryEvent
	if json.Unmarshal(line, &ev) != nil || ev.ID == "" {
		return
	}
	d := m[ev.ID]
	switch {
	case ev.State == Notified && d.NotifiedAt.IsZero():
		d.NotifiedAt, d.NotifiedBy = ev.At, ev.By
	case ev.State == Read && d.ReadAt.IsZero():
		d.ReadAt = ev.At
	}
	m[ev.ID] = d
}

// deliveryCache is what a long-lived process (the web page's server) has
// read of the record so far: the file, how far into it, and what it said.
type deliveryCache struct {
	fi  fs.FileInfo
	off int64
	m   map[string]Delivery
}

// DeliveriesOf returns what the record says of the messages ids, as
// Deliveries does. The store keeps what it read, and reads only the lines
// appended since, so that a page of a long history does not parse the
// whole record each time; a record replaced or cut short is read again.
func (s *Store) DeliveriesOf(ids []string) (map[string]Delivery, error) {
	s.deliveryMu.Lock()
	defer s.deliveryMu.Unlock()
	f, fi, err := OpenOwn(filepath.Join(s.Root, dirName, deliveryFile), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		s.delivery = nil
		return map[string]Delivery{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := s.delivery
	if c == nil || !os.SameFile(c.fi, fi) || fi.Size() < c.off {
		c = &deliveryCache{m: map[string]Delivery{}}
	}
	if fi.Size() > c.off {
		buf := make([]byte, fi.Size()-c.off)
		n, err := f.ReadAt(buf, c.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		// Only whole lines: the last may be being written.
		whole := bytes.LastIndexByte(buf[:n], '\n') + 1
		for line := range bytes.Lines(buf[:whole]) {
			addDelivery(c.m, line)
		}
		c.off += int64(whole)
	}
	c.fi, s.delivery = fi, c
	out := make(map[string]Delivery, len(ids))
	for _, id := range ids {
		if d, ok := c.m[id]; ok {
			out[id] = d
		}
	}
	return out, nil
}
