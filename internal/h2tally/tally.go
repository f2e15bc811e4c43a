package h2tally

import (
	"encoding/binary"
	"net"
	"sync"
)

// clientPreface is what a client writes before its first frame (RFC 9113 §3.4).
const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Conn is a net.Conn whose reads are tallied frame by frame.
type Conn struct {
	net.Conn

	mu      sync.Mutex
	preface int    // bytes of the client preface still to pass over
	hdr     []byte // the start of a frame header not yet complete
	skip    int    // payload bytes of the current frame still to pass over
	pings   int    // PING frames without the ACK flag
	updates int    // WINDOW_UPDATE frames on stream 0
	frames  int
}

// FromServer tallies what a server sends: c is the client's end.
func FromServer(c net.Conn) *Conn { return &Conn{Conn: c} }

// FromClient tallies what a client sends, after its preface: c is the server's end.
func FromClient(c net.Conn) *Conn { return &Conn{Conn: c, preface: len(clientPreface)} }

// Read reads from the connection and tallies what it read.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.scan(p[:n])
	c.mu.Unlock()
	return n, err
}

// scan walks the bytes frame by frame: a 9-byte header (length, type, flags, stream id), then
// the payload.
func (c *Conn) scan(b []byte) {
	for len(b) > 0 {
		switch {
		case c.preface > 0:
			k := min(c.preface, len(b))
			c.preface -= k
			b = b[k:]
			continue
		case c.skip > 0:
			k := min(c.skip, len(b))
			c.skip -= k
			b = b[k:]
			continue
		}
		k := min(9-len(c.hdr), len(b))
		c.hdr = append(c.hdr, b[:k]...)
		b = b[k:]
		if len(c.hdr) < 9 {
			return
		}
		length := int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		typ, flags := c.hdr[3], c.hdr[4]
		stream := binary.BigEndian.Uint32(c.hdr[5:9]) & 0x7fffffff
		c.frames++
		switch {
		case typ == 0x6 && flags&0x1 == 0:
			c.pings++
		case typ == 0x8 && stream == 0:
			c.updates++
		}
		c.hdr, c.skip = c.hdr[:0], length
	}
}

// Counts is what a Conn has tallied so far.
type Counts struct {
	Frames int // every frame
	Pings  int // PINGs the sender started (not ACKs of the other side's)
	// ConnWindowUpdates are WINDOW_UPDATE frames for the whole connection (stream 0).
	ConnWindowUpdates int
}

// Counts returns the tally so far.
func (c *Conn) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Counts{Frames: c.frames, Pings: c.pings, ConnWindowUpdates: c.updates}
}

// Sub returns the frames counted in a and not in b (a later tally minus an earlier one).
func (a Counts) Sub(b Counts) Counts {
	return Counts{Frames: a.Frames - b.Frames, Pings: a.Pings - b.Pings, ConnWindowUpdates: a.ConnWindowUpdates - b.ConnWindowUpdates}
}
