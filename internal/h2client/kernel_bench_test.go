package h2client

import (
	"net"
	"syscall"
	"testing"

	"github.com/xdslab/xdslab/internal/rxstamp"
)

// BenchmarkKernelCalls measures, on this machine, the system calls a pushed response costs a
// fake Envoy (issue 28, docs/performance.md): what any transport pays, whatever its Go code.
// Each sub-benchmark runs on a connected loopback pair made non-blocking, calling the kernel
// directly (no poller):
//   - null: a call that does nothing (getppid), the price of entering and leaving the kernel;
//   - empty-recvmsg: a recvmsg with the stamp's control buffer on a socket with nothing to
//     read, as the read that finds the socket empty after each frame;
//   - write-120: a 120-byte write (an EDS ACK's size) whose peer does not read it yet;
//   - write-recvmsg-120: that write and the peer's recvmsg of it, with SO_TIMESTAMPNS on, as a
//     response and its read, both sides' kernel work in one thread.
//
// A batching transport (io_uring) would save the entries and exits (null, about once per
// call), not the TCP work the rest measure.
func BenchmarkKernelCalls(b *testing.B) {
	b.Run("null", func(b *testing.B) {
		for b.Loop() {
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		}
	})
	b.Run("empty-recvmsg", func(b *testing.B) {
		_, r := kernelPair(b)
		buf, oob := make([]byte, 16<<10), make([]byte, rxstamp.OOBSize)
		for b.Loop() {
			if _, _, _, _, err := syscall.Recvmsg(r, buf, oob, 0); err != syscall.EAGAIN {
				b.Fatalf("recvmsg of an empty socket: %v, want EAGAIN", err)
			}
		}
	})
	b.Run("write-120", func(b *testing.B) {
		w, r := kernelPair(b)
		msg, buf := make([]byte, 120), make([]byte, 1<<20)
		i := 0
		for b.Loop() {
			if _, err := syscall.Write(w, msg); err != nil {
				b.Fatal(err)
			}
			// Drain now and then, outside the timed part, so the write never finds the
			// buffers full.
			if i++; i%256 == 0 {
				b.StopTimer()
				for {
					if n, _ := syscall.Read(r, buf); n <= 0 {
						break
					}
				}
				b.StartTimer()
			}
		}
	})
	b.Run("write-recvmsg-120", func(b *testing.B) {
		w, r := kernelPair(b)
		if err := syscall.SetsockoptInt(r, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
			b.Fatal(err)
		}
		msg, buf, oob := make([]byte, 120), make([]byte, 16<<10), make([]byte, rxstamp.OOBSize)
		for b.Loop() {
			if _, err := syscall.Write(w, msg); err != nil {
				b.Fatal(err)
			}
			if n, _, _, _, err := syscall.Recvmsg(r, buf, oob, 0); err != nil || n != len(msg) {
				b.Fatalf("recvmsg: %d bytes, %v", n, err)
			}
		}
	})
}

// kernelPair returns the descriptors of a connected loopback TCP pair, non-blocking, closed
// when b ends.
func kernelPair(b *testing.B) (w, r int) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		c.Close()
		b.Fatal(err)
	}
	fd := func(conn net.Conn) int {
		f, err := conn.(*net.TCPConn).File() // a blocking duplicate: made non-blocking below
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		n := int(f.Fd())
		if err := syscall.SetNonblock(n, true); err != nil {
			b.Fatal(err)
		}
		return n
	}
	b.Cleanup(func() { c.Close(); s.Close() })
	return fd(c), fd(s)
}
