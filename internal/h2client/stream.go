package h2client

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// stream is one gRPC call on a transport.
type stream struct {
	t     *transport
	c     *Conn
	id    uint32
	ctx   context.Context
	codec encoding.CodecV2

	// stop stops the context's AfterFunc (cancel); afterDone closes when cancel has run.
	stop      func() bool
	afterDone chan struct{}

	// Under t.wmu: SendMsg's scratch (the message's length prefix and the parts it is
	// framed from).
	wpre   [5]byte
	wparts [][]byte

	// Under t.mu.
	sendWin    int64
	sendClosed bool
	sendq      []queued // framed messages waiting for window, oldest first
	sendN      int      // bytes in sendq
	sendEnd    bool     // END_STREAM follows the queue
	endSent    bool
	cancelled  bool
	done       bool // the receive side ended (final is set)

	// Receive side, owned by the receiving goroutine.
	gotHeader   bool
	headerValid bool // the response headers were a gRPC response's
	header      metadata.MD
	trailer     metadata.MD
	final       error // io.EOF: ended with status OK
	recvDone    bool
	unacked     uint32
	pre         [5]byte
	preN        int
	msgLen      int
	// parts are the pieces, in receive buffers, of the message being gathered (the
	// transport's current buffer is pinned while they refer to it, and the earlier ones are
	// in transport.kept); got is how many of its bytes they hold.
	parts [][]byte
	got   int
	// share is the shared copy (Config.Shared) the message being gathered has matched so
	// far: its pieces are not in parts, and no receive buffer is pinned for them.
	share *sharedMsg
	ready []readyMsg
	// one and oneSlice carry a message that lies in one piece to the codec without an
	// allocation (next): a codec does not keep the BufferSlice it is given beyond Unmarshal
	// (grpc-go frees it then); deliver clears one so that it pins no receive buffer.
	one      mem.SliceBuffer
	oneSlice [1]mem.Buffer
	head     int
}

// readyMsg is a whole received message, in place in the receive buffers: in one piece (b), or
// in the pieces of the DATA frames it came in (parts), some of them in receive buffers the
// transport has set aside for it (held, given back once it is delivered).
type readyMsg struct {
	b     []byte
	parts [][]byte
	held  []*[]byte
	at    time.Time
	// shared: parts is one piece, a shared copy's (Config.Shared).
	shared bool
}

var _ grpc.ClientStream = (*stream)(nil)

func (s *stream) Context() context.Context { return s.ctx }

// Trailer is the server's trailer metadata, once RecvMsg has returned an error.
func (s *stream) Trailer() metadata.MD { return s.trailer }

// Header waits for the server's response headers. It reads the connection: call it from the
// goroutine that receives. A stream without valid response headers (trailers only, as a stream
// refused at once; an HTTP error; a failed connection) gives nil, nil, and RecvMsg its status,
// as grpc-go does.
func (s *stream) Header() (metadata.MD, error) {
	s.t.rmu.Lock()
	defer s.t.rmu.Unlock()
	for !s.gotHeader && s.final == nil {
		s.advance()
	}
	if !s.headerValid {
		return nil, nil // none (trailers only, refused, failed): RecvMsg gives the status, as in grpc-go
	}
	return s.header, nil
}

// RecvMsg receives the next message into m; io.EOF when the server ended the stream with
// status OK, its status error otherwise.
func (s *stream) RecvMsg(m any) error {
	s.t.rmu.Lock()
	defer s.t.rmu.Unlock()
	for {
		if s.head < len(s.ready) {
			err := s.deliver(m)
			if s.head == len(s.ready) {
				s.t.shrink() // nothing in the buffer is referenced any more
			}
			return err
		}
		if s.final != nil {
			return s.final
		}
		s.advance()
	}
}

// advance handles the next frame, ending the stream when its context is done or the
// connection fails; t.rmu is held (RecvMsg and Header hold it throughout, so that the next
// stream's reader starts only once this one has left the transport's buffer).
func (s *stream) advance() {
	if err := s.ctx.Err(); err != nil {
		s.end(status.FromContextError(err).Err())
		return
	}
	if err := s.t.step(s); err != nil {
		s.end(s.t.readError(s, err))
	}
}

// abandon ends the receive side of a stream the transport has moved on from (the next stream
// opened): it must not read the transport's buffer any more. t.rmu is held.
func (s *stream) abandon() {
	for i := s.head; i < len(s.ready); i++ {
		s.t.putAll(s.ready[i].held)
	}
	s.ready, s.head = nil, 0
	if !s.recvDone {
		err := status.Error(codes.Canceled, "h2client: the stream was cancelled")
		if ctxErr := s.ctx.Err(); ctxErr != nil {
			err = status.FromContextError(ctxErr).Err()
		}
		s.recvDone, s.final = true, err
	}
	s.dropGathered()
}

// dropGathered drops the message being gathered, if any: the receive buffers set aside for it
// go back to the pool.
func (s *stream) dropGathered() {
	s.parts, s.share, s.t.gather = nil, nil, 0
	s.t.putAll(s.t.kept)
	s.t.kept, s.t.pinned = nil, false
}

// deliver hands the next ready message to the codec. Its frame is kept small (the message's
// fields are taken out of line): the codec decodes below it, and the deepest decode decides
// how far every receive goroutine's stack grows, and so how many collections it takes to shrink
// back once the client is idle.
func (s *stream) deliver(m any) error {
	data, held := s.next()
	err := s.codec.Unmarshal(data, m)
	s.one = nil
	s.c.stampAt, s.c.sharedN = time.Time{}, 0
	s.t.putAll(held)
	if err != nil {
		err = status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
		s.endLocal(err)
		return err
	}
	return nil
}

// next takes the next ready message off the queue: its bytes for the codec, with its receive
// stamp given to the Conn, and the receive buffers to give back once the codec is done.
//
//go:noinline
func (s *stream) next() (mem.BufferSlice, []*[]byte) {
	r := &s.ready[s.head]
	s.one = r.b
	s.oneSlice[0] = &s.one
	data, n := mem.BufferSlice(s.oneSlice[:]), len(r.b)
	if r.parts != nil {
		// The codec reads the pieces where they are: a codec that needs the message whole
		// gathers it (mem.BufferSlice.Materialize), one that compares it with what it knows
		// need not.
		data, n = make(mem.BufferSlice, len(r.parts)), 0
		for i, p := range r.parts {
			data[i] = mem.SliceBuffer(p)
			n += len(p)
		}
	}
	s.c.stampAt, s.c.stampN = r.at, n
	s.c.sharedN = 0
	if r.shared {
		s.c.sharedN = n
	}
	held := r.held
	*r = readyMsg{}
	s.head++
	if s.head == len(s.ready) {
		s.ready, s.head = s.ready[:0], 0
	}
	return data, held
}

// take reads gRPC messages out of a DATA frame's data.
func (s *stream) take(b []byte) {
	for len(b) > 0 && !s.recvDone {
		if s.preN < len(s.pre) {
			k := copy(s.pre[s.preN:], b)
			s.preN += k
			b = b[k:]
			if s.preN < len(s.pre) {
				return
			}
			if s.pre[0] != 0 {
				s.endLocal(status.Error(codes.Internal, "grpc: compressed flag set, though the client accepts no message encoding"))
				return
			}
			n := binary.BigEndian.Uint32(s.pre[1:])
			if int64(n) > int64(s.t.cfg.MaxRecvMsgSize) {
				s.endLocal(status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, s.t.cfg.MaxRecvMsgSize))
				return
			}
			s.msgLen, s.got = int(n), 0
			if len(b) >= s.msgLen {
				s.ready = append(s.ready, readyMsg{b: b[:s.msgLen], at: s.t.at})
				b = b[s.msgLen:]
				s.preN = 0
				continue
			}
		}
		// A message longer than what is left of the frame: its pieces stay where they were
		// read, and the receive buffer they lie in is pinned (transport.drop), unless they
		// are a shared copy's bytes (Config.Shared).
		k := min(len(b), s.msgLen-s.got)
		if k == 0 {
			// The frame ended with the message's length prefix: its bytes come next.
			s.t.gather = s.msgLen - s.got
			return
		}
		if s.got == 0 {
			s.share = s.t.cfg.Shared.join(b[:k], s.msgLen)
		}
		if s.share != nil && !s.share.follow(s.got, b[:k]) {
			if next := s.t.cfg.Shared.diverge(s.share, s.got, b[:k], s.msgLen); next != nil {
				s.share = next
			} else {
				// From here on the message's bytes are its own: before them, the copy's.
				s.parts = append(s.parts, s.share.prefix(s.got))
				s.share = nil
				s.t.cfg.Shared.diverged.Add(1)
			}
		}
		if s.share == nil {
			s.parts = append(s.parts, b[:k])
			s.t.pinned = true
		}
		s.got += k
		b = b[k:]
		s.t.gather = s.msgLen - s.got
		if s.got == s.msgLen {
			shared := s.share != nil
			if shared {
				s.parts = append(s.parts, s.share.prefix(s.got))
				s.share = nil
				s.t.cfg.Shared.followed.Add(1)
			}
			// Whole. Until it is delivered no read is made (RecvMsg delivers what is ready
			// first), so the buffer it lies in need not stay pinned.
			s.ready = append(s.ready, readyMsg{parts: s.parts, held: s.t.kept, at: s.t.at, shared: shared})
			s.parts, s.preN = nil, 0
			s.t.kept, s.t.pinned = nil, false
		}
	}
}

// headers takes a decoded header block of the stream: the response headers, or its trailers
// (endStream, also for a trailers-only response).
func (s *stream) headers(fields []hpack.HeaderField, endStream bool) {
	md := metadata.MD{}
	var httpStatus, contentType string
	for _, f := range fields {
		switch {
		case f.Name == ":status":
			httpStatus = f.Value
		case strings.HasPrefix(f.Name, ":"):
		case f.Name == "content-type":
			contentType = f.Value
		default:
			v := f.Value
			if strings.HasSuffix(f.Name, "-bin") {
				if d, err := decodeBinHeader(v); err == nil {
					v = string(d)
				}
			}
			md[f.Name] = append(md[f.Name], v)
		}
	}
	if !s.gotHeader {
		if len(httpStatus) == 3 && httpStatus[0] == '1' && !endStream {
			return // an informational response: the real one follows
		}
		s.gotHeader = true
		s.header = md
		if !endStream {
			if err := checkResponse(httpStatus, contentType); err != nil {
				s.endLocal(err)
				return
			}
			s.headerValid = true
			return
		}
		// Trailers-only.
		s.header = nil
		if _, ok := md["grpc-status"]; !ok {
			if err := checkResponse(httpStatus, contentType); err != nil {
				s.end(err)
				return
			}
		}
	}
	if !endStream {
		return // more headers without END_STREAM: not gRPC; ignored as grpc-go does
	}
	err := statusFrom(md)
	for _, k := range []string{"grpc-status", "grpc-message", "grpc-status-details-bin"} {
		delete(md, k) // the status, not metadata (as in grpc-go)
	}
	s.trailer = md
	s.end(err)
}

// checkResponse is grpc-go's judgement of a response's headers: an HTTP status other than
// 200 maps to a code, a content type other than gRPC's is Internal.
func checkResponse(httpStatus, contentType string) error {
	if httpStatus != "200" {
		code := codes.Unknown
		switch httpStatus {
		case "400":
			code = codes.Internal
		case "401":
			code = codes.Unauthenticated
		case "403":
			code = codes.PermissionDenied
		case "404":
			code = codes.Unimplemented
		case "429", "502", "503", "504":
			code = codes.Unavailable
		}
		return status.Errorf(code, "unexpected HTTP status code received from server: %s; content-type %q", httpStatus, contentType)
	}
	if contentType != "application/grpc" && !strings.HasPrefix(contentType, "application/grpc+") && !strings.HasPrefix(contentType, "application/grpc;") {
		return status.Errorf(codes.Internal, "transport: received unexpected content-type %q", contentType)
	}
	return nil
}

// statusFrom is the stream's end from its trailers: io.EOF for OK.
func statusFrom(md metadata.MD) error {
	vs := md["grpc-status"]
	if len(vs) == 0 {
		return status.Error(codes.Unknown, "server closed the stream without a grpc-status")
	}
	code, err := strconv.ParseUint(vs[0], 10, 32)
	if err != nil {
		return status.Errorf(codes.Unknown, "transport: malformed grpc-status %q", vs[0])
	}
	if code == 0 {
		return io.EOF
	}
	msg := ""
	if m := md["grpc-message"]; len(m) > 0 {
		msg = decodeGrpcMessage(m[0])
	}
	if d := md["grpc-status-details-bin"]; len(d) > 0 {
		var p spb.Status
		if proto.Unmarshal([]byte(d[0]), &p) == nil && p.GetCode() == int32(code) {
			return status.FromProto(&p).Err()
		}
	}
	return status.Error(codes.Code(code), msg)
}

// end ends the receive side with err (io.EOF: status OK) and drops what it had queued to send.
func (s *stream) end(err error) {
	if s.recvDone {
		return
	}
	s.recvDone = true
	s.final = err
	s.dropGathered()
	s.t.mu.Lock()
	s.done = true // the writers (under wmu) drop what is queued
	s.t.mu.Unlock()
	if s.head == len(s.ready) {
		s.t.shrink()
	}
}

// endLocal ends the stream on the client's side: the server is told (RST_STREAM CANCEL), as
// grpc-go's client does when a call fails on its side.
func (s *stream) endLocal(err error) {
	if s.recvDone {
		return
	}
	s.end(err)
	_ = s.t.writeControl(func(b []byte) []byte { return appendRSTStream(b, s.id, errCodeCancel) })
}

// reset ends the stream the server reset.
func (s *stream) reset(code uint32) {
	c, what := codes.Internal, "stream terminated by RST_STREAM with error code: "+strconv.FormatUint(uint64(code), 10)
	switch code {
	case errCodeRefusedStream:
		c = codes.Unavailable
	case errCodeCancel:
		c = codes.Canceled
	case errCodeEnhanceYourCalm, errCodeFlowControl:
		c = codes.ResourceExhausted
	case errCodeInadequateSecure:
		c = codes.PermissionDenied
	}
	s.end(status.Error(c, what))
}

// cancel is the stream's context's AfterFunc: it resets the stream and interrupts a read in
// progress (the reader then ends the stream with the context's error).
func (s *stream) cancel() {
	defer close(s.afterDone)
	t := s.t
	t.mu.Lock()
	if s.done {
		t.mu.Unlock()
		return
	}
	s.cancelled = true
	t.mu.Unlock()
	// The reader first (a writer stuck on a full socket must not hold the cancel up).
	if t.nc != nil {
		_ = t.nc.SetReadDeadline(time.Unix(1, 0))
	}
	_ = t.writeControl(func(b []byte) []byte { return appendRSTStream(b, s.id, errCodeCancel) })
}

// finished says whether the stream has ended (or is ending: its context is done).
func (s *stream) finished() bool {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return s.done || s.cancelled || s.ctx.Err() != nil
}

// detach waits for the stream's AfterFunc, if it started, so that its deadline cannot
// interrupt the next stream.
func (s *stream) detach() {
	if s.stop != nil && !s.stop() {
		<-s.afterDone
	}
}

// SendMsg sends m and returns without waiting for the server: what the flow-control windows
// do not allow yet is queued and sent by the receiving goroutine as the server opens them
// (grpc-go's reader does the same), so a sender never waits on a reader. io.EOF once the
// stream has ended (RecvMsg then says why).
func (s *stream) SendMsg(m any) error {
	data, err := s.codec.Marshal(m)
	if err != nil {
		return status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	n := data.Len()
	total := 5 + n
	t := s.t
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	if s.done || s.cancelled || s.sendClosed || t.err != nil {
		t.mu.Unlock()
		data.Free()
		return io.EOF
	}
	// The length prefix and the list of parts are the stream's scratch (wmu is held): the
	// parts are framed into a write buffer, and what is queued is copied (enqueue).
	pre := s.wpre[:]
	pre[0] = 0
	binary.BigEndian.PutUint32(pre[1:], uint32(n))
	parts := append(s.wparts[:0], pre)
	for _, b := range data {
		parts = append(parts, b.ReadOnlyData())
	}
	defer func() { clear(parts); s.wparts = parts[:0] }()
	if w := min(t.connSendWin, s.sendWin); s.sendN == 0 && w > 0 {
		// The common case: as much as the windows allow now, framed straight from the
		// codec's buffers; only what does not fit is queued.
		now := int(min(w, int64(total)))
		t.connSendWin -= int64(now)
		s.sendWin -= int64(now)
		frame := t.peerMaxFrame
		t.mu.Unlock()
		left, err := s.writeData(parts, now, frame, false)
		if err != nil || now == total {
			data.Free()
			if err != nil {
				return io.EOF
			}
			return nil
		}
		t.mu.Lock()
		if s.done || s.cancelled || t.err != nil {
			t.mu.Unlock()
			data.Free()
			return io.EOF
		}
		s.enqueue(left, total-now, data)
		t.mu.Unlock()
		if err := s.flushLocked(); err != nil {
			return io.EOF
		}
		return nil
	}
	s.enqueue(parts, total, data)
	t.mu.Unlock()
	if err := s.flushLocked(); err != nil {
		return io.EOF
	}
	return nil
}

// CloseSend ends the client's side of the stream (after what is queued).
func (s *stream) CloseSend() error {
	t := s.t
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	if s.sendClosed || s.done || s.cancelled || t.err != nil {
		t.mu.Unlock()
		return nil
	}
	s.sendClosed, s.sendEnd = true, true
	t.mu.Unlock()
	_ = s.flushLocked()
	return nil
}

// flushQueued sends what the stream queued, as far as the windows now allow.
func (s *stream) flushQueued() error {
	if !s.queued() {
		return nil
	}
	s.t.wmu.Lock()
	defer s.t.wmu.Unlock()
	err := s.flushLocked()
	if err == io.EOF {
		return nil // the stream ended: nothing to send
	}
	return err
}

// queued says whether the stream has bytes (or its end) waiting for window.
func (s *stream) queued() bool {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return s.sendN > 0 || s.sendEnd && !s.endSent
}

// flushLocked sends as much of the queue as the windows allow; t.wmu is held.
func (s *stream) flushLocked() error {
	t := s.t
	t.mu.Lock()
	if s.done || s.cancelled || t.err != nil {
		s.releaseQueue()
		t.mu.Unlock()
		return io.EOF
	}
	k := int(max(0, min(int64(s.sendN), t.connSendWin, s.sendWin)))
	end := s.sendEnd && !s.endSent && k == s.sendN
	if k == 0 && !end {
		t.mu.Unlock()
		return nil
	}
	t.connSendWin -= int64(k)
	s.sendWin -= int64(k)
	frame := t.peerMaxFrame
	var parts [][]byte // the queued parts that hold the k bytes, not the whole queue
	for i, have := 0, 0; i < len(s.sendq) && have < k; i++ {
		for _, p := range s.sendq[i].parts {
			if have >= k {
				break
			}
			parts, have = append(parts, p), have+len(p)
		}
	}
	t.mu.Unlock()
	// The queue stays valid: only writers, who hold wmu, change it.
	_, err := s.writeData(parts, k, frame, end)
	t.mu.Lock()
	s.dequeue(k)
	if s.done {
		s.releaseQueue()
	}
	if end {
		s.endSent = true
	}
	t.mu.Unlock()
	return err
}

// queued is one message (or what is left of it) waiting for window: the parts still to send,
// which lie in data (given back once they are sent) or, for the small ones, in the stream's
// own copies.
type queued struct {
	parts [][]byte
	data  mem.BufferSlice
}

// smallPart is the longest part the queue copies rather than refers to (the message's
// length prefix lives on the sender's stack).
const smallPart = 64

// enqueue appends n bytes from parts, which lie in data or are small, to the send queue; the
// queue owns data from then on. t.mu and t.wmu are held. The queue refers to the codec's
// buffers rather than copying them: an ACK can list a thousand names (shared bytes, for a
// fleet's SotW EDS requests), and a server that is late to open its window would otherwise
// cost a copy of every one.
func (s *stream) enqueue(parts [][]byte, n int, data mem.BufferSlice) {
	q := queued{parts: make([][]byte, 0, len(parts)), data: data}
	for _, p := range parts {
		if len(p) <= smallPart {
			p = append([]byte(nil), p...)
		}
		q.parts = append(q.parts, p)
	}
	s.sendq = append(s.sendq, q)
	s.sendN += n
}

// dequeue drops the first k bytes of the queue, giving back the buffers of the messages sent
// whole; t.mu and t.wmu are held.
func (s *stream) dequeue(k int) {
	s.sendN -= k
	i := 0
	for ; i < len(s.sendq) && k > 0; i++ {
		q := &s.sendq[i]
		for len(q.parts) > 0 && k > 0 {
			c := min(k, len(q.parts[0]))
			if q.parts[0] = q.parts[0][c:]; len(q.parts[0]) == 0 {
				q.parts = q.parts[1:]
			}
			k -= c
		}
		if len(q.parts) > 0 {
			break
		}
		q.data.Free()
		*q = queued{}
	}
	s.sendq = s.sendq[i:]
	if len(s.sendq) == 0 {
		s.sendq = nil
	}
}

// releaseQueue empties the send queue and gives its buffers back; t.mu and t.wmu are held
// (no write reads the queue).
func (s *stream) releaseQueue() {
	for i := range s.sendq {
		s.sendq[i].data.Free()
	}
	s.sendq, s.sendN = nil, 0
}

// writeData writes the first total bytes from parts as DATA frames of at most frame bytes,
// the last with END_STREAM when end, and returns what is left of parts; t.wmu is held and
// the windows were taken.
func (s *stream) writeData(parts [][]byte, total, frame int, end bool) ([][]byte, error) {
	t := s.t
	frames := max(1, (total+frame-1)/frame)
	bp := t.cfg.Pool.Get(total + frames*frameHeaderLen)
	defer t.cfg.Pool.Put(bp)
	b := (*bp)[:0]
	for left := total; ; {
		fl := min(left, frame)
		var flags byte
		if end && fl == left {
			flags = flagEndStream
		}
		b = appendFrameHeader(b, fl, frameData, flags, s.id)
		left -= fl
		for fl > 0 {
			p := parts[0]
			c := min(fl, len(p))
			b = append(b, p[:c]...)
			if parts[0] = p[c:]; len(parts[0]) == 0 {
				parts = parts[1:]
			}
			fl -= c
		}
		if left == 0 {
			break
		}
	}
	return parts, t.writeLocked(b)
}

// encodeTimeout is gRPC's grpc-timeout value for d: at most 8 digits and a unit.
func encodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "0n"
	}
	for _, u := range []struct {
		unit string
		d    time.Duration
	}{{"n", time.Nanosecond}, {"u", time.Microsecond}, {"m", time.Millisecond}, {"S", time.Second}, {"M", time.Minute}, {"H", time.Hour}} {
		if v := (d + u.d - 1) / u.d; v <= 99999999 {
			return strconv.FormatInt(int64(v), 10) + u.unit
		}
	}
	return "99999999H"
}

func encodeBinHeader(v string) string { return base64.RawStdEncoding.EncodeToString([]byte(v)) }

func decodeBinHeader(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// decodeGrpcMessage undoes grpc-message's percent-encoding.
func decodeGrpcMessage(m string) string {
	if !strings.Contains(m, "%") {
		return m
	}
	var b strings.Builder
	for i := 0; i < len(m); i++ {
		if m[i] == '%' && i+2 < len(m) {
			if v, err := strconv.ParseUint(m[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(m[i])
	}
	return b.String()
}
