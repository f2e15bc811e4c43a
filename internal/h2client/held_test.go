package h2client

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
)

func readsOf(tr *transport) int {
	s := tr.src.(*socketSource)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// waitGot waits until the peer has read n bytes from the client in all (an error after 10 s).
func (p *rawPeer) waitGot(n int64) error {
	for end := time.Now().Add(10 * time.Second); p.got.Load() < n; {
		if time.Now().After(end) {
			return fmt.Errorf("the peer read %d bytes from the client, want %d", p.got.Load(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// TestOneReadPerResponse: a client that has sent its ACK and waits for the next response
// reads it with one recvmsg. Before the held read, every response cost two: the read that
// starts a raw.Read must try the socket before it may wait, and found it empty.
func TestOneReadPerResponse(t *testing.T) {
	msg := patterned(300, 3)
	codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
	s, tr, p := rawStream(t, codec)
	if !tr.src.(*socketSource).inq {
		t.Skip("no TCP_INQ here: every read tries the socket first")
	}
	var m struct{}
	const pushes = 50
	const ack = 5 + 200 + frameHeaderLen
	if _, err := p.nc.Write(frame(frameData, 0, 1, grpcMessage(msg))); err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(&m); err != nil {
		t.Fatal(err)
	}
	sent := p.got.Load() + ack
	// The server: each push a little after the ACK of the last, as a control plane's
	// comes; the client is waiting by then.
	serverErr := make(chan error, 1)
	go func() {
		for range pushes {
			if err := p.waitGot(sent); err != nil {
				serverErr <- err
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
	// Counted from the second push: the held read started with the bytes of the first
	// exchange already in the socket, and the poller may announce them once more after the
	// read that took them (a stale readiness costs one recvmsg that finds nothing, once).
	var first int
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
		if i == 0 {
			first = readsOf(tr)
		}
	}
	if err := <-serverErr; err != nil {
		t.Fatal(err)
	}
	if got := readsOf(tr) - first; got != pushes-1 {
		t.Errorf("%d pushes took %d recvmsg calls, want one each", pushes-1, got)
	}
}

// TestReadArrivedWhileBusy: a response that arrives while the client is busy with the last
// one (after the read that emptied the socket, and its ACK) is read when the client comes
// back, although the held read then waits for readiness before it reads: the poller kept it.
func TestReadArrivedWhileBusy(t *testing.T) {
	msg := patterned(300, 3)
	codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
	s, tr, p := rawStream(t, codec)
	var m struct{}
	if _, err := p.nc.Write(frame(frameData, 0, 1, grpcMessage(msg))); err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(&m); err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&m); err != nil {
		t.Fatal(err)
	}
	before := readsOf(tr)
	long := patterned(1000, 5)
	if _, err := p.nc.Write(frame(frameData, 0, 1, grpcMessage(long))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the client is busy; the response is in its socket
	if err := within(t, "RecvMsg of a response that arrived while the client was busy", func() error { return s.RecvMsg(&m) }); err != nil {
		t.Fatal(err)
	}
	if codec.got != len(long) {
		t.Errorf("the codec got %d bytes, want %d", codec.got, len(long))
	}
	if got := readsOf(tr) - before; got != 1 {
		t.Errorf("the response took %d recvmsg calls, want 1", got)
	}
}

// TestFullReadDoesNotWait: a read that fills the receive buffer leaves bytes in the socket
// for which no new readiness will come: the next read must not wait for one, ACKs or not.
func TestFullReadDoesNotWait(t *testing.T) {
	codec := &lenCodec{req: mem.BufferSlice{mem.SliceBuffer(patterned(200, 4))}}
	s, _, p := rawStream(t, codec)
	// Messages of one frame each, 600 KB in one write: many times the 32 KiB buffer.
	var all []byte
	const n = 40
	for i := range n {
		all = append(all, frame(frameData, 0, 1, grpcMessage(patterned(15000, i)))...)
	}
	if _, err := p.nc.Write(all); err != nil {
		t.Fatal(err)
	}
	var m struct{}
	err := within(t, "reading 40 messages sent in one write", func() error {
		for i := range n {
			if err := s.RecvMsg(&m); err != nil {
				return fmt.Errorf("message %d: %v", i, err)
			}
			if codec.got != 15000 {
				return fmt.Errorf("message %d: %d bytes, want 15000", i, codec.got)
			}
			if err := s.SendMsg(&m); err != nil {
				return fmt.Errorf("ACK %d: %v", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
