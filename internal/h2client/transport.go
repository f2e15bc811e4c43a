package h2client

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// transport is one HTTP/2 connection.
//
// Reading belongs to the goroutine in the open stream's RecvMsg or Header (one at a time, as
// grpc-go requires of a stream's receiver); writing is serialised by wmu; the flow-control
// windows and the stream table are under mu.
type transport struct {
	cfg *Config
	nc  net.Conn // nil in tests that feed a source directly
	src source
	w   io.Writer

	// Read side, owned by the receiving goroutine.
	rbuf   *[]byte // nil when it holds nothing unread
	r0, r1 int     // unread bytes: (*rbuf)[r0:r1]
	at     time.Time
	hdec   *hpack.Decoder
	hblock []byte // a header block awaiting its CONTINUATION frames
	hhdr   frameHeader
	fields []hpack.HeaderField
	// connUnacked is how many DATA bytes the connection received since its last window update.
	connUnacked uint32
	// readN is the size of a receive buffer taken for the read in progress (fill).
	readN int
	// gather is how many bytes of the message being gathered are still to come (0: none):
	// the receive buffer grows to take them in fewer reads.
	gather int
	// pinned: pieces of the message being gathered lie in the receive buffer, which must then
	// be neither reused nor given back; kept are the earlier receive buffers they lie in, set
	// aside until the message is delivered (or dropped).
	pinned bool
	kept   []*[]byte

	// rmu is held by the goroutine in a stream's RecvMsg or Header (the read state below is
	// theirs): a new stream waits for the last stream's reader to leave.
	rmu sync.Mutex

	wmu  sync.Mutex // one writer at a time; never held while waiting for a window
	wbuf []byte
	henc *hpack.Encoder
	hbuf bytes.Buffer

	// Keepalive (Config.KeepaliveTime): lastRead is when a read last returned bytes (unix
	// nanoseconds), ka the timer that checks it, pingAt when the keepalive PING not yet
	// answered went out (0: none), pingDue when it times out and pingQueued what the socket
	// held unread then; the last three belong to ka's function.
	lastRead        atomic.Int64
	ka              *time.Timer
	pingAt, pingDue int64
	pingQueued      int // bytes waiting unread in the socket when the PING went out

	mu           sync.Mutex
	connSendWin  int64
	peerInitWin  int64
	peerMaxFrame int
	nextID       uint32
	active       *stream
	goaway       bool
	lastID       uint32 // the last stream the server's GOAWAY says it processes
	err          error  // why the connection failed; nil while it works
}

func newTransport(cfg *Config, nc net.Conn, src source) *transport {
	t := &transport{cfg: cfg, nc: nc, src: src, w: nc,
		connSendWin: defaultWindow, peerInitWin: defaultWindow, peerMaxFrame: maxFrameSize, nextID: 1}
	t.hdec = hpack.NewDecoder(4096, nil)
	t.hdec.SetMaxStringLength(1 << 20)
	t.henc = hpack.NewEncoder(&t.hbuf)
	return t
}

// start writes the preface, the client's settings and its connection window.
func (t *transport) start() error {
	b := append([]byte(clientPreface), nil...)
	b = appendSettings(b, t.cfg.Window)
	if inc := t.cfg.Window - defaultWindow; inc > 0 {
		b = appendWindowUpdate(b, 0, inc) // an increment of 0 is a protocol error
	}
	_, err := t.w.Write(b)
	return err
}

// reusable says whether a new stream can open on the connection (nil) or why not.
func (t *transport) reusable() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.err != nil:
		return t.err
	case t.goaway:
		return errors.New("the server sent GOAWAY")
	case t.nextID > 1<<30:
		return errors.New("stream ids exhausted")
	}
	return nil
}

// close fails the connection with err and closes its socket.
func (t *transport) close(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	if t.ka != nil {
		t.ka.Stop()
	}
	t.mu.Unlock()
	if t.nc != nil {
		t.nc.Close()
	}
}

// failed is the connection's error, nil while it works.
func (t *transport) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// write writes b whole under wmu; a failed write fails the connection.
func (t *transport) write(b []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.writeLocked(b)
}

// writeLocked is write with wmu held.
func (t *transport) writeLocked(b []byte) error {
	if err := t.failed(); err != nil {
		return err
	}
	if _, err := t.w.Write(b); err != nil {
		t.close(err)
		return err
	}
	return nil
}

// writeControl writes a small frame the reader answers with (settings ACK, ping ACK,
// window update, reset).
func (t *transport) writeControl(f func(b []byte) []byte) error {
	var buf [32]byte
	return t.write(f(buf[:0]))
}

// open starts a stream on the connection: the previous stream must have ended.
func (t *transport) open(ctx context.Context, c *Conn, codec encoding.CodecV2, method string) (*stream, error) {
	t.mu.Lock()
	prev := t.active
	t.mu.Unlock()
	if prev != nil {
		if !prev.finished() {
			return nil, status.Error(codes.Unavailable, "h2client: a stream is already open on this connection")
		}
		prev.detach()
	}
	// A cancelled stream's reader was interrupted with a past deadline: once it has left the
	// socket, the last stream lets go of the buffer and the deadline is lifted for this one.
	t.rmu.Lock()
	if prev != nil {
		prev.abandon()
	}
	if t.nc != nil {
		_ = t.nc.SetReadDeadline(time.Time{})
	}
	t.rmu.Unlock()
	t.wmu.Lock()
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		t.wmu.Unlock()
		return nil, status.Errorf(codes.Unavailable, "connection error: %v", err)
	}
	id := t.nextID
	t.nextID += 2
	s := &stream{t: t, c: c, id: id, ctx: ctx, codec: codec, sendWin: t.peerInitWin, afterDone: make(chan struct{})}
	t.active = s
	maxFrame := t.peerMaxFrame
	t.mu.Unlock()
	t.hbuf.Reset()
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "POST"},
		{Name: ":scheme", Value: "http"},
		{Name: ":path", Value: method},
		{Name: ":authority", Value: t.cfg.Authority},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "user-agent", Value: t.cfg.UserAgent},
		{Name: "te", Value: "trailers"},
	}
	if dl, ok := ctx.Deadline(); ok {
		fields = append(fields, hpack.HeaderField{Name: "grpc-timeout", Value: encodeTimeout(time.Until(dl))})
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	for k, vs := range md {
		if isReservedHeader(k) {
			continue
		}
		for _, v := range vs {
			if len(k) > 4 && k[len(k)-4:] == "-bin" {
				v = encodeBinHeader(v)
			}
			fields = append(fields, hpack.HeaderField{Name: k, Value: v})
		}
	}
	for _, f := range fields {
		_ = t.henc.WriteField(f) // writes to a bytes.Buffer: never fails
	}
	block := t.hbuf.Bytes()
	b := t.wbuf[:0]
	for first := true; first || len(block) > 0; first = false {
		n := min(len(block), maxFrame)
		typ, flags := byte(frameContinuation), byte(0)
		if first {
			typ = frameHeaders
		}
		if n == len(block) {
			flags |= flagEndHeaders
		}
		b = appendFrameHeader(b, n, typ, flags, id)
		b = append(b, block[:n]...)
		block = block[n:]
	}
	_, err := t.w.Write(b)
	t.wbuf = b[:0]
	t.wmu.Unlock()
	if err != nil {
		t.close(err)
		return nil, status.Errorf(codes.Unavailable, "connection error: %v", err)
	}
	s.stop = context.AfterFunc(ctx, s.cancel)
	return s, nil
}

// isReservedHeader reports the headers the transport writes itself, which outgoing metadata
// cannot set (as in grpc-go).
func isReservedHeader(k string) bool {
	if len(k) > 0 && k[0] == ':' {
		return true
	}
	switch k {
	case "content-type", "user-agent", "grpc-message-type", "grpc-encoding", "grpc-message",
		"grpc-status", "grpc-timeout", "grpc-status-details-bin", "te":
		return true
	}
	return false
}

// read makes the next frame's header and payload available in (*rbuf)[r0:r0+9+length],
// reading as needed; the caller consumes it by advancing r0.
func (t *transport) nextFrame() (frameHeader, []byte, error) {
	for t.r1-t.r0 < frameHeaderLen {
		if err := t.fill(); err != nil {
			return frameHeader{}, nil, err
		}
	}
	h := parseFrameHeader((*t.rbuf)[t.r0:])
	if h.length > maxFrameSize {
		return frameHeader{}, nil, connError{code: errCodeFrameSize, msg: "frame of " + strconv.Itoa(h.length) + " bytes, above the 16384 the client allows"}
	}
	for t.r1-t.r0 < frameHeaderLen+h.length {
		if err := t.fill(); err != nil {
			return frameHeader{}, nil, err
		}
	}
	p := (*t.rbuf)[t.r0+frameHeaderLen : t.r0+frameHeaderLen+h.length]
	t.r0 += frameHeaderLen + h.length
	return h, p, nil
}

// fill reads more bytes into the receive buffer, taking one from the pool if it holds none
// (and giving it back while the socket has nothing to read) and moving a partial frame to its
// start when the rest would not fit.
func (t *transport) fill() error {
	// A buffer pinned by a message coming in is kept while it has room: a fleet behind its
	// pushes reads a few frames at a time, and a buffer per read would hold many times the
	// message.
	t.idle()
	size := t.readSize()
	if t.rbuf != nil {
		t.makeRoom(size)
	}
	t.readN = size
	n, at, err := t.src.recv(t)
	if err != nil {
		if t.rbuf != nil && t.r0 == t.r1 {
			t.release()
		}
		return err
	}
	t.r1 += n
	t.at = at
	if t.ka != nil {
		t.lastRead.Store(time.Now().UnixNano())
	}
	return nil
}

// queuedBytes is how many bytes the socket holds not read yet, without reading them (-1: not
// known).
func (t *transport) queuedBytes() int {
	q, ok := t.src.(interface{ queued() int })
	if !ok {
		return -1
	}
	return q.queued()
}

// startKeepalive starts the keepalive timer (Config.KeepaliveTime), before the first read.
func (t *transport) startKeepalive() {
	if t.cfg.KeepaliveTime <= 0 {
		return
	}
	t.lastRead.Store(time.Now().UnixNano())
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.ka = time.AfterFunc(t.cfg.KeepaliveTime, t.keepalive)
	}
}

// keepalive runs when the keepalive timer fires, as grpc-go's client keepalive loop: once
// nothing was read for KeepaliveTime while a stream is open (grpc-go's client does not ping
// without one) it sends a PING, and fails the connection when nothing is read within
// KeepaliveTimeout of it; it looks again at least every KeepaliveTime.
func (t *transport) keepalive() {
	if t.failed() != nil {
		return
	}
	ka, now := t.cfg.KeepaliveTime, time.Now().UnixNano()
	last := t.lastRead.Load()
	if t.pingAt != 0 && last <= t.pingAt && t.queuedBytes() > t.pingQueued {
		// Bytes that arrived in the socket since the PING are the server's answer too: the
		// stream's receiver may be busy (a scripted ACK delay), where grpc-go's reader
		// goroutine never is and would have read them now. (Bytes already waiting when the
		// PING went out prove nothing.)
		last = now
		t.lastRead.Store(now)
	}
	var next time.Duration
	switch idle := time.Duration(now - last); {
	case t.pingAt != 0 && last <= t.pingAt && now >= t.pingDue:
		t.close(fmt.Errorf("keepalive: nothing read within %v of a PING", t.cfg.KeepaliveTimeout))
		return
	case t.pingAt != 0 && last <= t.pingAt:
		next = min(ka, time.Duration(t.pingDue-now))
	case idle < ka:
		t.pingAt, next = 0, ka-idle
	default:
		t.pingAt, next = 0, ka
		// A stream that ended counts for nothing: grpc-go's client does not ping without an
		// open stream (the server would count each such PING against its policy).
		t.mu.Lock()
		open := t.active != nil && !t.active.done && !t.active.cancelled && t.active.ctx.Err() == nil
		t.mu.Unlock()
		if open {
			queued := t.queuedBytes() // before the PING, whose ACK may be back at once
			if err := t.writeControl(func(b []byte) []byte {
				return binary.BigEndian.AppendUint64(appendFrameHeader(b, 8, framePing, 0, 0), uint64(now))
			}); err != nil {
				return
			}
			t.pingAt, t.pingDue, t.pingQueued = now, now+int64(t.cfg.KeepaliveTimeout), queued
			next = min(ka, t.cfg.KeepaliveTimeout)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.ka.Reset(next)
	}
}

// buffer is the room to read into (receiver): after the unread bytes of the receive buffer,
// taking one of t.readN bytes from the pool when it holds none.
func (t *transport) buffer() []byte {
	if t.rbuf == nil {
		t.rbuf = t.cfg.Pool.Get(t.readN)
		t.r0, t.r1 = 0, 0
	}
	return (*t.rbuf)[t.r1:]
}

// idle gives the receive buffer back while the socket has nothing to read (receiver), unless
// it holds unread bytes or pieces of a message coming in.
func (t *transport) idle() {
	if t.rbuf != nil && t.r0 == t.r1 && !t.pinned {
		t.release()
	}
}

// makeRoom readies the receive buffer for a read of a buffer of size: in a larger buffer when
// it is smaller (leftovers shrink kept, or a large message coming), with the unread bytes moved
// to its start when a whole frame would not fit after them (out to a new buffer when pieces of
// a message coming in lie before them: pinned).
//
// It is not inlined: fill is on the stack of every client's receive goroutine parked in its
// socket read, and a few more bytes in its frame keep that stack from shrinking to 2 KiB
// (stack-B/client in BenchmarkFleetHeapPerClient went from 13.8 to 16.4 KB).
//
//go:noinline
func (t *transport) makeRoom(size int) {
	if len(*t.rbuf) < size {
		nb := t.cfg.Pool.Get(size)
		n := copy(*nb, (*t.rbuf)[t.r0:t.r1])
		t.drop(t.rbuf)
		t.rbuf, t.r0, t.r1 = nb, 0, n
	}
	if t.r0 > 0 && len(*t.rbuf)-t.r0 < frameHeaderLen+maxFrameSize {
		if t.pinned {
			nb := t.cfg.Pool.Get(max(size, len(*t.rbuf)))
			n := copy(*nb, (*t.rbuf)[t.r0:t.r1])
			t.drop(t.rbuf)
			t.rbuf, t.r0, t.r1 = nb, 0, n
		} else {
			n := copy(*t.rbuf, (*t.rbuf)[t.r0:t.r1])
			t.r0, t.r1 = 0, n
		}
	}
}

// maxReadBuffer bounds the receive buffer a large message grows it to.
const maxReadBuffer = 256 << 10

// readSize is the receive buffer's size for the next read: ReadBufferSize, or what is left of
// a larger message being gathered with its frame headers (at most maxReadBuffer), so that a
// full config of a MB takes a few reads rather than one per ReadBufferSize. The buffer goes
// back to the pool once read (shrink, fill), so a client holds it only while it reads.
func (t *transport) readSize() int {
	size := t.cfg.ReadBufferSize
	if g := t.gather; g > size {
		size = min(g+(g/maxFrameSize+1)*frameHeaderLen, maxReadBuffer)
	}
	return size
}

// shrink gives the receive buffer back once nothing in it is referenced (every message
// delivered): when it holds nothing unread, or only a little, moved to a buffer of its size.
// The receiving goroutine calls it before it leaves the socket alone (a message delivered, the
// stream ended), so that a client that is not reading holds no 32 KiB buffer.
func (t *transport) shrink() {
	switch {
	case t.rbuf == nil, t.pinned: // pinned: a message coming in lies in it, and needs its room
	case t.r0 == t.r1:
		t.release()
	case t.r1-t.r0 <= 4096 && len(*t.rbuf) > 4096:
		nb := t.cfg.Pool.Get(t.r1 - t.r0)
		n := copy(*nb, (*t.rbuf)[t.r0:t.r1])
		t.drop(t.rbuf)
		t.rbuf, t.r0, t.r1 = nb, 0, n
	}
}

// release lets go of the receive buffer; it holds nothing unread.
func (t *transport) release() {
	t.drop(t.rbuf)
	t.rbuf, t.r0, t.r1 = nil, 0, 0
}

// drop lets go of the receive buffer b, which the transport reads no more: back to the pool,
// or, when pieces of the message being gathered lie in it (pinned), set aside with it.
func (t *transport) drop(b *[]byte) {
	if t.pinned {
		t.kept = append(t.kept, b)
		t.pinned = false
		return
	}
	t.cfg.Pool.Put(b)
}

// putAll gives receive buffers set aside for a message back to the pool.
func (t *transport) putAll(bs []*[]byte) {
	for _, b := range bs {
		t.cfg.Pool.Put(b)
	}
}

// readError turns a read's error into the stream's: Canceled when its context ended the
// read, Unavailable when the connection failed (which it then is).
func (t *transport) readError(s *stream, err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.close(err) // the read failed on its own: so did the connection
		}
		return status.FromContextError(ctxErr).Err()
	}
	var ce connError
	if errors.As(err, &ce) {
		var b [32]byte
		gb := appendFrameHeader(b[:0], 8, frameGoAway, 0, 0)
		gb = binary.BigEndian.AppendUint32(gb, 0)
		gb = binary.BigEndian.AppendUint32(gb, ce.code)
		_ = t.write(gb)
		t.close(err)
		return status.Errorf(codes.Internal, "h2client: %v", err)
	}
	if f := t.failed(); f != nil && !errors.Is(err, f) {
		err = f
	}
	t.close(err)
	if err == errEOF || errors.Is(err, io.EOF) {
		return status.Error(codes.Unavailable, "error reading from server: EOF")
	}
	return status.Errorf(codes.Unavailable, "error reading from server: %v", err)
}

// step reads and handles one frame for s, the open stream.
func (t *transport) step(s *stream) error {
	h, p, err := t.nextFrame()
	if err != nil {
		return err
	}
	if t.hblock != nil && h.typ != frameContinuation {
		return protocolError("frame of type %d inside a header block", h.typ)
	}
	switch h.typ {
	case frameData:
		return t.onData(s, h, p)
	case frameHeaders:
		if h.stream == 0 {
			return protocolError("HEADERS on stream 0")
		}
		frag, err := unpad(h, p)
		if err != nil {
			return err
		}
		if h.flags&flagPriority != 0 {
			if len(frag) < 5 {
				return protocolError("HEADERS with priority shorter than 5 bytes")
			}
			frag = frag[5:]
		}
		t.hhdr = h
		t.hblock = append(make([]byte, 0, len(frag)), frag...)
		if h.flags&flagEndHeaders != 0 {
			return t.endHeaders(s)
		}
	case frameContinuation:
		if t.hblock == nil || h.stream != t.hhdr.stream {
			return protocolError("CONTINUATION without its HEADERS")
		}
		if len(t.hblock)+len(p) > 1<<20 {
			return protocolError("header block above 1 MiB")
		}
		t.hblock = append(t.hblock, p...)
		if h.flags&flagEndHeaders != 0 {
			return t.endHeaders(s)
		}
	case frameRSTStream:
		if h.stream == 0 {
			return protocolError("RST_STREAM on stream 0")
		}
		if len(p) != 4 {
			return connError{code: errCodeFrameSize, msg: "malformed RST_STREAM"}
		}
		if h.stream == s.id {
			s.reset(binary.BigEndian.Uint32(p))
		}
	case frameSettings:
		return t.onSettings(s, h, p)
	case framePushPromise:
		return protocolError("PUSH_PROMISE, though the client disabled server push")
	case framePing:
		if len(p) != 8 || h.stream != 0 {
			return connError{code: errCodeFrameSize, msg: "malformed PING"}
		}
		if h.flags&flagAck == 0 {
			return t.writeControl(func(b []byte) []byte {
				return append(appendFrameHeader(b, 8, framePing, flagAck, 0), p...)
			})
		}
	case frameGoAway:
		if len(p) < 8 || h.stream != 0 {
			return connError{code: errCodeFrameSize, msg: "malformed GOAWAY"}
		}
		last := binary.BigEndian.Uint32(p) & 0x7fffffff
		code := binary.BigEndian.Uint32(p[4:])
		t.mu.Lock()
		t.goaway, t.lastID = true, last
		t.mu.Unlock()
		if s.id > last {
			s.end(status.Errorf(codes.Unavailable, "the connection is draining (GOAWAY, error code %d): stream %d not processed", code, s.id))
		}
	case frameWindowUpdate:
		if len(p) != 4 {
			return connError{code: errCodeFrameSize, msg: "malformed WINDOW_UPDATE"}
		}
		inc := int64(binary.BigEndian.Uint32(p) & 0x7fffffff)
		if inc == 0 && h.stream == 0 {
			return protocolError("WINDOW_UPDATE of 0 on the connection")
		}
		t.mu.Lock()
		switch {
		case h.stream == 0:
			t.connSendWin += inc
			if t.connSendWin > maxWindow {
				t.mu.Unlock()
				return connError{code: errCodeFlowControl, msg: "connection window above 2^31-1"}
			}
		case h.stream == s.id:
			s.sendWin += inc
		}
		t.mu.Unlock()
		return s.flushQueued()
	default:
		// PRIORITY and frame types the client does not know are ignored (RFC 9113 §5.5).
	}
	return nil
}

// onData takes a DATA frame's messages for s and returns the window it used.
func (t *transport) onData(s *stream, h frameHeader, p []byte) error {
	if h.stream == 0 {
		return protocolError("DATA on stream 0")
	}
	t.connUnacked += uint32(h.length)
	if t.connUnacked >= t.cfg.WindowUpdate {
		inc := t.connUnacked
		t.connUnacked = 0
		if err := t.writeControl(func(b []byte) []byte { return appendWindowUpdate(b, 0, inc) }); err != nil {
			return err
		}
	}
	if h.stream != s.id || s.recvDone {
		return nil // a stream that ended: its bytes are counted, not read
	}
	data, err := unpad(h, p)
	if err != nil {
		return err
	}
	if !s.gotHeader {
		s.end(status.Error(codes.Internal, "h2client: DATA before the response headers"))
		return nil
	}
	s.unacked += uint32(h.length)
	if s.unacked >= t.cfg.WindowUpdate && h.flags&flagEndStream == 0 {
		inc := s.unacked
		s.unacked = 0
		if err := t.writeControl(func(b []byte) []byte { return appendWindowUpdate(b, s.id, inc) }); err != nil {
			return err
		}
	}
	s.take(data)
	if h.flags&flagEndStream != 0 && !s.recvDone {
		s.end(status.Error(codes.Internal, "h2client: the server ended the stream without trailers"))
	}
	return nil
}

// onSettings applies the server's settings, acknowledges them and sends what they let s send.
func (t *transport) onSettings(s *stream, h frameHeader, p []byte) error {
	if h.stream != 0 {
		return protocolError("SETTINGS on stream %d", h.stream)
	}
	if h.flags&flagAck != 0 {
		if len(p) != 0 {
			return connError{code: errCodeFrameSize, msg: "SETTINGS ACK with a payload"}
		}
		return nil
	}
	if len(p)%6 != 0 {
		return connError{code: errCodeFrameSize, msg: "SETTINGS of " + strconv.Itoa(len(p)) + " bytes, not a multiple of 6"}
	}
	tableSize, hasTableSize := uint32(0), false
	t.mu.Lock()
	for ; len(p) > 0; p = p[6:] {
		id, v := binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:])
		switch id {
		case settingHeaderTableSize:
			tableSize, hasTableSize = v, true // applied under wmu, below (lock order: wmu, then mu)
		case settingInitialWindowSize:
			if v > maxWindow {
				t.mu.Unlock()
				return connError{code: errCodeFlowControl, msg: "initial window size above 2^31-1"}
			}
			delta := int64(v) - t.peerInitWin
			t.peerInitWin = int64(v)
			if t.active != nil {
				t.active.sendWin += delta
			}
		case settingMaxFrameSize:
			if v < maxFrameSize || v > 1<<24-1 {
				t.mu.Unlock()
				return protocolError("max frame size %d out of range", v)
			}
			t.peerMaxFrame = int(v)
		}
	}
	t.mu.Unlock()
	t.wmu.Lock()
	if hasTableSize {
		t.henc.SetMaxDynamicTableSizeLimit(tableSize)
	}
	err := t.writeLocked(appendFrameHeader(nil, 0, frameSettings, flagAck, 0))
	t.wmu.Unlock()
	if err != nil {
		return err
	}
	return s.flushQueued()
}

// endHeaders decodes a complete header block and gives it to its stream.
func (t *transport) endHeaders(s *stream) error {
	block, h := t.hblock, t.hhdr
	t.hblock = nil
	t.fields = t.fields[:0]
	t.hdec.SetEmitFunc(func(f hpack.HeaderField) { t.fields = append(t.fields, f) })
	if _, err := t.hdec.Write(block); err != nil {
		return connError{code: 0x9, msg: "header block: " + err.Error()} // COMPRESSION_ERROR
	}
	if err := t.hdec.Close(); err != nil {
		return connError{code: 0x9, msg: "header block: " + err.Error()}
	}
	if h.stream != s.id || s.recvDone {
		return nil
	}
	s.headers(t.fields, h.flags&flagEndStream != 0)
	return nil
}
