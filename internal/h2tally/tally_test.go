package h2tally

import (
	"net"
	"testing"
)

// frame is one HTTP/2 frame's bytes: header and a payload of n zero bytes.
func frame(typ, flags byte, stream uint32, n int) []byte {
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags, byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
	return append(b, make([]byte, n)...)
}

func TestScan(t *testing.T) {
	var wire []byte
	wire = append(wire, frame(0x4, 0, 0, 12)...)    // SETTINGS
	wire = append(wire, frame(0x6, 0, 0, 8)...)     // PING
	wire = append(wire, frame(0x6, 0x1, 0, 8)...)   // PING ACK: not counted as a ping
	wire = append(wire, frame(0x8, 0, 0, 4)...)     // connection WINDOW_UPDATE
	wire = append(wire, frame(0x8, 0, 1, 4)...)     // stream WINDOW_UPDATE: not counted
	wire = append(wire, frame(0x0, 0, 1, 20000)...) // DATA larger than one read
	wire = append(wire, frame(0x6, 0, 0, 8)...)     // PING
	want := Counts{Frames: 7, Pings: 2, ConnWindowUpdates: 1}
	for _, tc := range []struct {
		name   string
		client bool
	}{{"server bytes", false}, {"client bytes after the preface", true}} {
		for _, chunk := range []int{1, 7, 9, 10, 4096, len(wire) + len(clientPreface)} {
			in := wire
			c := &Conn{}
			if tc.client {
				in = append([]byte(clientPreface), wire...)
				c.preface = len(clientPreface)
			}
			for len(in) > 0 {
				k := min(chunk, len(in))
				c.scan(in[:k])
				in = in[k:]
			}
			if got := c.Counts(); got != want {
				t.Errorf("%s in reads of %d: %+v, want %+v", tc.name, chunk, got, want)
			}
		}
	}
}

func TestConnReads(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := FromServer(a)
	go func() { _, _ = b.Write(append(frame(0x6, 0, 0, 8), frame(0x8, 0, 0, 4)...)) }()
	buf := make([]byte, 64)
	read := 0
	for read < 2*9+12 {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	before := Counts{}
	if got := c.Counts().Sub(before); got != (Counts{Frames: 2, Pings: 1, ConnWindowUpdates: 1}) {
		t.Errorf("got %+v", got)
	}
}
