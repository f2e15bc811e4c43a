package xds

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/controlplane/model"
)

// pushItem is a connection's turn in a push: the merged request, when it was enqueued, and a
// channel the owner closes once every response of the push is written.
type pushItem struct {
	req      *model.PushRequest
	enqueued time.Time
	dequeued time.Time
	done     chan struct{}
}

// conn is the gRPC shell of one ADS stream: its owner goroutine (serve) feeds the stream's
// session with requests, push turns and flow-control timer ticks, and performs the effects
// (writes, metrics, logs, the timer, the syncz status). Every field is the owner's, except
// status, which /debug/syncz reads under statusMu, and closed.
type conn struct {
	id     string
	srv    *Server
	stream grpc.ServerStream
	sess   *session
	since  time.Time

	pushCh chan pushItem
	closed chan struct{}
	// With a send timeout, responses are written by a sender goroutine so the owner can give
	// up on a client that does not read (see sendMsg).
	sendq     chan any
	sendErr   chan error
	sendTimer *time.Timer
	// unread is what the client has not shown it read: a write that cannot block skips the
	// sender goroutine.
	unread unread
	// timer fires at the session's flow-control deadline (armed; zero: stopped).
	timer *time.Timer
	armed time.Time

	statusMu sync.Mutex
	status   ClientStatus
}

// isClosed reports whether the stream has ended (closeConn ran).
func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// proxy is the stream's client, nil before its first request.
func (c *conn) proxy() *model.Proxy { return c.sess.proxy }

// register makes the stream reachable by pushes once its first request named the proxy.
func (c *conn) register() {
	p := c.sess.proxy
	c.id = p.NodeID + "-" + strconv.FormatUint(c.srv.connSeq.Add(1), 10)
	c.statusMu.Lock()
	c.status.NodeID, c.status.Namespace, c.status.Generator, c.status.Delta = p.NodeID, p.Namespace, p.Generator, c.sess.delta
	c.statusMu.Unlock()
	c.srv.register(c)
}

// apply performs a session step's effects; start is when the input was taken (push time is
// measured from it). A returned error ends the stream.
func (c *conn) apply(e *effects, start time.Time) error {
	if e.register {
		if h := c.srv.beforeRegister; h != nil {
			h()
		}
		c.register()
		if c.sess.src.current() != c.sess.base {
			// A push published after the first answer was built copied the connections
			// before this one joined them: it would never reach this stream, which would keep
			// the older state until a later change reached it. (istiod registers before it
			// initializes the proxy for the same reason.) A full push of its own brings it up
			// to date; what it already holds is not sent again.
			c.srv.catchUp(c)
		}
	}
	for i := range e.out {
		r := &e.out[i]
		resp := r.encode()
		if err := c.sendMsg(resp); err != nil {
			return err
		}
		now := c.srv.now()
		c.unread.written(r.nonce, resp.size())
		c.sess.written(r.typeURL, r.nonce, now)
		c.srv.metrics.ResponseSent(r.typeURL, resp.size(), now.Sub(start))
	}
	for _, n := range e.notes {
		c.record(n)
	}
	if e.status || len(e.out) > 0 {
		c.statusMu.Lock() // Syncz copies Types under the lock, so they are updated in place
		c.status.Types = c.sess.typeStatuses(c.status.Types)
		c.statusMu.Unlock()
	}
	c.arm(e.deadline)
	return e.err
}

// record makes one measurement or log record.
func (c *conn) record(n note) {
	m, log := c.srv.metrics, c.srv.log
	switch n.kind {
	case noteExpiredNonce:
		m.ExpiredNonce(n.typeURL)
	case noteAcked:
		m.Acked(n.typeURL, n.wait)
	case noteRejected:
		m.Rejected(n.typeURL)
		log.Warn("xDS client rejected a response (NACK)", "conn", c.id, "node", c.proxy().NodeID, "type", n.typeURL,
			"nonce", n.nonce, "version", n.version, "code", n.code.String(), "error", n.msg)
	case noteGenError:
		log.Warn("generating resources", "node", c.proxy().NodeID, "type", n.typeURL, "error", n.msg)
	}
}

// arm sets the flow-control timer to at (zero: stops it).
func (c *conn) arm(at time.Time) {
	if at.Equal(c.armed) {
		return
	}
	c.armed = at
	if at.IsZero() {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	d := max(at.Sub(c.srv.now()), 0)
	if c.timer == nil {
		c.timer = time.NewTimer(d)
		return
	}
	c.timer.Reset(d)
}

// timerC is the flow-control timer's channel (nil, never ready, while none is armed).
func (c *conn) timerC() <-chan time.Time {
	if c.timer == nil || c.armed.IsZero() {
		return nil
	}
	return c.timer.C
}

// sendMsg writes m to the stream. With a send timeout it hands m to the connection's sender
// goroutine and gives up after the timeout: the error ends the stream, which unblocks the
// sender, and the push worker waiting on this connection is released. A write that cannot block
// (unread.cannotBlock) is made directly: the common case, an Envoy that answers each response,
// costs no hand-off.
func (c *conn) sendMsg(m any) error {
	timeout := c.srv.opts.SendTimeout
	if timeout <= 0 || c.unread.cannotBlock() {
		return c.stream.SendMsg(m)
	}
	if c.sendq == nil {
		c.sendq, c.sendErr = make(chan any), make(chan error, 1)
		c.sendTimer = time.NewTimer(timeout)
		go func(q <-chan any, errs chan<- error) {
			for m := range q {
				errs <- c.stream.SendMsg(m)
			}
		}(c.sendq, c.sendErr)
	} else {
		c.sendTimer.Reset(timeout)
	}
	c.sendq <- m // the sender is idle: the previous send finished or ended the stream
	select {
	case err := <-c.sendErr:
		c.sendTimer.Stop()
		return err
	case <-c.sendTimer.C:
		c.srv.log.Warn("closing a stream whose client does not read", "node", c.proxy().NodeID, "timeout", timeout)
		return status.Errorf(codes.DeadlineExceeded, "the client did not read a response for %v; closing the stream", timeout)
	}
}

// unread tracks the bytes written to the stream that its client has not shown it read. A client
// that answers a response (ACK or NACK: a request carrying its nonce) has read it and every
// response before it, since a stream is ordered; so the transport has written them to the
// socket. grpc-go's server blocks a write only while the stream's unwritten bytes exceed its
// write quota (64 KiB): below that share of unread bytes, a write cannot block.
type unread struct {
	sent, read int64  // bytes written so far; bytes up to the last answered response
	pending    []mark // responses not yet answered, oldest first
}

type mark struct {
	nonce string
	end   int64 // sent after this response
}

const (
	// directWriteLimit is the unread bytes below which a write is made without the sender: half
	// of grpc-go's per-stream write quota (defaultWriteQuota, 64 KiB).
	directWriteLimit = 32 << 10
	// maxPending bounds the responses remembered for a client that does not answer; the
	// oldest are forgotten, which only keeps their bytes counted as unread.
	maxPending = 64
)

// written records a response of size bytes written with nonce.
func (u *unread) written(nonce string, size int) {
	u.sent += int64(size)
	if len(u.pending) == maxPending {
		u.pending = append(u.pending[:0], u.pending[1:]...)
	}
	u.pending = append(u.pending, mark{nonce: nonce, end: u.sent})
}

// answered records a request carrying nonce (empty, or a nonce not pending: nothing learned).
func (u *unread) answered(nonce string) {
	if nonce == "" {
		return
	}
	for i, m := range u.pending {
		if m.nonce == nonce {
			u.read = m.end
			u.pending = append(u.pending[:0], u.pending[i+1:]...)
			return
		}
	}
}

// cannotBlock reports whether a write now cannot wait for the client.
func (u *unread) cannotBlock() bool { return u.sent-u.read < directWriteLimit }

// streamEnded maps a receive error to the handler's return value.
func streamEnded(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Canceled {
		return nil
	}
	return err
}
