package rxstamp

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// h2frame encodes one HTTP/2 frame.
func h2frame(typ, flags byte, stream uint32, payload []byte) []byte {
	b := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

// grpcMsg is a gRPC length-prefixed message of n bytes.
func grpcMsg(n int) []byte {
	b := make([]byte, 5, 5+n)
	binary.BigEndian.PutUint32(b[1:], uint32(n))
	return append(b, bytes.Repeat([]byte{'x'}, n)...)
}

type ended struct {
	stream uint32
	n      int
	at     time.Time
}

// TestFrameReaderFindsMessageEnds feeds frames in every split into reads and checks that each
// gRPC message ends once, with its length, stream and the stamp of the read that completed it.
func TestFrameReaderFindsMessageEnds(t *testing.T) {
	m1, m2, m3 := grpcMsg(300), grpcMsg(0), grpcMsg(40)
	// Stream 1: settings, headers, m1 across two DATA frames (the second padded), a ping, m2 and
	// m3 in one frame; stream 3: headers and m3 in a frame that ends the stream.
	both := append(append([]byte{}, m2...), m3...)
	padded := append([]byte{4}, append(append([]byte{}, m1[100:]...), 0, 0, 0, 0)...)
	wire := bytes.Join([][]byte{
		h2frame(0x4, 0, 0, nil),
		h2frame(frameHeaders, 0x4, 1, []byte{0x88}),
		h2frame(frameData, 0, 1, m1[:100]),
		h2frame(frameData, flagPadded, 1, padded),
		h2frame(0x6, 0, 0, make([]byte, 8)),
		h2frame(frameData, 0, 1, both),
		h2frame(frameHeaders, 0x4, 3, []byte{0x88}),
		h2frame(frameData, flagEndStrm, 3, m3),
	}, nil)
	want := []ended{{1, 300, time.Time{}}, {1, 0, time.Time{}}, {1, 40, time.Time{}}, {3, 40, time.Time{}}}
	for _, step := range []int{1, 2, 7, 9, 64, len(wire)} {
		var got []ended
		var heads []uint32
		f := frameReader{
			done:    func(s uint32, n int, at time.Time) { got = append(got, ended{s, n, at}) },
			headers: func(s uint32) { heads = append(heads, s) },
		}
		for i := 0; i < len(wire); i += step {
			f.at = time.Unix(int64(i), 0)
			f.feed(wire[i:min(i+step, len(wire))])
		}
		if len(got) != len(want) {
			t.Fatalf("reads of %d bytes: %d messages ended (%v), want %d", step, len(got), got, len(want))
		}
		for i, g := range got {
			if g.stream != want[i].stream || g.n != want[i].n {
				t.Errorf("reads of %d bytes: message %d is stream %d, %d bytes; want stream %d, %d bytes", step, i, g.stream, g.n, want[i].stream, want[i].n)
			}
		}
		// The last message ends with the last byte: its stamp is the last read's.
		if last := got[len(got)-1].at; !last.Equal(time.Unix(int64((len(wire)-1)/step*step), 0)) {
			t.Errorf("reads of %d bytes: last message stamped %v", step, last)
		}
		if len(heads) != 2 || heads[0] != 1 || heads[1] != 3 {
			t.Errorf("reads of %d bytes: headers of streams %v, want [1 3]", step, heads)
		}
	}
}

func TestFrameConstantsAreHTTP2s(t *testing.T) {
	if frameData != byte(http2.FrameData) || frameHeaders != byte(http2.FrameHeaders) ||
		flagPadded != byte(http2.FlagDataPadded) || flagEndStrm != byte(http2.FlagDataEndStream) {
		t.Fatal("frame types or flags differ from HTTP/2's")
	}
}

// TestStampConnTake checks the queue: the oldest entry is taken when its length matches;
// entries of streams older than the newest headers are dropped; a mismatch clears the queue.
func TestStampConnTake(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	sc := &stampConn{}
	sc.complete(1, 10, at(1))
	sc.complete(1, 20, at(2))
	if got, ok := sc.take(10); !ok || !got.Equal(at(1)) {
		t.Fatalf("take(10) = %v, %v", got, ok)
	}
	sc.complete(3, 30, at(3))
	sc.headers(3) // stream 1 ended before its 20-byte message was taken
	if got, ok := sc.take(30); !ok || !got.Equal(at(3)) {
		t.Fatalf("take(30) after stream 3's headers = %v, %v", got, ok)
	}
	sc.complete(3, 40, at(4))
	sc.complete(3, 50, at(5))
	if _, ok := sc.take(41); ok {
		t.Fatal("take of a length no entry has succeeded")
	}
	if _, ok := sc.take(50); ok {
		t.Fatal("a mismatch must clear the queue")
	}
	sc.complete(3, 0, time.Time{}) // no kernel stamp: nothing queued
	if _, ok := sc.take(0); ok {
		t.Fatal("an unstamped message was queued")
	}
}

// TestStampConnKernelStamps runs a real loopback connection: what the peer writes is read with
// a kernel stamp no later than the read's return and no earlier than the write.
func TestStampConnKernelStamps(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := lis.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	rx := &Stamps{}
	c, err := rx.Dial(context.Background(), lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*stampConn); !ok {
		t.Skipf("the kernel does not timestamp TCP receives here (%T)", c)
	}
	peer := <-accepted
	defer peer.Close()
	msg := grpcMsg(1000)
	if _, err := peer.Write(h2frame(frameHeaders, 0x4, 1, []byte{0x88})); err != nil {
		t.Fatal(err)
	}
	// The kernel turns receive timestamps on asynchronously after the first socket asks: the
	// first messages may come unstamped (no entry). Send until one is stamped.
	buf := make([]byte, 4096)
	deadline := time.Now().Add(time.Minute)
	for {
		before := time.Now()
		if _, err := peer.Write(h2frame(frameData, 0, 1, msg)); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 9+len(msg); {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
		after := time.Now()
		if stamp, ok := rx.Take(1000); ok {
			if stamp.Before(before.Add(-time.Millisecond)) || stamp.After(after) {
				t.Errorf("kernel stamp %v outside [%v, %v]", stamp, before, after)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no message stamped by the kernel in a minute")
		}
	}
}
