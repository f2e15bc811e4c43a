package h2client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// serverWire is the server side of stream 1 sending msgs, in DATA frames of up to frameLen.
func serverWire(msgs [][]byte, frameLen int) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	var stream []byte
	for _, m := range msgs {
		stream = append(stream, grpcMessage(m)...)
	}
	wire := bytes.Join([][]byte{
		frame(frameSettings, 0, 0, nil),
		frame(frameHeaders, flagEndHeaders, 1, headerBlock(enc, &buf, ":status", "200", "content-type", "application/grpc")),
	}, nil)
	for len(stream) > 0 {
		cut := min(len(stream), frameLen)
		wire = append(wire, frame(frameData, 0, 1, stream[:cut])...)
		stream = stream[cut:]
	}
	return append(wire, frame(frameHeaders, flagEndHeaders|flagEndStream, 1, headerBlock(enc, &buf, "grpc-status", "0"))...)
}

// sharedClient reads msgs from its own wire (DATA frames of frameLen, reads of chunk) on a
// transport that shares large messages through shared, and checks every message the codec
// gets while it holds it, and every receive buffer back in its pool at the end. It returns the
// most receive buffers it held at once, and how many messages reached the codec in more than
// one piece.
func sharedClient(t *testing.T, shared *Shared, msgs [][]byte, frameLen, chunk int) (maxOut, pieces int) {
	pool := &ledgerPool{t: t, out: map[*[]byte]bool{}}
	c := &Conn{cfg: Config{Target: "127.0.0.1:1", Pool: pool, Shared: shared}.withDefaults()}
	var src source = &sliceSource{b: serverWire(msgs, frameLen), chunk: chunk}
	if chunk == 0 {
		src = &tricklingSource{b: serverWire(msgs, frameLen)}
	}
	tr := newTransport(&c.cfg, nil, src)
	tr.w = io.Discard
	codec := &wantCodec{t: t, want: msgs}
	s, err := tr.open(context.Background(), c, codec, "/m")
	if err != nil {
		t.Error(err)
		return 0, 0
	}
	for {
		if err := s.RecvMsg(nil); err != nil {
			if err != io.EOF {
				t.Errorf("the stream ended with %v", err)
			}
			break
		}
	}
	if len(codec.want) != 0 {
		t.Errorf("%d messages not delivered", len(codec.want))
	}
	if len(pool.out) != 0 {
		t.Errorf("%d receive buffers not given back", len(pool.out))
	}
	return pool.maxOut, codec.pieces
}

func patterned(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

// TestSharedMessages: clients that receive the same large messages, each with its own tail
// (a nonce), read them as one copy and their own tails; a message that starts as another but
// differs part way forks its own copy, which the next clients of that message follow. Every
// client gets exactly its bytes, in concurrent reads of every size, and no receive buffer is
// used after it went back to its pool.
func TestSharedMessages(t *testing.T) {
	const size = 300_000
	full := patterned(size, 1) // a full config
	next := bytes.Clone(full)  // the next push: the same start, a change half way
	next[size/2] ^= 0xff
	other := patterned(size, 2) // a different start
	tailed := func(m []byte, i int) []byte {
		m = bytes.Clone(m)
		copy(m[len(m)-8:], fmt.Sprintf("%08d", i))
		return m
	}
	clients := 8
	msgsOf := func(i int) [][]byte {
		return [][]byte{tailed(full, i), []byte("small"), tailed(next, i), other, patterned(2000, i)}
	}
	shared := NewShared()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sharedClient(t, shared, msgsOf(i), []int{16384, 9000, 16384, 12345}[i%4], []int{7000, 16393, 70000, 0}[i%4])
		}()
	}
	wg.Wait()
	st := shared.Stats()
	// Each large message is read to its end from a copy, or kept as its own from its tail.
	if got := st.Followed + st.Diverged; got != int64(3*clients) {
		t.Errorf("followed %d + diverged %d, want %d (3 large messages, %d clients)", st.Followed, st.Diverged, 3*clients, clients)
	}
	if st.Started < 3 || st.Started > int64(2+clients) {
		t.Errorf("%d copies started for 3 distinct large messages, %d clients: want 3, and at most one fork per client: %+v", st.Started, clients, st)
	}

	// Read one after another, the same messages take exactly one copy each, and a client that
	// follows a copy holds only the receive buffer it reads into.
	shared = NewShared()
	first, _ := sharedClient(t, shared, [][]byte{tailed(full, 0)}, 16384, 0)
	follower, _ := sharedClient(t, shared, [][]byte{tailed(full, 1)}, 16384, 0)
	sharedClient(t, shared, [][]byte{tailed(next, 2)}, 16384, 0)
	sharedClient(t, shared, [][]byte{tailed(next, 3)}, 16384, 0)
	st = shared.Stats()
	if want := (SharedStats{Started: 2, Forked: 1, Followed: 2, Diverged: 2}); st != want {
		// The starter of each copy wrote its own tail into it: the others keep theirs.
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if follower > 2 {
		t.Errorf("a follower held %d receive buffers at once, want at most 2 (the starter held %d)", follower, first)
	}
}

// TestSharedOff: without Shared, or for messages below sharedMinMsg, nothing is shared.
func TestSharedOff(t *testing.T) {
	shared := NewShared()
	sharedClient(t, shared, [][]byte{patterned(sharedMinMsg-1, 1)}, 16384, 0)
	sharedClient(t, shared, [][]byte{patterned(sharedMinMsg-1, 1)}, 16384, 0)
	if st := shared.Stats(); st != (SharedStats{}) {
		t.Errorf("messages below %d bytes shared: %+v", sharedMinMsg, st)
	}
	sharedClient(t, nil, [][]byte{patterned(size1MB, 1)}, 16384, 0)
}

const size1MB = 1 << 20

// TestSharedLonely: copies that no stream follows stop being started for every message.
func TestSharedLonely(t *testing.T) {
	shared := NewShared()
	n := sharedMaxMsgs + lonelyLimit + 2*probeEvery
	for i := range n {
		m := patterned(sharedMinMsg, i)
		m[0], m[1] = byte(i), byte(i>>8) // distinct starts
		sharedClient(t, shared, [][]byte{m}, 16384, 16393)
	}
	if st := shared.Stats(); st.Started >= int64(n) || st.Started < sharedMaxMsgs+lonelyLimit {
		t.Errorf("%d copies started for %d distinct messages: want fewer, after the first %d went unfollowed", st.Started, n, sharedMaxMsgs+lonelyLimit)
	}
}

// TestSharedVariants: the messages of a push that differ part way (one per namespace, say),
// received in turn, take one copy each: a stream that leaves a copy finds the variant it goes
// on with among the copies forked at the same offset.
func TestSharedVariants(t *testing.T) {
	const size = 200_000
	base := patterned(size, 3)
	var variants [][]byte
	for v := range 3 {
		m := bytes.Clone(base)
		m[size/2] = byte(v)
		variants = append(variants, m)
	}
	shared := NewShared()
	for i := range 9 {
		sharedClient(t, shared, [][]byte{variants[i%3]}, 16384, 16393)
	}
	if st, want := shared.Stats(), (SharedStats{Started: 3, Forked: 2, Followed: 9}); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

// FuzzSharedMessages: clients that share copies (one Shared) each get exactly the bytes of
// their own messages, whatever differs between them and wherever frames and reads cut them.
// edits are groups of four bytes: a client (of three), an offset (three bytes) where its
// message differs from the common one.
func FuzzSharedMessages(f *testing.F) {
	f.Add([]byte{0, 0, 0, 9, 1, 1, 0, 0, 2, 0, 255, 255}, uint32(100_000), uint16(16384), uint16(7000))
	f.Add([]byte{1, 0, 1, 0}, uint32(0), uint16(9000), uint16(0))
	f.Add([]byte{}, uint32(300_000), uint16(1000), uint16(16393))
	f.Fuzz(func(t *testing.T, edits []byte, size uint32, frameLen, chunk uint16) {
		n := sharedMinMsg + int(size%(1<<18))
		fl := 512 + int(frameLen)%(maxFrameSize-511)
		common := patterned(n, 5)
		var msgs [3][][]byte
		for c := range msgs {
			first := bytes.Clone(common)
			second := patterned(n/2+sharedMinMsg, c/2) // clients 0 and 1 alike, 2 its own
			msgs[c] = [][]byte{first, second}
		}
		for i := 0; i+3 < len(edits); i += 4 {
			c := int(edits[i]) % 3
			off := (int(edits[i+1])<<16 | int(edits[i+2])<<8 | int(edits[i+3])) % n
			msgs[c][0][off] ^= 0xff
		}
		shared := NewShared()
		for c := range msgs {
			sharedClient(t, shared, msgs[c], fl, int(chunk))
		}
		for c := range msgs { // again, now that every copy is there
			sharedClient(t, shared, msgs[c], fl, int(chunk))
		}
	})
}

// TestSharedPrefixEndsFrame: a large message whose length prefix ends a DATA frame is still
// read from a copy (its first piece is the next frame's).
func TestSharedPrefixEndsFrame(t *testing.T) {
	const fl = 16384
	first := patterned(3*fl-10, 1) // its prefix and bytes, then the next prefix: three frames
	large := patterned(200_000, 2)
	shared := NewShared()
	for range 2 {
		if _, pieces := sharedClient(t, shared, [][]byte{first, large}, fl, 0); pieces != 1 {
			t.Errorf("%d messages reached the codec in pieces, want 1 (the first; the large one is the copy's one piece)", pieces)
		}
	}
	if st := shared.Stats(); st.Started != 1 || st.Followed != 2 {
		t.Errorf("stats %+v: want the large message read from one copy by both clients", st)
	}
}
