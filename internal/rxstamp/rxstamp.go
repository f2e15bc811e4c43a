package rxstamp

import (
	"encoding/binary"
	"syscall"
	"time"
	"unsafe"
)

// Source gives the receive time of the message being decoded when it is n bytes long (ok
// false: no stamp, or the message is not the one it has).
type Source interface {
	Take(n int) (at time.Time, ok bool)
}

// OOBSize is the control buffer a recvmsg needs for the stamp.
var OOBSize = syscall.CmsgSpace(16)

// Enable asks the kernel to timestamp what the socket receives (SO_TIMESTAMPNS).
func Enable(raw syscall.RawConn) error {
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

// Kernel reads the SCM_TIMESTAMPNS of a recvmsg's control data (zero when absent), without
// allocating.
func Kernel(oob []byte) time.Time {
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
