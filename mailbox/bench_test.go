package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// reportP50 adds the median of the measured durations as "p50-ns" (the
// latency target is stated as a median).
func reportP50(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns")
}

// receiveFixture writes a mailbox of stored messages for bob: the first
// ones read (flipped the way Receive flips them), the last unread ones
// unread. It returns the offset of the first unread line and the cursor a
// Receive would have left there.
func receiveFixture(b *testing.B, s *Store, stored, unread int) (int64, cursor) {
	var buf bytes.Buffer
	var unreadAt int64
	var last []byte
	created := time.Now()
	body := strings.Repeat("lorem ipsum ", 8)
	for i := range stored {
		if i == stored-unread {
			unreadAt = int64(buf.Len())
		}
		m := Message{ID: uuid.Must(uuid.NewV7()).String(), From: "alice", To: "bob", Message: fmt.Sprintf("%d %s", i, body), CreatedAt: created}
		line, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		if i < stored-unread {
			line = bytes.Replace(line, []byte(`"read_flag":false`), []byte(`"read_flag":true `), 1)
			last = append(line[:len(line):len(line)], '\n')
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := writeMailbox(b, s, "bob", buf.String())
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	c := cursor{Ino: fileID(fi)}
	if last != nil {
		c = c.advance(last, unreadAt-int64(len(last)))
	}
	return unreadAt, c
}

// BenchmarkReceive measures one receive from a mailbox that holds many read
// messages followed by unread ones; its cost should not depend on the
// number of read messages.
func BenchmarkReceive(b *testing.B) {
	for _, stored := range []int{100, 10_000, 100_000} {
		// The fixture is built once per size; reset restores it between
		// the runs of the sub-benchmark.
		s := New(b.TempDir())
		unread := min(stored/2, 1000)
		unreadAt, c := receiveFixture(b, s, stored, unread)
		f, err := os.OpenFile(s.MailboxPath("bob"), os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		region := make([]byte, fi.Size()-unreadAt)
		if _, err := f.ReadAt(region, unreadAt); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			// reset marks the unread messages unread again, with the
			// cursor just before them.
			reset := func() {
				if _, err := f.WriteAt(region, unreadAt); err != nil {
					b.Fatal(err)
				}
				if err := s.saveCursor("bob", c); err != nil {
					b.Fatal(err)
				}
			}
			reset()
			left := unread
			durs := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				if left == 0 {
					b.StopTimer()
					reset()
					left = unread
					b.StartTimer()
				}
				t0 := time.Now()
				m, err := s.Receive(context.Background(), "bob", nil)
				durs = append(durs, time.Since(t0))
				if err != nil || m == nil {
					b.Fatalf("Receive = %v, %v", m, err)
				}
				left--
			}
			b.StopTimer()
			reportP50(b, durs)
		})
	}
}

// BenchmarkReceiveWithoutCursor measures the fallback: a receive that must
// scan every read message because the cursor no longer matches the file (as
// after the earlier tool rewrote the mailbox). It happens once per such
// rewrite.
func BenchmarkReceiveWithoutCursor(b *testing.B) {
	for _, stored := range []int{100, 10_000, 100_000} {
		s := New(b.TempDir())
		unreadAt, _ := receiveFixture(b, s, stored, 1)
		f, err := os.OpenFile(s.MailboxPath("bob"), os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		lastLine := strings.TrimSuffix(readFile(b, s.MailboxPath("bob"))[unreadAt:], "\n")
		_, _, flagOff, err := classifyLine([]byte(lastLine))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if _, err := f.WriteAt([]byte("false"), unreadAt+int64(flagOff)); err != nil {
					b.Fatal(err)
				}
				if err := s.saveCursor("bob", cursor{Off: 1, LastLen: 1}); err != nil { // A stale cursor.
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				m, err := s.Receive(context.Background(), "bob", nil)
				durs = append(durs, time.Since(t0))
				if err != nil || m == nil {
					b.Fatalf("Receive = %v, %v", m, err)
				}
			}
			b.StopTimer()
			reportP50(b, durs)
		})
	}
}

// BenchmarkAppend measures a send: lock, one write, fdatasync.
func BenchmarkAppend(b *testing.B) {
	s := New(b.TempDir())
	body := strings.Repeat("lorem ipsum ", 8)
	if _, err := s.Append(context.Background(), "alice", "bob", body); err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := s.Append(context.Background(), "alice", "bob", body); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	reportP50(b, durs)
}

// BenchmarkSyncCost measures what fdatasync adds to an append-sized write
// on the file system of the temporary directory, the number behind the
// choice to sync every append.
func BenchmarkSyncCost(b *testing.B) {
	line := []byte(strings.Repeat("x", 250) + "\n")
	for _, sync := range []bool{false, true} {
		name := "write"
		if sync {
			name = "write+fdatasync"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			durs := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				if _, err := f.Write(line); err != nil {
					b.Fatal(err)
				}
				if sync {
					if err := fdatasync(f); err != nil {
						b.Fatal(err)
					}
				}
				durs = append(durs, time.Since(t0))
			}
			reportP50(b, durs)
		})
	}
}

// BenchmarkSetStatus measures a status change with ten agents' entries in
// recipients.jsonl: both locks, the read, and the synced replacement.
func BenchmarkSetStatus(b *testing.B) {
	s := New(b.TempDir())
	for i := range 10 {
		if err := s.SetStatus(context.Background(), fmt.Sprintf("agent%d", i), StatusReady, "%1"); err != nil {
			b.Fatal(err)
		}
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		status := StatusWork
		if i%2 == 0 {
			status = StatusReady
		}
		t0 := time.Now()
		if err := s.SetStatus(context.Background(), "agent3", status, "%1"); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	reportP50(b, durs)
}

// BenchmarkHasUnreadWithoutCursorFile measures what the mailman pays, pass
// after pass, to learn whether an agent has mail when the agent has no
// cursor file (its mailbox was written by the earlier tool, say): the
// first count reads the whole file, the ones after it start where the
// unread mail does (see Store.hints).
func BenchmarkHasUnreadWithoutCursorFile(b *testing.B) {
	for _, stored := range []int{100, 10_000, 100_000} {
		s := New(b.TempDir())
		receiveFixture(b, s, stored, 1)
		if err := os.Remove(s.cursorPath("bob")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				ok, err := s.HasUnread(context.Background(), "bob")
				durs = append(durs, time.Since(t0))
				if err != nil || !ok {
					b.Fatalf("HasUnread = %v, %v", ok, err)
				}
			}
			reportP50(b, durs)
		})
	}
}
