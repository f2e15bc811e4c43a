package rxstamp

import (
	"encoding/binary"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
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
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := Enable(raw); err != nil {
		t.Skipf("the kernel does not timestamp TCP receives here: %v", err)
	}
	peer := <-accepted
	defer peer.Close()
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
