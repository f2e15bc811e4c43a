package h2client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/internal/rxstamp"
)

// Defaults of Config.
const (
	DefaultMaxRecvMsgSize = 4 << 20 // grpc-go's
	DefaultReadBufferSize = 32 << 10
	DefaultWindow         = 256 << 20 // Envoy's initial stream and connection windows
	DefaultDialTimeout    = 20 * time.Second
	// DefaultKeepaliveTimeout is grpc-go's keepalive timeout.
	DefaultKeepaliveTimeout = 20 * time.Second
	DefaultUserAgent        = "xdslab-fakeenvoy"
)

// Config configures a Conn.
type Config struct {
	// Target is the server's host:port, dialled over TCP. Required.
	Target string
	// Authority is the :authority of every stream (default: Target).
	Authority string
	// Pool is where receive buffers come from (nil: grpc-go's default).
	Pool mem.BufferPool
	// Shared, when set, lets this connection's streams share one copy of a large message
	// with the other connections that set the same Shared (see Shared).
	Shared *Shared
	// MaxRecvMsgSize bounds a received message (0: DefaultMaxRecvMsgSize); a longer one ends
	// its stream with ResourceExhausted, as in grpc-go.
	MaxRecvMsgSize int
	// ReadBufferSize is the size of the receive buffer (0: DefaultReadBufferSize; at least one
	// whole frame, 16 KiB and its header); it grows, up to 256 KiB, while a larger message comes
	// in.
	ReadBufferSize int
	// Window is the receive window of each stream and of the connection (0: DefaultWindow).
	Window uint32
	// WindowUpdate is how many received bytes a window gives back at once: a WINDOW_UPDATE is
	// sent once a stream, or the connection, has received that many since its last one (0:
	// half the window, as Envoy's HTTP/2 codec; grpc-go gives back a quarter). At most Window.
	WindowUpdate uint32
	// KeepaliveTime, when > 0, pings the server once the connection has read nothing for that
	// long while a stream is open, and KeepaliveTimeout (0: DefaultKeepaliveTimeout) later
	// fails the connection if it has still read nothing: grpc-go's client keepalive
	// (keepalive.ClientParameters), which istio-agent's connection to istiod runs with 30s and
	// 10s. Envoy's ADS connection has none by default.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// DialTimeout bounds a connect (0: DefaultDialTimeout).
	DialTimeout time.Duration
	// UserAgent is the user-agent header (empty: DefaultUserAgent).
	UserAgent string
}

func (c Config) withDefaults() Config {
	if c.Authority == "" {
		c.Authority = c.Target
	}
	if c.Pool == nil {
		c.Pool = mem.DefaultBufferPool()
	}
	if c.MaxRecvMsgSize <= 0 {
		c.MaxRecvMsgSize = DefaultMaxRecvMsgSize
	}
	if c.ReadBufferSize <= 0 {
		c.ReadBufferSize = DefaultReadBufferSize
	}
	c.ReadBufferSize = max(c.ReadBufferSize, frameHeaderLen+maxFrameSize)
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	c.Window = min(max(c.Window, defaultWindow), maxWindow)
	if c.WindowUpdate == 0 || c.WindowUpdate > c.Window {
		c.WindowUpdate = c.Window / 2
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.KeepaliveTime > 0 && c.KeepaliveTimeout <= 0 {
		c.KeepaliveTimeout = DefaultKeepaliveTimeout
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c
}

// Conn is a client connection carrying one stream at a time; it dials on the first stream
// and again after the connection failed or was sent GOAWAY. Its methods are safe for
// concurrent use, but a second stream cannot open until the first has ended.
type Conn struct {
	cfg Config
	// dial opens the transport's byte stream (tests replace it).
	dial func(ctx context.Context) (*transport, error)

	mu     sync.Mutex
	t      *transport
	closed bool

	// The receive stamp of the message being handed to the codec, set by RecvMsg on the
	// receiving goroutine right before it calls Unmarshal, which calls Take on that goroutine.
	stampAt time.Time
	stampN  int
	// sharedN is the length of the message being handed to the codec when it lies in a
	// shared copy (Config.Shared), else 0.
	sharedN int
}

var _ grpc.ClientConnInterface = (*Conn)(nil)

// New returns a Conn to cfg.Target; nothing is dialled until the first stream.
func New(cfg Config) (*Conn, error) {
	if cfg.Target == "" {
		return nil, errors.New("h2client: a target (host:port) is required")
	}
	if _, _, err := net.SplitHostPort(cfg.Target); err != nil {
		return nil, fmt.Errorf("h2client: target %q is not host:port: %w", cfg.Target, err)
	}
	c := &Conn{cfg: cfg.withDefaults()}
	c.dial = c.dialTCP
	return c, nil
}

// Take returns the kernel's receive time of the message being decoded when it is n bytes
// long (see the package doc); the codec calls it from Unmarshal.
func (c *Conn) Take(n int) (time.Time, bool) {
	if c.stampAt.IsZero() || c.stampN != n {
		return time.Time{}, false
	}
	at := c.stampAt
	c.stampAt = time.Time{}
	return at, true
}

// Immutable reports whether the message being decoded, n bytes long, lies in a shared copy
// (Config.Shared): bytes nothing changes or reuses, which the codec may keep instead of
// copying. The codec calls it from Unmarshal.
func (c *Conn) Immutable(n int) bool { return n > 0 && c.sharedN == n }

// Invoke is not supported: ADS has no unary methods.
func (c *Conn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	return status.Error(codes.Unimplemented, "h2client: unary calls are not supported")
}

// Close closes the connection; streams on it fail with Unavailable (or Canceled when their
// context is done) and no new one opens.
func (c *Conn) Close() error {
	c.mu.Lock()
	t := c.t
	c.t, c.closed = nil, true
	c.mu.Unlock()
	if t != nil {
		t.close(errors.New("connection closed by the client"))
	}
	return nil
}

// Disconnect closes the current connection, as Close does, but the Conn stays usable: the
// next stream dials a new one (a fake Envoy's restart).
func (c *Conn) Disconnect() {
	c.mu.Lock()
	t := c.t
	c.t = nil
	c.mu.Unlock()
	if t != nil {
		t.close(errors.New("connection closed by the client"))
	}
}

// NewStream opens a bidirectional stream to method. The call options may carry the codec
// (grpc.ForceCodecV2); others are ignored. Only client and server streaming is supported.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	var codec encoding.CodecV2
	for _, o := range opts {
		if f, ok := o.(grpc.ForceCodecV2CallOption); ok {
			codec = f.CodecV2
		}
	}
	if codec == nil {
		codec = encoding.GetCodecV2("proto")
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	t, err := c.transport(ctx)
	if err != nil {
		return nil, err
	}
	s, err := t.open(ctx, c, codec, method)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// transport returns the connection's transport, dialling a new one when there is none or
// the last cannot take another stream.
func (c *Conn) transport(ctx context.Context) (*transport, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, status.Error(codes.Canceled, "h2client: the connection is closed")
	}
	if c.t != nil {
		if err := c.t.reusable(); err == nil {
			return c.t, nil
		}
		c.t.close(errors.New("replaced by a new connection"))
		c.t = nil
	}
	t, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Errorf(codes.Unavailable, "connection error: %v", err)
	}
	c.t = t
	return t, nil
}

// dialTCP connects to the target and starts HTTP/2 on it.
func (c *Conn) dialTCP(ctx context.Context) (*transport, error) {
	d := net.Dialer{Timeout: c.cfg.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", c.cfg.Target)
	if err != nil {
		return nil, err
	}
	src, err := newSocketSource(nc.(*net.TCPConn))
	if err != nil {
		nc.Close()
		return nil, err
	}
	t := newTransport(&c.cfg, nc, src)
	if err := t.start(); err != nil {
		nc.Close()
		return nil, err
	}
	t.startKeepalive()
	return t, nil
}

// source is how a transport reads: into the buffer into.buffer returns, once data is there,
// with the kernel's receive time of what it read (zero when not known). A read that finds
// nothing calls into.idle before it waits, so that no buffer is held while the socket is quiet.
type source interface {
	recv(into receiver) (n int, at time.Time, err error)
}

// receiver is where a source reads to (the transport): an interface rather than two funcs,
// so that a read allocates no closures (a fake Envoy reads once or twice a response).
type receiver interface {
	// buffer returns the room to read into.
	buffer() []byte
	// idle is called when the socket has nothing to read, before the read waits.
	idle()
}

// socketSource reads a TCP socket with recvmsg and its SO_TIMESTAMPNS stamps.
type socketSource struct {
	raw    syscall.RawConn
	oob    []byte
	stamps bool

	// The read in progress: readFn (s.read, made once) is what raw.Read calls, into is where
	// it reads, and n, oobn and rerr what recvmsg returned.
	readFn  func(fd uintptr) bool
	into    receiver
	n, oobn int
	rerr    error
}

func newSocketSource(tc *net.TCPConn) (*socketSource, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &socketSource{raw: raw, oob: make([]byte, rxstamp.OOBSize)}
	s.readFn = s.read
	s.stamps = rxstamp.Enable(raw) == nil
	return s, nil
}

func (s *socketSource) recv(into receiver) (int, time.Time, error) {
	s.into = into
	err := s.raw.Read(s.readFn)
	s.into = nil
	n, oobn, rerr := s.n, s.oobn, s.rerr
	s.rerr = nil
	if err != nil {
		return 0, time.Time{}, err
	}
	if rerr != nil {
		return 0, time.Time{}, rerr
	}
	if n == 0 {
		return 0, time.Time{}, errEOF
	}
	var at time.Time
	if s.stamps {
		at = rxstamp.Kernel(s.oob[:oobn])
	}
	return n, at, nil
}

// queued is how many bytes the socket holds not read yet (FIONREAD), without reading them;
// -1 when it cannot tell.
func (s *socketSource) queued() int {
	n := -1
	_ = s.raw.Control(func(fd uintptr) {
		v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		if err == nil {
			n = v
		}
	})
	return n
}

// read is one recvmsg into s.into's buffer; false (wait, then call again) when the socket is
// empty.
func (s *socketSource) read(fd uintptr) bool {
	s.n, s.oobn, _, _, s.rerr = syscall.Recvmsg(int(fd), s.into.buffer(), s.oob, 0)
	if s.rerr == syscall.EAGAIN {
		s.into.idle()
		return false
	}
	return true
}

var errEOF = errors.New("EOF")
