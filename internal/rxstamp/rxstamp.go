package rxstamp

import (
	"encoding/binary"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Source gives the receive time of the message being decoded when it is n bytes long (ok
// false: no stamp, or the message is not the one it has).
type Source interface {
	Take(n int) (at time.Time, ok bool)
}

// OOBSize is the control buffer a recvmsg needs for the stamp and the TCP_INQ hint.
var OOBSize = syscall.CmsgSpace(16) + syscall.CmsgSpace(4)

// Enable asks the kernel to timestamp what the socket receives (SO_TIMESTAMPNS).
func Enable(raw syscall.RawConn) error {
	return setsockopt(raw, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS)
}

// EnableInq asks the kernel to say, with each recvmsg of a TCP socket, how many bytes it
// still holds unread (TCP_INQ, Linux 4.18 and later; Inq reads it).
func EnableInq(raw syscall.RawConn) error {
	return setsockopt(raw, syscall.IPPROTO_TCP, unix.TCP_INQ)
}

func setsockopt(raw syscall.RawConn, level, opt int) error {
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), level, opt, 1)
	}); err != nil {
		return err
	}
	return serr
}

// Kernel reads the SCM_TIMESTAMPNS of a recvmsg's control data (zero when absent), without
// allocating.
func Kernel(oob []byte) time.Time {
	data := findCmsg(oob, syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS)
	if len(data) < 16 {
		return time.Time{}
	}
	sec := int64(binary.NativeEndian.Uint64(data[0:8]))
	nsec := int64(binary.NativeEndian.Uint64(data[8:16]))
	return time.Unix(sec, nsec)
}

// Inq reads the TCP_CM_INQ of a recvmsg's control data, without allocating: how many bytes
// the socket held unread when the read returned, and not 0 when the peer's FIN has arrived
// (the kernel's hint to read on, to find the end); ok false when absent.
func Inq(oob []byte) (n int, ok bool) {
	data := findCmsg(oob, syscall.IPPROTO_TCP, unix.TCP_CM_INQ)
	if len(data) < 4 {
		return 0, false
	}
	return int(int32(binary.NativeEndian.Uint32(data[0:4]))), true
}

// findCmsg returns the data of the control message of level and type in oob (nil when absent).
func findCmsg(oob []byte, level, typ int32) []byte {
	hdr := syscall.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return nil
		}
		if h.Level == level && h.Type == typ {
			return oob[cmsgAlign(hdr):l]
		}
		oob = oob[min(cmsgAlign(l), len(oob)):]
	}
	return nil
}

func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}
