package rxstamp

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"google.golang.org/grpc/mem"
)

// rxEntry is one complete gRPC message read from a connection.
type rxEntry struct {
	stream uint32
	n      int
	at     time.Time // kernel receive time of its last byte
}

// rxQueueMax bounds the entries a connection keeps for messages no codec takes.
const rxQueueMax = 64

// Stamps is one client's source of kernel receive stamps: the connection it dials last.
type Stamps struct {
	mu   sync.Mutex
	conn *stampConn
}

// Dial dials addr over TCP and returns it as a stampConn when the kernel timestamps its
// receives, plain otherwise; either way it becomes the client's current connection.
func (r *Stamps) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	var sc *stampConn
	if ok {
		sc = newStampConn(tc)
	}
	r.mu.Lock()
	r.conn = sc
	r.mu.Unlock()
	if sc == nil {
		return c, nil
	}
	return sc, nil
}

// Take returns the arrival time of the oldest complete message if it is n bytes long.
func (r *Stamps) Take(n int) (time.Time, bool) {
	r.mu.Lock()
	sc := r.conn
	r.mu.Unlock()
	if sc == nil {
		return time.Time{}, false
	}
	return sc.take(n)
}

// stampConn is a TCP connection whose reads are timestamped by the kernel and whose HTTP/2
// frames are followed to find where gRPC messages end (see above). It implements grpc-go's
// ReadOnReady (a read buffer only once the socket is readable), as a plain TCP connection does.
type stampConn struct {
	*net.TCPConn // Write, Close, addresses and deadlines; reads are stampConn's own
	raw          syscall.RawConn
	oob          []byte

	// Read state, owned by the transport's reader goroutine.
	fr frameReader

	mu    sync.Mutex
	queue []rxEntry
	// newest is the highest stream id whose response headers were read: entries of older
	// streams (a stream that ended before its codec took them) are dropped.
	newest uint32
}

func newStampConn(tc *net.TCPConn) *stampConn {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	sc := &stampConn{TCPConn: tc, raw: raw, oob: make([]byte, syscall.CmsgSpace(16))}
	sc.fr.done = sc.complete
	sc.fr.headers = sc.headers
	return sc
}

// SyscallConn is hidden: grpc-go would read the socket directly and bypass the stamps.
func (sc *stampConn) SyscallConn() (syscall.RawConn, error) {
	return nil, syscall.EOPNOTSUPP
}

// recv reads into b when the socket is readable and follows what it read.
func (sc *stampConn) recv(b []byte) (int, error) {
	var n, oobn int
	var rerr error
	err := sc.raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), b, sc.oob, 0)
		return rerr != syscall.EAGAIN
	})
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	if n == 0 {
		return 0, io.EOF
	}
	sc.fr.at = kernelStamp(sc.oob[:oobn])
	sc.fr.feed(b[:n])
	return n, nil
}

func (sc *stampConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return sc.recv(b)
}

// ReadOnReady is grpc-go's non-pinning read: a buffer from pool only once data is there.
func (sc *stampConn) ReadOnReady(bufSize int, pool mem.BufferPool) (*[]byte, int, error) {
	var buf *[]byte
	var n, oobn int
	var rerr error
	err := sc.raw.Read(func(fd uintptr) bool {
		buf = pool.Get(bufSize)
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), *buf, sc.oob, 0)
		if rerr == syscall.EAGAIN {
			pool.Put(buf)
			buf = nil
			return false
		}
		return true
	})
	if err == nil && rerr != nil {
		err = rerr
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	if err != nil {
		if buf != nil {
			pool.Put(buf)
		}
		return nil, 0, err
	}
	sc.fr.at = kernelStamp(sc.oob[:oobn])
	sc.fr.feed((*buf)[:n])
	return buf, n, nil
}

// kernelStamp reads the SCM_TIMESTAMPNS of a recvmsg's control data (zero when absent),
// without allocating.
func kernelStamp(oob []byte) time.Time {
	hdr := syscall.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return time.Time{}
		}
		data := oob[cmsgAlign(hdr):l]
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && len(data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(data[8:16]))
			return time.Unix(sec, nsec)
		}
		oob = oob[min(cmsgAlign(l), len(oob)):]
	}
	return time.Time{}
}

func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

func (sc *stampConn) complete(stream uint32, n int, at time.Time) {
	if at.IsZero() {
		return
	}
	sc.mu.Lock()
	if len(sc.queue) >= rxQueueMax {
		sc.queue = append(sc.queue[:0], sc.queue[1:]...)
	}
	sc.queue = append(sc.queue, rxEntry{stream: stream, n: n, at: at})
	sc.mu.Unlock()
}

func (sc *stampConn) headers(stream uint32) {
	sc.mu.Lock()
	sc.newest = max(sc.newest, stream)
	sc.mu.Unlock()
}

func (sc *stampConn) take(n int) (time.Time, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	i := 0
	for i < len(sc.queue) && sc.queue[i].stream < sc.newest {
		i++
	}
	q := sc.queue[i:]
	if len(q) == 0 || q[0].n != n {
		sc.queue = sc.queue[:0]
		return time.Time{}, false
	}
	at := q[0].at
	sc.queue = append(sc.queue[:0], q[1:]...)
	return at, true
}

// frameReader follows the HTTP/2 frames a client reads (the server's side of the connection)
// and the gRPC messages in their DATA frames, reporting each message's end through done with
// the stamp of the read that completed it (at), and each stream's response headers through
// headers.
type frameReader struct {
	at      time.Time
	done    func(stream uint32, n int, at time.Time)
	headers func(stream uint32)

	hdr  [9]byte
	hdrN int
	// The frame being read: its type, flags and stream, its payload bytes left, and for a
	// padded DATA frame its pad length (padN: whether the pad length byte was read).
	typ, flags byte
	stream     uint32
	left       int
	pad        int
	padRead    bool

	msgs map[uint32]*msgState // gRPC message state per stream
}

// msgState is where a stream is in its gRPC messages: in a 5-byte prefix (prefixN read) or in
// a message body (bodyLeft bytes left of a message of n).
type msgState struct {
	prefix   [5]byte
	prefixN  int
	n        int
	bodyLeft int
}

const (
	frameData    = 0x0
	frameHeaders = 0x1
	flagEndStrm  = 0x1
	flagPadded   = 0x8
)

func (f *frameReader) feed(b []byte) {
	for len(b) > 0 {
		if f.hdrN < len(f.hdr) {
			k := copy(f.hdr[f.hdrN:], b)
			f.hdrN += k
			b = b[k:]
			if f.hdrN < len(f.hdr) {
				return
			}
			f.left = int(f.hdr[0])<<16 | int(f.hdr[1])<<8 | int(f.hdr[2])
			f.typ, f.flags = f.hdr[3], f.hdr[4]
			f.stream = binary.BigEndian.Uint32(f.hdr[5:9]) & 0x7fffffff
			f.pad, f.padRead = 0, f.typ != frameData || f.flags&flagPadded == 0
			if f.typ == frameHeaders && f.headers != nil {
				f.headers(f.stream)
			}
			if f.left == 0 {
				f.endFrame()
				continue
			}
		}
		if len(b) == 0 {
			return
		}
		k := min(len(b), f.left)
		if f.typ == frameData {
			f.data(b[:k])
		}
		f.left -= k
		b = b[k:]
		if f.left == 0 {
			f.endFrame()
		}
	}
}

// endFrame finishes the current frame: a DATA frame that ends its stream forgets it.
func (f *frameReader) endFrame() {
	if f.typ == frameData && f.flags&flagEndStrm != 0 {
		delete(f.msgs, f.stream)
	}
	f.hdrN = 0
}

// data follows payload bytes of the current DATA frame (at most what is left of it).
func (f *frameReader) data(b []byte) {
	left := f.left // of the frame's payload, b included
	if !f.padRead {
		f.pad = int(b[0])
		f.padRead = true
		b = b[1:]
		left--
	}
	// The frame's last pad bytes are padding, not data.
	if body := left - f.pad; len(b) > body {
		b = b[:max(body, 0)]
	}
	if f.msgs == nil {
		f.msgs = make(map[uint32]*msgState)
	}
	m := f.msgs[f.stream]
	if m == nil {
		m = &msgState{}
		f.msgs[f.stream] = m
	}
	for {
		if m.prefixN < len(m.prefix) {
			k := copy(m.prefix[m.prefixN:], b)
			m.prefixN += k
			b = b[k:]
			if m.prefixN < len(m.prefix) {
				return
			}
			m.n = int(binary.BigEndian.Uint32(m.prefix[1:5]))
			m.bodyLeft = m.n
		}
		k := min(len(b), m.bodyLeft)
		m.bodyLeft -= k
		b = b[k:]
		if m.bodyLeft > 0 {
			return
		}
		f.done(f.stream, m.n, f.at)
		m.prefixN = 0
		if len(b) == 0 {
			return
		}
	}
}
