package xds

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/controlplane/gen"
)

// frameTally counts the HTTP/2 frames a server sends on a client connection: PINGs the server
// starts (not ACKs of the client's) and connection-level WINDOW_UPDATEs.
type frameTally struct {
	net.Conn
	mu            sync.Mutex
	buf           []byte // the start of a frame header not yet complete
	skip          int    // payload bytes of the current frame still to pass over
	preface       bool   // the client's preface is the client's: the server sends none
	pings, update int
}

func (c *frameTally) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.scan(p[:n])
	c.mu.Unlock()
	return n, err
}

// scan walks server bytes frame by frame: a 9-byte header (length, type, flags, stream).
func (c *frameTally) scan(b []byte) {
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(c.skip, len(b))
			c.skip -= k
			b = b[k:]
			continue
		}
		k := min(9-len(c.buf), len(b))
		c.buf = append(c.buf, b[:k]...)
		b = b[k:]
		if len(c.buf) < 9 {
			return
		}
		length := int(c.buf[0])<<16 | int(c.buf[1])<<8 | int(c.buf[2])
		typ, flags := c.buf[3], c.buf[4]
		stream := binary.BigEndian.Uint32(c.buf[5:9]) & 0x7fffffff
		switch {
		case typ == 0x6 && flags&0x1 == 0:
			c.pings++
		case typ == 0x8 && stream == 0:
			c.update++
		}
		c.buf, c.skip = c.buf[:0], length
	}
}

func (c *frameTally) counts() (pings, updates int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pings, c.update
}

// TestServerStaticWindows: the ADS server's receive windows are fixed (ServerOptions), so it
// does not probe the bandwidth of what clients send: no PING and no connection WINDOW_UPDATE
// for each request it reads. grpc-go's default (BDP estimation) sent both after every ACK,
// and each client answered each PING: two segments more a response, and a read and a write
// more on both sides.
func TestServerStaticWindows(t *testing.T) {
	ts := startServer(t, testOptions())
	var tally *frameTally
	dialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		tally = &frameTally{Conn: c}
		return tally, nil
	})
	ts.push(topology(5, 1), true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""), dialer)
	c.send(gen.ClusterType, "", "", nil, "")
	c.ack(c.recv())
	c.barrier()
	// The connection's set-up (SETTINGS, the window raised above the default) is behind us.
	pings0, updates0 := tally.counts()
	const exchanges = 20
	for range exchanges {
		c.barrier()
	}
	pings, updates := tally.counts()
	pings, updates = pings-pings0, updates-updates0
	if pings != 0 || updates != 0 {
		t.Errorf("after %d request/response exchanges the server sent %d PINGs and %d connection WINDOW_UPDATEs, want none (fixed windows, no BDP probing)",
			exchanges, pings, updates)
	}
}

// TestServerStaticWindowsLargeRequest: a request larger than the server's receive window (a
// subscription naming tens of thousands of resources) still arrives: the server gives window
// back as it reads.
func TestServerStaticWindowsLargeRequest(t *testing.T) {
	ts := startServer(t, testOptions())
	ts.push(topology(5, 1), true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	const probeType = "type.googleapis.com/xdslab.test.Barrier"
	names := make([]string, 0, 50000)
	size := 0
	for i := 0; size <= 3*serverRecvWindow; i++ {
		n := fmt.Sprintf("outbound|8080||service-with-a-long-name-%06d.namespace.svc.cluster.local", i)
		names = append(names, n)
		size += len(n)
	}
	c.send(probeType, "", "", names, "")
	if r := c.recv(); r.TypeUrl != probeType {
		t.Fatalf("got %s, want the answer to the %d-byte request", r.TypeUrl, size)
	}
}
