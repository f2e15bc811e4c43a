package h2client

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/internal/h2tally"
)

// gateWriter blocks a write of DATA once gate is set, until release is closed.
type gateWriter struct {
	blockData atomic.Bool
	blocked   chan struct{}
	release   chan struct{}
	once      sync.Once
}

func (w *gateWriter) Write(b []byte) (int, error) {
	if w.blockData.Load() && len(b) >= frameHeaderLen && b[3] == frameData {
		w.once.Do(func() { close(w.blocked) })
		<-w.release
	}
	return len(b), nil
}

// chanSource serves the bytes sent on in, one send per read.
type chanSource struct{ in chan []byte }

func (s chanSource) recv(into receiver) (int, time.Time, error) {
	b, ok := <-s.in
	if !ok {
		return 0, time.Time{}, errEOF
	}
	return copy(into.buffer(), b), time.Time{}, nil
}

func testTransport(t *testing.T, w io.Writer, src source) (*Conn, *transport) {
	t.Helper()
	c := &Conn{cfg: Config{Target: "127.0.0.1:1"}.withDefaults()}
	tr := newTransport(&c.cfg, nil, src)
	tr.w = w
	return c, tr
}

// TestQueuedSendWhileStreamEnds: a request above the window is queued; while its first chunk is
// being written the server resets the stream. The send ends (nil or io.EOF), never panics.
func TestQueuedSendWhileStreamEnds(t *testing.T) {
	w := &gateWriter{blocked: make(chan struct{}), release: make(chan struct{})}
	in := make(chan []byte, 4)
	c, tr := testTransport(t, w, chanSource{in})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := tr.open(ctx, c, encoding.GetCodecV2("proto"), "/m")
	if err != nil {
		t.Fatal(err)
	}
	w.blockData.Store(true)
	sent := make(chan error, 1)
	go func() {
		sent <- s.SendMsg(&discoveryv3.DiscoveryRequest{VersionInfo: string(make([]byte, 200000))})
	}()
	<-w.blocked
	rst := appendRSTStream(nil, s.id, errCodeCancel)
	in <- rst
	if err := s.RecvMsg(&discoveryv3.DiscoveryResponse{}); status.Code(err) != codes.Canceled {
		t.Fatalf("RecvMsg after the server's reset: %v", err)
	}
	close(w.release)
	if err := <-sent; err != nil && err != io.EOF {
		t.Fatalf("SendMsg: %v", err)
	}
	close(in)
}

// TestHeaderTableSizeWhileSending: SETTINGS with HEADER_TABLE_SIZE read while another goroutine
// sends must not deadlock (the settings take wmu after mu is released).
func TestHeaderTableSizeWhileSending(t *testing.T) {
	in := make(chan []byte, 1)
	c, tr := testTransport(t, io.Discard, chanSource{in})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := tr.open(ctx, c, encoding.GetCodecV2("proto"), "/m")
	if err != nil {
		t.Fatal(err)
	}
	settings := make([]byte, 6)
	binary.BigEndian.PutUint16(settings, settingHeaderTableSize)
	binary.BigEndian.PutUint32(settings[2:], 1024)
	frameBytes := frame(frameSettings, 0, 0, settings)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20000 {
			in <- frameBytes
		}
		close(in)
	}()
	sender := make(chan struct{})
	go func() {
		defer close(sender)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			_ = s.SendMsg(&discoveryv3.DiscoveryRequest{VersionInfo: fmt.Sprint(i)})
		}
	}()
	watchdog := time.AfterFunc(2*time.Minute, func() { panic("deadlock: settings and sends still blocked after 2 minutes") })
	defer watchdog.Stop()
	_ = s.RecvMsg(&discoveryv3.DiscoveryResponse{}) // reads every SETTINGS, then EOF
	<-sender
}

// TestSmallWindow: a receive window of the protocol's default sends no zero window update.
func TestSmallWindow(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	c, codec := newConn(t, Config{Target: srv.addr, Window: defaultWindow})
	s, err := openADS(context.Background(), c, codec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(req("v", 200000, 0)); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recv(); err != nil || len(r.GetResources()[0].GetValue()) != 200000 {
		t.Fatalf("%v", err)
	}
}

// TestReopenRightAfterCancel opens the next stream as soon as the last one's context is
// cancelled, while its Recv may still be reading: the new stream gets its own responses.
func TestReopenRightAfterCancel(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	c, codec := newConn(t, Config{Target: srv.addr})
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := openADS(ctx, c, codec)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		echo(t, s, fmt.Sprint(i))
		old := make(chan error, 1)
		go func() {
			_, err := s.Recv()
			old <- err
		}()
		cancel()
		if err := <-old; status.Code(err) != codes.Canceled {
			t.Fatalf("stream %d: Recv after cancel: %v", i, err)
		}
	}
	// And without waiting for the cancelled Recv to return first.
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := openADS(ctx, c, codec)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		old := make(chan error, 1)
		go func() {
			_, err := s.Recv()
			old <- err
		}()
		cancel()
		next, err := openADS(context.Background(), c, codec)
		if err != nil {
			t.Fatalf("stream %d: the next stream right after cancel: %v", i, err)
		}
		echo(t, next, "next")
		if err := <-old; status.Code(err) != codes.Canceled {
			t.Fatalf("stream %d: the cancelled Recv: %v", i, err)
		}
		if err := next.Send(req("end", 0, 0)); err != nil {
			t.Fatal(err)
		}
		if err := next.CloseSend(); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := next.Recv(); err != nil {
				break
			}
		}
	}
}

// countingPool counts the buffers of 32 KiB and more out of the pool.
type countingPool struct {
	*Pool
	big atomic.Int64
}

func (p *countingPool) Get(n int) *[]byte {
	b := p.Pool.Get(n)
	if cap(*b) >= 32<<10 {
		p.big.Add(1)
	}
	return b
}

func (p *countingPool) Put(b *[]byte) {
	if cap(*b) >= 32<<10 {
		p.big.Add(-1)
	}
	p.Pool.Put(b)
}

// TestNoBufferHeldBetweenReads: once a message is delivered, and once the stream ended, the
// transport holds no receive buffer.
func TestNoBufferHeldBetweenReads(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	pool := &countingPool{Pool: NewPool()}
	c, codec := newConn(t, Config{Target: srv.addr, Pool: pool})
	s, err := openADS(context.Background(), c, codec)
	if err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{10, 100000, 10} {
		if err := s.Send(req(fmt.Sprint(i), size, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		if n := pool.big.Load(); n != 0 {
			t.Errorf("after message %d: %d receive buffers held", i, n)
		}
	}
	if err := s.Send(&discoveryv3.DiscoveryRequest{TypeUrl: "end", VersionInfo: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Fatal(err)
	}
	if n := pool.big.Load(); n != 0 {
		t.Errorf("after the stream ended: %d receive buffers held", n)
	}
}

// TestQueuedRequestsInOrder sends requests of 200 KB back to back, each above the server's
// window, so that each is appended to a queue that still holds the last: the server reads
// every one whole and in order.
func TestQueuedRequestsInOrder(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	c, codec := newConn(t, Config{Target: srv.addr})
	s, err := openADS(context.Background(), c, codec)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	for i := range n {
		if err := s.Send(req(fmt.Sprint(i), 10, 3000+i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		r, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetVersionInfo() != fmt.Sprint(i) || r.GetNonce() != fmt.Sprint(3000+i) {
			t.Fatalf("response %d: version %q, names %q; want %d, %d", i, r.GetVersionInfo(), r.GetNonce(), i, 3000+i)
		}
	}
}

// TestReadSize: the receive buffer grows with what is left of a large message, frame headers
// included, up to maxReadBuffer, and is the configured size otherwise.
func TestReadSize(t *testing.T) {
	cfg := Config{ReadBufferSize: DefaultReadBufferSize}
	for _, c := range []struct{ gather, want int }{
		{0, DefaultReadBufferSize},
		{1000, DefaultReadBufferSize},
		{DefaultReadBufferSize, DefaultReadBufferSize},
		{100000, 100000 + 7*frameHeaderLen},
		{5 << 20, maxReadBuffer},
	} {
		tr := &transport{cfg: &cfg, gather: c.gather}
		if got := tr.readSize(); got != c.want {
			t.Errorf("gather %d: read size %d, want %d", c.gather, got, c.want)
		}
	}
}

// scribblePool records the buffers given back and overwrites them, so that a byte sent after
// its buffer was given back shows.
type scribblePool struct {
	mu  sync.Mutex
	put int
}

func (p *scribblePool) Get(n int) *[]byte { b := make([]byte, n); return &b }

func (p *scribblePool) Put(b *[]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put++
	for i := range *b {
		(*b)[i] = 0xff
	}
}

// chunkCodec marshals a message as its bytes in three pooled buffers.
type chunkCodec struct{ pool *scribblePool }

func (c chunkCodec) Marshal(v any) (mem.BufferSlice, error) {
	b := v.([]byte)
	var out mem.BufferSlice
	for _, part := range [][]byte{b[:len(b)/3], b[len(b)/3 : 2*len(b)/3], b[2*len(b)/3:]} {
		buf := c.pool.Get(len(part))
		copy(*buf, part)
		out = append(out, mem.NewBuffer(buf, c.pool))
	}
	return out, nil
}

func (chunkCodec) Unmarshal(mem.BufferSlice, any) error { return nil }
func (chunkCodec) Name() string                         { return "chunk" }

// dataWriter keeps the payloads of the DATA frames written.
type dataWriter struct {
	mu   sync.Mutex
	data []byte
}

func (w *dataWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := b; len(p) >= frameHeaderLen; {
		n := int(p[0])<<16 | int(p[1])<<8 | int(p[2])
		if p[3] == frameData {
			w.data = append(w.data, p[frameHeaderLen:frameHeaderLen+n]...)
		}
		p = p[frameHeaderLen+n:]
	}
	return len(b), nil
}

// TestQueueRefersToBuffers: messages above the send window wait in the queue as the codec's
// buffers, not copies of them; each buffer goes back to its pool once its bytes are written, not
// before (the pool overwrites what it gets back), and the bytes go out whole and in order.
func TestQueueRefersToBuffers(t *testing.T) {
	w := &dataWriter{}
	in := make(chan []byte)
	defer close(in)
	c, tr := testTransport(t, w, chanSource{in})
	pool := &scribblePool{}
	s, err := tr.open(context.Background(), c, chunkCodec{pool}, "/m")
	if err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	tr.connSendWin, s.sendWin = 1000, 1000
	tr.mu.Unlock()
	var want []byte
	for i := range 3 {
		msg := make([]byte, 3300+i) // thirds above gRPC's pooling threshold (1 KiB)
		for j := range msg {
			msg[j] = byte(i*7 + j)
		}
		if err := s.SendMsg(msg); err != nil {
			t.Fatal(err)
		}
		want = binary.BigEndian.AppendUint32(append(want, 0), uint32(len(msg)))
		want = append(want, msg...)
	}
	if tr.mu.Lock(); s.sendN != len(want)-1000 {
		t.Fatalf("queued %d bytes, want %d", s.sendN, len(want)-1000)
	}
	tr.mu.Unlock()
	for sent := 1000; sent < len(want); sent += 2500 {
		tr.mu.Lock()
		tr.connSendWin, s.sendWin = 2500, 2500
		tr.mu.Unlock()
		if err := s.flushQueued(); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if string(w.data) != string(want) {
		t.Fatalf("sent %d bytes that differ from the %d of the messages", len(w.data), len(want))
	}
	if pool.put != 9 || s.sendN != 0 || len(s.sendq) != 0 {
		t.Fatalf("%d buffers given back (want 9), %d bytes and %d messages still queued", pool.put, s.sendN, len(s.sendq))
	}
}

// ledgerPool hands out fresh buffers, counts those out, fails on a buffer given back twice and
// overwrites what it gets back, so that a piece read after its buffer went back shows.
type ledgerPool struct {
	t      *testing.T
	out    map[*[]byte]bool
	maxOut int // the most buffers out at once
}

func (p *ledgerPool) Get(n int) *[]byte {
	b := make([]byte, n)
	p.out[&b] = true
	p.maxOut = max(p.maxOut, len(p.out))
	return &b
}

func (p *ledgerPool) Put(b *[]byte) {
	if !p.out[b] {
		p.t.Errorf("a buffer of %d bytes given back that is not out", cap(*b))
	}
	delete(p.out, b)
	for i := range *b {
		(*b)[i] = 0xff
	}
}

// wantCodec checks each message against the next expected one while the codec holds it, and
// counts those delivered in more than one piece.
type wantCodec struct {
	t      *testing.T
	want   [][]byte
	pieces int
}

func (c *wantCodec) Marshal(any) (mem.BufferSlice, error) { return nil, nil }
func (c *wantCodec) Name() string                         { return "want" }
func (c *wantCodec) Unmarshal(data mem.BufferSlice, _ any) error {
	if len(c.want) == 0 {
		c.t.Fatal("a message beyond those sent")
	}
	if len(data) > 1 {
		c.pieces++
	}
	if got := data.Materialize(); !bytes.Equal(got, c.want[0]) {
		c.t.Errorf("message of %d bytes delivered as %d bytes in %d pieces that differ", len(c.want[0]), len(got), len(data))
	}
	c.want = c.want[1:]
	return nil
}

// TestGatheredInPlace: a message longer than its DATA frame reaches the codec as the frames'
// pieces, where they were read, through reads of every size. Each piece is intact while the
// codec reads it (the pool overwrites a buffer given back), and every receive buffer is back in
// the pool once the stream has ended.
func TestGatheredInPlace(t *testing.T) {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	sizes := []int{10, 40000, 5, 100000, 16379, 16380, 300000, 0, 1, 70000, 3}
	var msgs [][]byte
	var stream []byte // every message framed as gRPC does, back to back
	for i, n := range sizes {
		m := make([]byte, n)
		for j := range m {
			m[j] = byte(i*31 + j*7)
		}
		msgs = append(msgs, m)
		stream = append(stream, grpcMessage(m)...)
	}
	wire := bytes.Join([][]byte{
		frame(frameSettings, 0, 0, nil),
		frame(frameHeaders, flagEndHeaders, 1, headerBlock(enc, &buf, ":status", "200", "content-type", "application/grpc")),
	}, nil)
	// DATA frames of uneven sizes, so that messages start and end inside frames.
	for i, cut := 0, 0; len(stream) > 0; i++ {
		cut = min(len(stream), []int{16384, 1, 9000, 16384, 5, 12345}[i%6])
		wire = append(wire, frame(frameData, 0, 1, stream[:cut])...)
		stream = stream[cut:]
	}
	wire = append(wire, frame(frameHeaders, flagEndHeaders|flagEndStream, 1, headerBlock(enc, &buf, "grpc-status", "0"))...)
	for _, chunk := range []int{7, 1000, 16393, 70000, len(wire)} {
		pool := &ledgerPool{t: t, out: map[*[]byte]bool{}}
		c := &Conn{cfg: Config{Target: "127.0.0.1:1", Pool: pool}.withDefaults()}
		tr := newTransport(&c.cfg, nil, &sliceSource{b: wire, chunk: chunk})
		tr.w = io.Discard
		codec := &wantCodec{t: t, want: msgs}
		s, err := tr.open(context.Background(), c, codec, "/m")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ; ; n++ {
			if err := s.RecvMsg(nil); err != nil {
				if err != io.EOF {
					t.Errorf("reads of %d: the stream ended with %v", chunk, err)
				}
				break
			}
		}
		if n != len(msgs) || codec.pieces == 0 {
			t.Errorf("reads of %d: %d messages, %d in pieces; want %d, some in pieces", chunk, n, codec.pieces, len(msgs))
		}
		if len(pool.out) != 0 {
			t.Errorf("reads of %d: %d receive buffers not given back", chunk, len(pool.out))
		}
	}
}

// tricklingSource serves wire one frame at a time, finding the socket empty (idle) before each
// read, as a client does that reads faster than the server writes.
type tricklingSource struct{ b []byte }

func (s *tricklingSource) recv(into receiver) (int, time.Time, error) {
	if len(s.b) == 0 {
		return 0, time.Time{}, errEOF
	}
	into.idle()
	b := into.buffer()
	n := copy(b[:min(len(b), frameHeaderLen+parseFrameHeader(s.b).length)], s.b)
	s.b = s.b[n:]
	return n, time.Unix(1e9, 0), nil
}

// TestGatheredTrickle: a message of a MB read a frame at a time, with the socket empty between
// reads, keeps reading into the receive buffer its pieces lie in while it has room: a few
// buffers, not one per read.
func TestGatheredTrickle(t *testing.T) {
	msg := patterned(1<<20, 0)
	wire := serverWire([][]byte{msg}, maxFrameSize)
	pool := &ledgerPool{t: t, out: map[*[]byte]bool{}}
	c := &Conn{cfg: Config{Target: "127.0.0.1:1", Pool: pool}.withDefaults()}
	tr := newTransport(&c.cfg, nil, &tricklingSource{b: wire})
	tr.w = io.Discard
	codec := &wantCodec{t: t, want: [][]byte{msg}}
	s, err := tr.open(context.Background(), c, codec, "/m")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(nil); err != io.EOF {
		t.Fatalf("the stream ended with %v, want io.EOF", err)
	}
	// 1 MiB in buffers of up to maxReadBuffer, each replaced when a frame no longer fits, the
	// first one of the configured size, and the one the trailers are read into.
	if limit := (1<<20)/(maxReadBuffer-frameHeaderLen-maxFrameSize) + 3; pool.maxOut > limit {
		t.Errorf("the message held %d receive buffers at once, want at most %d", pool.maxOut, limit)
	}
	if len(pool.out) != 0 {
		t.Errorf("%d receive buffers not given back", len(pool.out))
	}
}

// tallyListener hands out each accepted connection tallied (the frames its client sends).
type tallyListener struct {
	net.Listener
	conns chan *h2tally.Conn
}

func (l tallyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := h2tally.FromClient(c)
	l.conns <- tc
	return tc, nil
}

// tallyServer serves echoADS with opts on a loopback port of its own until the test ends: its
// address, and each connection it accepts, tallied (the frames its client sends).
func tallyServer(t *testing.T, opts ...grpc.ServerOption) (string, <-chan *h2tally.Conn) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := tallyListener{Listener: lis, conns: make(chan *h2tally.Conn, 1)}
	srv := grpc.NewServer(opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, &echoADS{})
	go srv.Serve(tl)
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), tl.conns
}

// TestWindowUpdateEvery: the client gives its windows back in steps of Config.WindowUpdate
// (istio-agent's grpc-go connection: a quarter of a 1 MiB window), or of half the window by
// default (Envoy's codec): 3 MiB received through 1 MiB windows take 12 connection
// WINDOW_UPDATEs at a quarter and 6 at half, beside the one that opens the connection window.
func TestWindowUpdateEvery(t *testing.T) {
	for _, tc := range []struct {
		name         string
		window, step uint32
		want         int
	}{
		{"quarter", 1 << 20, 1 << 18, 1 + 12},
		{"half (default)", 1 << 20, 0, 1 + 6},
		{"Envoy's 256 MiB", 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, conns := tallyServer(t)
			c, codec := newConn(t, Config{Target: addr, Window: tc.window, WindowUpdate: tc.step})
			s, err := openADS(context.Background(), c, codec)
			if err != nil {
				t.Fatal(err)
			}
			const size = 3 << 20
			if err := s.Send(req("v", size, 0)); err != nil {
				t.Fatal(err)
			}
			if r, err := s.Recv(); err != nil || len(r.GetResources()[0].GetValue()) != size {
				t.Fatalf("the 3 MiB response: %v", err)
			}
			// One more exchange: once its response is back, the server has read every frame
			// the client sent before its request, the last WINDOW_UPDATE included.
			echo(t, s, "after")
			if got := (<-conns).Counts().ConnWindowUpdates; got != tc.want {
				t.Errorf("connection WINDOW_UPDATEs for 3 MiB: %d, want %d", got, tc.want)
			}
		})
	}
}

// TestKeepalive: with Config.KeepaliveTime a connection that reads nothing pings the server
// (grpc-go's client keepalive, istio-agent's), and fails once a PING goes unanswered for
// KeepaliveTimeout; without it, an idle connection sends no PING.
func TestKeepalive(t *testing.T) {
	for _, tc := range []struct {
		name string
		time time.Duration
	}{{"on", 20 * time.Millisecond}, {"off", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, conns := tallyServer(t, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Millisecond}))
			c, codec := newConn(t, Config{Target: addr, KeepaliveTime: tc.time, KeepaliveTimeout: tc.time})
			s, err := openADS(context.Background(), c, codec)
			if err != nil {
				t.Fatal(err)
			}
			echo(t, s, "v")
			tc0 := <-conns
			if tc.time == 0 {
				time.Sleep(100 * time.Millisecond)
				echo(t, s, "w") // the server has read every frame sent before
				if n := tc0.Counts().Pings; n != 0 {
					t.Errorf("an idle connection without keepalive sent %d PINGs", n)
				}
				return
			}
			// The stream waits for a response, as a fake Envoy does between pushes: its
			// receiver reads the PINGs' ACKs.
			recvErr := make(chan error, 1)
			go func() {
				_, err := s.Recv()
				recvErr <- err
			}()
			deadline := time.Now().Add(time.Minute)
			for tc0.Counts().Pings < 3 {
				if time.Now().After(deadline) {
					t.Fatalf("%d keepalive PINGs in a minute of idleness, want 3", tc0.Counts().Pings)
				}
				select {
				case err := <-recvErr:
					t.Fatalf("the idle stream ended: %v", err)
				case <-time.After(5 * time.Millisecond):
				}
			}
			if err := s.Send(req("w", 10, 0)); err != nil { // answered PINGs kept the connection up
				t.Fatal(err)
			}
			if err := <-recvErr; err != nil {
				t.Fatalf("the response after the PINGs: %v", err)
			}
		})
	}
	t.Run("answered, receiver busy", func(t *testing.T) {
		// Nobody reads (a scripted ACK delay holds the receiver): the PING's ACK waits in the
		// socket, which counts as the server's answer, so the connection stays up.
		addr, conns := tallyServer(t, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Millisecond}))
		c, codec := newConn(t, Config{Target: addr, KeepaliveTime: 10 * time.Millisecond, KeepaliveTimeout: 100 * time.Millisecond})
		s, err := openADS(context.Background(), c, codec)
		if err != nil {
			t.Fatal(err)
		}
		echo(t, s, "v")
		tc0 := <-conns
		deadline := time.Now().Add(time.Minute)
		for tc0.Counts().Pings < 1 {
			if time.Now().After(deadline) {
				t.Fatal("no keepalive PING in a minute of idleness")
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // several timeouts' worth, nobody reading
		echo(t, s, "w")
	})
	t.Run("no stream", func(t *testing.T) {
		// A connection whose stream ended does not ping (grpc-go's client goes dormant; a
		// server counts PINGs without a stream against its policy).
		addr, conns := tallyServer(t, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Millisecond, PermitWithoutStream: true}))
		c, codec := newConn(t, Config{Target: addr, KeepaliveTime: 10 * time.Millisecond, KeepaliveTimeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		s, err := openADS(ctx, c, codec)
		if err != nil {
			t.Fatal(err)
		}
		echo(t, s, "v")
		tc0 := <-conns
		cancel()
		if _, err := s.Recv(); status.Code(err) != codes.Canceled {
			t.Fatalf("Recv after cancel: %v", err)
		}
		before := tc0.Counts().Pings
		time.Sleep(100 * time.Millisecond) // ten keepalive periods without a stream
		s2, err := openADS(context.Background(), c, codec)
		if err != nil {
			t.Fatal(err)
		}
		echo(t, s2, "w") // the server has read what the client sent before
		if n := tc0.Counts().Pings - before; n > 1 {
			t.Errorf("%d keepalive PINGs on a connection without a stream, want at most the one in flight", n)
		}
	})
	t.Run("unanswered", func(t *testing.T) {
		// A server that takes the connection and never writes: the client's PING goes
		// unanswered.
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer lis.Close()
		go func() {
			nc, err := lis.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			_, _ = io.Copy(io.Discard, nc)
		}()
		c, codec := newConn(t, Config{Target: lis.Addr().String(), KeepaliveTime: 10 * time.Millisecond, KeepaliveTimeout: 10 * time.Millisecond})
		s, err := openADS(context.Background(), c, codec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Recv()
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "keepalive") {
			t.Fatalf("Recv on a connection whose PING went unanswered: %v, want Unavailable naming the keepalive", err)
		}
	})
}
