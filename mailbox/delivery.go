package mailbox

import (
	"bufio"
	"encoding/json"
	"errors"
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
		var ev DeliveryEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.ID == "" {
			continue
		}
		d := out[ev.ID]
		switch {
		case ev.State == Notified && d.NotifiedAt.IsZero():
			d.NotifiedAt, d.NotifiedBy = ev.At, ev.By
		case ev.State == Read && d.ReadAt.IsZero():
			d.ReadAt = ev.At
		}
		out[ev.ID] = d
	}
	return out, sc.Err()
}
