package fleet

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// newBufferPool returns the pool a fleet's connections read frames and messages into: a tier at
// every power of two from 256 B to 16 MiB. grpc-go's default pool jumps from 32 KiB to 1 MiB,
// so every message just over 32 KiB (a CDS response of a few hundred clusters) would take, and
// clear, a 1 MiB buffer.
func newBufferPool() mem.BufferPool {
	exps := make([]uint8, 0, 17)
	for e := uint8(8); e <= 24; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		// Only exponents above 63 fail; these are constants.
		return mem.DefaultBufferPool()
	}
	return p
}

// bufferPoolOption is the dial option that installs a fleet's buffer pool.
func bufferPoolOption(p mem.BufferPool) grpc.DialOption { return experimental.WithBufferPool(p) }
