package h2client

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/mem"
)

// freeListPool is a buffer pool that keeps what it is given, by length: unlike a sync.Pool, a
// GC during a measurement does not empty it.
type freeListPool struct{ free map[int][]*[]byte }

func (p *freeListPool) Get(n int) *[]byte {
	if l := p.free[n]; len(l) > 0 {
		b := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		return b
	}
	b := make([]byte, n)
	return &b
}

func (p *freeListPool) Put(b *[]byte) { p.free[len(*b)] = append(p.free[len(*b)], b) }

// pushSource serves a stream's response headers, then a DATA frame of one gRPC message at each
// read, without end: a server pushing one small response after another.
type pushSource struct {
	head, data []byte
}

func (s *pushSource) recv(into receiver) (int, time.Time, error) {
	b := s.data
	if s.head != nil {
		b, s.head = s.head, nil
	}
	return copy(into.buffer(), b), time.Unix(1e9, 0), nil
}

// lenCodec reads only a message's length and marshals every request as the same bytes.
type lenCodec struct {
	got int
	req mem.BufferSlice
}

func (c *lenCodec) Name() string                             { return "len" }
func (c *lenCodec) Marshal(any) (mem.BufferSlice, error)     { return c.req, nil }
func (c *lenCodec) Unmarshal(d mem.BufferSlice, _ any) error { c.got = d.Len(); return nil }

// TestSteadyPushAllocatesNothing: once a stream is open, a small response received and
// delivered to the codec, and the ACK sent, allocate nothing in the transport. A fake Envoy
// does this once a push; each allocation was CPU of the harness (BenchmarkPushCPU), and before
// this test the read's closures, the codec's one-piece BufferSlice and the send's list of parts
// were six a response.
func TestSteadyPushAllocatesNothing(t *testing.T) {
	msg := patterned(300, 3)
	const ackLen = 5 + 200
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	src := &pushSource{
		head: append(frame(frameSettings, 0, 0, nil),
			frame(frameHeaders, flagEndHeaders, 1, headerBlock(enc, &buf, ":status", "200", "content-type", "application/grpc"))...),
		// Each push gives back the window the last ACK took, as a server does.
		data: bytes.Join([][]byte{
			frame(frameWindowUpdate, 0, 0, binary.BigEndian.AppendUint32(nil, ackLen)),
			frame(frameWindowUpdate, 0, 1, binary.BigEndian.AppendUint32(nil, ackLen)),
			frame(frameData, 0, 1, grpcMessage(msg)),
		}, nil),
	}
	c := &Conn{cfg: Config{Target: "127.0.0.1:1", Pool: &freeListPool{free: map[int][]*[]byte{}}}.withDefaults()}
	tr := newTransport(&c.cfg, nil, src)
	tr.w = io.Discard
	codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
	s, err := tr.open(context.Background(), c, codec, "/m")
	if err != nil {
		t.Fatal(err)
	}
	var m struct{}
	exchange := func() {
		if err := s.RecvMsg(&m); err != nil {
			t.Fatal(err)
		}
		if codec.got != len(msg) {
			t.Fatalf("codec got %d bytes, want %d", codec.got, len(msg))
		}
		if err := s.SendMsg(&m); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // the headers, and the pool's first buffers
		exchange()
	}
	if n := testing.AllocsPerRun(1000, exchange); n != 0 {
		t.Errorf("a response received and its ACK sent allocate %.2f objects in the transport, want 0", n)
	}
}
