package xds

import (
	"context"
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/internal/h2tally"
)

// TestServerStaticWindows: the ADS server's receive windows are fixed (ServerOptions), so it
// does not probe the bandwidth of what clients send: no PING and no connection WINDOW_UPDATE
// for each request it reads. grpc-go's default (BDP estimation) sent both after every ACK,
// and each client answered each PING: two segments more a response, and a read and a write
// more on both sides.
func TestServerStaticWindows(t *testing.T) {
	ts := startServer(t, testOptions())
	var tally *h2tally.Conn
	dialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		tally = h2tally.FromServer(c)
		return tally, nil
	})
	ts.push(topology(5, 1), true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""), dialer)
	c.send(gen.ClusterType, "", "", nil, "")
	c.ack(c.recv())
	c.barrier()
	// The connection's set-up (SETTINGS, the window raised above the default) is behind us.
	before := tally.Counts()
	const exchanges = 20
	for range exchanges {
		c.barrier()
	}
	if got := tally.Counts().Sub(before); got.Pings != 0 || got.ConnWindowUpdates != 0 {
		t.Errorf("after %d request/response exchanges the server sent %d PINGs and %d connection WINDOW_UPDATEs, want none (fixed windows, no BDP probing)",
			exchanges, got.Pings, got.ConnWindowUpdates)
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
