package rxstamp

import (
	"encoding/binary"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestKernelParses reads a stamp out of control data built by hand, after another message,
// and finds none in truncated or foreign data.
func TestKernelParses(t *testing.T) {
	want := time.Unix(1700000000, 123456789)
	ts := syscall.NsecToTimespec(want.UnixNano())
	stamp := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, ts.Sec, ts.Nsec)
	other := cmsg(syscall.SOL_IP, 1, 7, 0)
	for _, tt := range []struct {
		name string
		oob  []byte
		want time.Time
	}{
		{"stamp", stamp, want},
		{"after another", append(other, stamp...), want},
		{"none", other, time.Time{}},
		{"truncated", stamp[:len(stamp)-4], time.Time{}},
		{"empty", nil, time.Time{}},
	} {
		if got := Kernel(tt.oob); !got.Equal(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func cmsg(level, typ int32, a, b int64) []byte {
	b0 := make([]byte, syscall.CmsgSpace(16))
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&b0[0]))
	h.Level, h.Type = level, typ
	h.SetLen(syscall.CmsgLen(16))
	d := b0[syscall.CmsgLen(0):]
	binary.NativeEndian.PutUint64(d[0:8], uint64(a))
	binary.NativeEndian.PutUint64(d[8:16], uint64(b))
	return b0
}

// TestKernelStampsLoopback reads a real loopback socket with Enable and recvmsg: the stamp is no
// earlier than the write and no later than the read's return.
func TestKernelStampsLoopback(t *testing.T) {
	raw, peer := loopback(t)
	if err := Enable(raw); err != nil {
		t.Skipf("the kernel does not timestamp TCP receives here: %v", err)
	}
	buf, oob := make([]byte, 4096), make([]byte, OOBSize)
	// The first segments after the process first asks may come unstamped: send until one is.
	deadline := time.Now().Add(time.Minute)
	for {
		before := time.Now()
		if _, err := peer.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		var n, oobn int
		var rerr error
		if err := raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, 0)
			return rerr != syscall.EAGAIN
		}); err != nil || rerr != nil || n == 0 {
			t.Fatalf("recvmsg: %d bytes, %v, %v", n, err, rerr)
		}
		after := time.Now()
		if stamp := Kernel(oob[:oobn]); !stamp.IsZero() {
			if stamp.Before(before.Add(-time.Millisecond)) || stamp.After(after) {
				t.Errorf("kernel stamp %v outside [%v, %v]", stamp, before, after)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing stamped by the kernel in a minute")
		}
	}
}

// TestInqParses reads a TCP_CM_INQ out of control data built by hand, beside a stamp.
func TestInqParses(t *testing.T) {
	inq := make([]byte, syscall.CmsgSpace(4))
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&inq[0]))
	h.Level, h.Type = syscall.IPPROTO_TCP, unix.TCP_CM_INQ
	h.SetLen(syscall.CmsgLen(4))
	binary.NativeEndian.PutUint32(inq[syscall.CmsgLen(0):], 7)
	stamp := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, 1, 2)
	for _, tt := range []struct {
		name string
		oob  []byte
		n    int
		ok   bool
	}{
		{"inq", inq, 7, true},
		{"after a stamp", append(append([]byte(nil), stamp...), inq...), 7, true},
		{"none", stamp, 0, false},
		{"truncated", inq[:syscall.CmsgLen(0)+2], 0, false},
	} {
		if n, ok := Inq(tt.oob); n != tt.n || ok != tt.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tt.name, n, ok, tt.n, tt.ok)
		}
	}
}

// TestInqLoopback reads a real loopback socket with EnableInq: a read that takes all the
// socket holds says 0 left, one that leaves bytes says how many, and one that takes the last
// bytes before the peer's FIN says more to read (the FIN), as Linux documents.
func TestInqLoopback(t *testing.T) {
	raw, peer := loopback(t)
	if err := EnableInq(raw); err != nil {
		t.Skipf("no TCP_INQ here: %v", err)
	}
	// Both control messages, as the fleet's reads ask for them: OOBSize must hold the two.
	stamps := Enable(raw) == nil
	oob := make([]byte, OOBSize)
	var stamped bool // whether the last read carried a stamp
	read := func(size int) (int, int) {
		t.Helper()
		buf := make([]byte, size)
		var n, oobn, flags int
		var rerr error
		if err := raw.Read(func(fd uintptr) bool {
			n, oobn, flags, _, rerr = syscall.Recvmsg(int(fd), buf, oob, 0)
			return rerr != syscall.EAGAIN
		}); err != nil || rerr != nil {
			t.Fatalf("recvmsg: %v, %v", err, rerr)
		}
		if flags&syscall.MSG_CTRUNC != 0 {
			t.Fatalf("control data truncated: OOBSize %d is too small", len(oob))
		}
		left, ok := Inq(oob[:oobn])
		if !ok {
			t.Fatal("no TCP_CM_INQ with the read")
		}
		stamped = !Kernel(oob[:oobn]).IsZero()
		return n, left
	}
	// The first segments after the process first asks for stamps may come without one: read
	// until one has it, so that the reads below carry both control messages.
	for deadline := time.Now().Add(time.Minute); stamps; {
		if _, err := peer.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		read(64)
		if stamped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing stamped by the kernel in a minute")
		}
	}
	// The peer's writes on loopback are in the socket when Write returns.
	if _, err := peer.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	if n, left := read(4); n != 4 || left != 6 {
		t.Errorf("read 4 of 10: got %d bytes, %d left; want 4, 6", n, left)
	}
	if n, left := read(64); n != 6 || left != 0 {
		t.Errorf("read the rest: got %d bytes, %d left; want 6, 0", n, left)
	}
	if _, err := peer.Write([]byte("end")); err != nil {
		t.Fatal(err)
	}
	if err := peer.Close(); err != nil {
		t.Fatal(err)
	}
	if n, left := read(64); n != 3 || left == 0 {
		t.Errorf("read the last bytes before a FIN: got %d bytes, %d left; want 3 and more to read", n, left)
	}
}

// loopback connects a TCP socket to a peer on loopback: the socket's RawConn and the peer
// (both closed when the test ends).
func loopback(t *testing.T) (syscall.RawConn, net.Conn) {
	t.Helper()
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
		close(accepted)
	}()
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	peer, ok := <-accepted
	if !ok {
		t.Fatal("the listener accepted nothing")
	}
	t.Cleanup(func() { peer.Close() })
	return raw, peer
}
