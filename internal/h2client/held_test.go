package h2client

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/mem"
)

// heldPeer is the server side of one connection on loopback, written by hand: it sends what
// the test gives it, each in one write, and drains what the client writes, counting it.
type heldPeer struct {
	t      *testing.T
	nc     net.Conn
	got    atomic.Int64  // bytes read from the client
	closed chan struct{} // closed when the client's side of the connection ended
}

// heldStream dials a peer on loopback, opens a stream with codec and has the peer answer it
// (SETTINGS, response headers); it returns the stream, its transport and the peer.
func heldStream(t *testing.T, codec *lenCodec) (*stream, *transport, *heldPeer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := New(Config{Target: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tr, err := c.transport(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	p := &heldPeer{t: t, nc: nc, closed: make(chan struct{})}
	t.Cleanup(func() { nc.Close(); <-p.closed })
	go func() {
		defer close(p.closed)
		b := make([]byte, 64<<10)
		for {
			n, err := nc.Read(b)
			p.got.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	s, err := tr.open(context.Background(), c, codec, "/m")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	p.write(append(frame(frameSettings, 0, 0, nil),
		frame(frameHeaders, flagEndHeaders, 1, headerBlock(enc, &buf, ":status", "200", "content-type", "application/grpc"))...))
	return s, tr, p
}

func (p *heldPeer) write(b []byte) {
	p.t.Helper()
	if _, err := p.nc.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// waitGot waits until the peer has read n bytes from the client in all (an error after 10 s).
func (p *heldPeer) waitGot(n int64) error {
	for end := time.Now().Add(10 * time.Second); p.got.Load() < n; {
		if time.Now().After(end) {
			return fmt.Errorf("the peer read %d bytes from the client, want %d", p.got.Load(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// within runs f and fails the test when it has not returned after 10 s (a hang, not a
// measurement).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

func readsOf(tr *transport) int {
	s := tr.src.(*socketSource)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// TestOneReadPerResponse: a client that has sent its ACK and waits for the next response
// reads it with one recvmsg. Before the held read, every response cost two: the read that
// starts a raw.Read must try the socket before it may wait, and found it empty.
func TestOneReadPerResponse(t *testing.T) {
	msg := patterned(300, 3)
	codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
	s, tr, p := heldStream(t, codec)
	var m struct{}
	const pushes = 50
	const ack = 5 + 200 + frameHeaderLen
	p.write(frame(frameData, 0, 1, grpcMessage(msg)))
	if err := s.RecvMsg(&m); err != nil {
		t.Fatal(err)
	}
	first := readsOf(tr) // the peer's SETTINGS and headers, and the first push
	sent := p.got.Load() + ack
	// The server: each push a little after the ACK of the last, as a control plane's
	// comes; the client is waiting by then.
	serverErr := make(chan error, 1)
	go func() {
		for range pushes {
			if p.waitGot(sent) != nil {
				serverErr <- p.waitGot(sent)
				return
			}
			sent += ack
			time.Sleep(time.Millisecond)
			if _, err := p.nc.Write(frame(frameData, 0, 1, grpcMessage(msg))); err != nil {
				serverErr <- err
				return
			}
		}
		serverErr <- nil
	}()
	for i := range pushes + 1 {
		if err := s.SendMsg(&m); err != nil {
			t.Fatal(err)
		}
		if i == pushes {
			break
		}
		if err := s.RecvMsg(&m); err != nil {
			t.Fatal(err)
		}
		if codec.got != len(msg) {
			t.Fatalf("push %d: the codec got %d bytes, want %d", i, codec.got, len(msg))
		}
	}
	if err := <-serverErr; err != nil {
		t.Fatal(err)
	}
	if got := readsOf(tr) - first; got != pushes {
		t.Errorf("%d pushes took %d recvmsg calls, want one each", pushes, got)
	}
}

// TestReadArrivedWhileBusy: a response that arrives while the client is busy with the last
// one (after the read that emptied the socket) is read when the client comes back, although
// the held read then waits for readiness before it reads: the poller kept it.
func TestReadArrivedWhileBusy(t *testing.T) {
	msg := patterned(300, 3)
	codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
	s, tr, p := heldStream(t, codec)
	var m struct{}
	p.write(frame(frameData, 0, 1, grpcMessage(msg)))
	if err := s.RecvMsg(&m); err != nil {
		t.Fatal(err)
	}
	before := readsOf(tr)
	long := patterned(1000, 5)
	p.write(frame(frameData, 0, 1, grpcMessage(long)))
	time.Sleep(20 * time.Millisecond) // the client is busy; the response is in its socket
	within(t, "RecvMsg of a response that arrived while the client was busy", func() {
		if err := s.RecvMsg(&m); err != nil {
			t.Error(err)
		}
	})
	if codec.got != len(long) {
		t.Errorf("the codec got %d bytes, want %d", codec.got, len(long))
	}
	if got := readsOf(tr) - before; got != 1 {
		t.Errorf("the response took %d recvmsg calls, want 1", got)
	}
}

// TestFullReadDoesNotWait: a read that fills the receive buffer leaves bytes in the socket
// for which no new readiness will come: the next read must not wait for one.
func TestFullReadDoesNotWait(t *testing.T) {
	codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
	s, _, p := heldStream(t, codec)
	// Messages of one frame each, 600 KB in one write: many times the 32 KiB buffer.
	var all []byte
	const n = 40
	for i := range n {
		all = append(all, frame(frameData, 0, 1, grpcMessage(patterned(15000, i)))...)
	}
	p.write(all)
	var m struct{}
	within(t, "reading 40 messages sent in one write", func() {
		for i := range n {
			if err := s.RecvMsg(&m); err != nil {
				t.Errorf("message %d: %v", i, err)
				return
			}
			if codec.got != 15000 {
				t.Errorf("message %d: %d bytes, want 15000", i, codec.got)
				return
			}
		}
	})
}

// TestCloseEndsHeldRead: closing a connection whose held read waits between two reads (its
// client busy or gone), or waits for data in another goroutine, does not wait for the client:
// the read ends and the socket closes (the peer sees it; goleak, TestMain, sees no coroutine
// left).
func TestCloseEndsHeldRead(t *testing.T) {
	for _, parked := range []bool{false, true} {
		name := map[bool]string{false: "between reads", true: "waiting for data"}[parked]
		t.Run(name, func(t *testing.T) {
			codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
			s, tr, p := heldStream(t, codec)
			var m struct{}
			p.write(frame(frameData, 0, 1, grpcMessage(patterned(300, 3))))
			if err := s.RecvMsg(&m); err != nil {
				t.Fatal(err)
			}
			recvErr := make(chan error, 1)
			if parked {
				go func() { recvErr <- s.RecvMsg(&m) }()
				time.Sleep(20 * time.Millisecond) // the read waits for data
			}
			within(t, "closing the connection", func() { tr.close(errFromTest) })
			if parked {
				within(t, "the reader's RecvMsg", func() {
					if err := <-recvErr; err == nil {
						t.Error("RecvMsg returned no error on a closed connection")
					}
				})
			}
			within(t, "the peer's read of the close", func() { <-p.closed })
		})
	}
}

var errFromTest = errorString("closed by the test")

type errorString string

func (e errorString) Error() string { return string(e) }
