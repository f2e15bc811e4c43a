package fleet

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// steadyPushAllocs is how many objects a fake Envoy may allocate per steady EDS push (the
// response read, applied, observed and matched, its ACK encoded and sent): the version and
// nonce it keeps as strings, one allocation for the two (they become its state and the
// requests' fields, and hooks may keep them).
const steadyPushAllocs = 1

// TestSteadyPushAllocations counts what a fake Envoy of a fleet (machine, observer and matcher,
// on the fleet's own transport) allocates per steady SotW EDS push: one assignment of a cluster
// it is subscribed to, with a new version and nonce, that other clients of the fleet received
// first (as most of a fleet's clients do: the memo of decoded resources has it), ACKed. The
// server is a hand-written HTTP/2 peer on 127.0.0.1 (h2Peer) that writes pre-encoded frames and
// reads the ACK into a buffer of its own, so that every allocation counted is the clients'.
// Each allocation was CPU of the harness in BenchmarkPushCPU (14 objects a push when this test
// came). The count is of the process (runtime.MemStats) around the measured client's exchange
// only: the two clients that read each push first (one decodes it, one proves the memo's run)
// have sent their ACKs, and finished with the push, before it starts.
func TestSteadyPushAllocations(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	mesh := newPushMesh(t, 10)
	const clients, warm, runs = 3, 20, 500
	pushes := make([]h2push, warm+runs)
	for k := range pushes {
		resp, _ := mesh.change(t, k)
		pushes[k] = h2push{data: dataFrames(grpcFrame(resp)),
			nonce: protowire.AppendString(protowire.AppendTag(nil, 5, protowire.BytesType), "n"+strconv.Itoa(k))}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := New(Config{
		Target: lis.Addr().String(),
		Groups: []Group{{Name: "sidecars", Count: clients, Identity: fakeenvoy.IdentityTemplate{Namespaces: 1},
			Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}},
		Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	peers := make([]*h2Peer, clients)
	for i := range peers {
		conn, err := lis.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		peers[i] = newH2Peer(t, conn)
		peers[i].serveInitial(mesh)
	}
	if got := f.Progress().FullConfig; got != clients {
		t.Fatalf("%d of %d clients hold a full config", got, clients)
	}

	exchange := func(p *h2Peer, k int) {
		p.write(pushes[k].data)
		if ack := p.next(); !bytes.Contains(ack, pushes[k].nonce) {
			t.Fatalf("push %d: the request after it does not carry its nonce", k)
		}
	}
	var total uint64
	var ms runtime.MemStats
	for k := range pushes {
		for _, p := range peers[1:] {
			exchange(p, k)
		}
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		exchange(peers[0], k)
		runtime.ReadMemStats(&ms)
		if k >= warm {
			total += ms.Mallocs - before
		}
	}
	if nacks := f.Progress().Nacks; nacks != 0 {
		t.Fatalf("%d NACKs of a valid mesh", nacks)
	}
	t.Logf("%.3f objects allocated per steady EDS push", float64(total)/runs)
	if raceEnabled {
		t.Skip("the race detector allocates: the count is not checked")
	}
	// Whole objects per push, as testing.AllocsPerRun counts them: an odd allocation of the
	// process's during the run (one or two in 500 pushes) is not a push's.
	if n := total / runs; n > steadyPushAllocs {
		t.Errorf("a steady EDS push allocates %d objects in the fake Envoy, want at most %d", n, steadyPushAllocs)
	}
}

// h2push is one pre-encoded push: its DATA frames, and its nonce as the ACK encodes it.
type h2push struct{ data, nonce []byte }

// HTTP/2 frame types and flags the peer uses (RFC 9113).
const (
	h2Data         = 0x0
	h2Headers      = 0x1
	h2Settings     = 0x4
	h2Ping         = 0x6
	h2WindowUpdate = 0x8
	h2FlagAck      = 0x1
	h2EndHeaders   = 0x4
)

// h2Frame appends an HTTP/2 frame to b.
func h2Frame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, payload...)
}

// grpcFrame is msg with gRPC's length prefix.
func grpcFrame(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
}

// dataFrames splits b into DATA frames of stream 1 of at most 16 KiB (the default largest
// frame).
func dataFrames(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		n := min(len(b), 16384)
		out = h2Frame(out, h2Data, 0, 1, b[:n])
		b = b[n:]
	}
	return out
}

// h2Peer is the server side of one HTTP/2 connection carrying one gRPC stream (1), written by
// hand so that it allocates nothing once set up: it reads frames and gathers stream 1's DATA
// into gRPC messages in buffers of its own, answers SETTINGS and PING, and writes what it is
// given. It gives the client windows it never exhausts, so it sends no WINDOW_UPDATE after the
// start. It is used by the test's goroutine only.
type h2Peer struct {
	t    *testing.T
	conn net.Conn
	head [9]byte
	in   []byte // the frame being read
	msgs []byte // stream 1's DATA not yet returned as messages, from read on
	read int    // where in msgs the next message starts (the one before is still the caller's)
	out  []byte // a frame being written
	enc  []byte // the response headers, encoded
}

func newH2Peer(t *testing.T, conn net.Conn) *h2Peer {
	p := &h2Peer{t: t, conn: conn, in: make([]byte, 0, 1<<16), msgs: make([]byte, 0, 1<<16), out: make([]byte, 0, 64)}
	preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if _, err := io.ReadFull(conn, preface); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"}} {
		if err := enc.WriteField(f); err != nil {
			t.Fatal(err)
		}
	}
	p.enc = hb.Bytes()
	// A stream window of 1 GiB and the largest connection window: enough for any test.
	settings := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0x4), 1<<30)
	b := h2Frame(nil, h2Settings, 0, 0, settings)
	b = h2Frame(b, h2WindowUpdate, 0, 0, binary.BigEndian.AppendUint32(nil, 1<<31-1-65535))
	p.write(b)
	return p
}

// serveInitial answers each type's first request with the mesh's response until the client
// ACKed all four.
func (p *h2Peer) serveInitial(mesh *pushMesh) {
	acked := map[string]bool{}
	for len(acked) < len(mesh.initial) {
		r := &discoveryv3.DiscoveryRequest{}
		if err := proto.Unmarshal(p.next(), r); err != nil {
			p.t.Fatal(err)
		}
		switch {
		case r.GetErrorDetail() != nil:
			p.t.Fatalf("NACK of the initial %s: %v", r.GetTypeUrl(), r.GetErrorDetail())
		case r.GetResponseNonce() == "":
			if b, ok := mesh.initial[r.GetTypeUrl()]; ok {
				p.write(dataFrames(grpcFrame(b)))
			}
		default:
			acked[r.GetTypeUrl()] = true
		}
	}
}

func (p *h2Peer) write(b []byte) {
	if _, err := p.conn.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// next returns stream 1's next gRPC message from the client (valid until the next call).
func (p *h2Peer) next() []byte {
	// The message returned last is no longer the caller's: what follows it moves to the front.
	p.msgs = append(p.msgs[:0], p.msgs[p.read:]...)
	p.read = 0
	for {
		if len(p.msgs) >= 5 {
			n := 5 + int(binary.BigEndian.Uint32(p.msgs[1:5]))
			if len(p.msgs) >= n {
				p.read = n
				return p.msgs[5:n:n]
			}
		}
		p.frame()
	}
}

// frame reads one frame and acts on it.
func (p *h2Peer) frame() {
	if _, err := io.ReadFull(p.conn, p.head[:]); err != nil {
		p.t.Fatal(err)
	}
	n := int(p.head[0])<<16 | int(p.head[1])<<8 | int(p.head[2])
	typ, flags := p.head[3], p.head[4]
	stream := binary.BigEndian.Uint32(p.head[5:]) & (1<<31 - 1)
	if n > cap(p.in) {
		p.in = make([]byte, n)
	}
	p.in = p.in[:n]
	if _, err := io.ReadFull(p.conn, p.in); err != nil {
		p.t.Fatal(err)
	}
	switch {
	case typ == h2Data && stream == 1:
		p.msgs = append(p.msgs, p.in...)
	case typ == h2Headers && stream == 1:
		p.out = h2Frame(p.out[:0], h2Headers, h2EndHeaders, 1, p.enc)
		p.write(p.out)
	case typ == h2Settings && flags&h2FlagAck == 0:
		p.out = h2Frame(p.out[:0], h2Settings, h2FlagAck, 0, nil)
		p.write(p.out)
	case typ == h2Ping && flags&h2FlagAck == 0:
		p.out = h2Frame(p.out[:0], h2Ping, h2FlagAck, 0, p.in)
		p.write(p.out)
	}
}
