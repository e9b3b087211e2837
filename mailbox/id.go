package mailbox

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// newID returns a new message id: a UUID of version 7 (RFC 9562, 5.7) in
// its 36-character text form. The first 48 bits are the Unix time in
// milliseconds, the 12 after the version the fraction of that millisecond
// (RFC 9562, 6.2, method 3), kept strictly increasing within the process,
// and the last 62 random.
//
// It is written here rather than taken from github.com/google/uuid because
// that package imports net, whose initialisation (net/netip and unique)
// every run of agentmail paid for at start, a cost the MCP server's cold
// start shows. The tests check these ids with that package's parser.
func newID() string {
	ms, frac := idClock.next(time.Now())
	var u [16]byte
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | byte(frac>>8) // version 7
	u[7] = byte(frac)
	// crypto/rand.Read never fails: it crashes the program instead.
	rand.Read(u[8:])
	u[8] = 0x80 | u[8]&0x3f // variant 10
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// idClock hands out the time fields of new ids, each later than the last.
var idClock v7Clock

type v7Clock struct {
	mu   sync.Mutex
	last uint64 // ms<<12 | frac of the last id
}

// next returns the millisecond and the 12-bit fraction of it for an id
// made at t: t's own, or, when the clock has not moved past the last id
// (same fraction, or set back), the last one plus one step.
func (c *v7Clock) next(t time.Time) (ms, frac uint64) {
	ns := uint64(t.UnixNano())
	ms = ns / 1e6
	v := ms<<12 | (ns%1e6)<<12/1e6
	c.mu.Lock()
	if v <= c.last {
		v = c.last + 1
	}
	c.last = v
	c.mu.Unlock()
	return v >> 12, v & 0xfff
}
