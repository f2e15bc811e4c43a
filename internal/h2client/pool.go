package h2client

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// Pool is a buffer pool with a tier at every power of two from 256 B to 16 MiB (larger
// buffers are not kept) that, unlike grpc-go's, does not clear what it hands out: the transport
// only reads bytes it has written into a buffer, so clearing 32 KiB on every read would be
// pure cost. Safe for concurrent use; a fleet shares one among its connections.
type Pool struct {
	tiers [maxShift - minShift + 1]sync.Pool
}

const minShift, maxShift = 8, 24

var _ mem.BufferPool = (*Pool)(nil)

// NewPool returns an empty Pool.
func NewPool() *Pool { return &Pool{} }

// tier is the index of the smallest tier holding n bytes, or -1 above the largest.
func tier(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	s := bits.Len(uint(n - 1))
	if s > maxShift {
		return -1
	}
	return s - minShift
}

// Get returns a buffer of length n, its contents unspecified.
func (p *Pool) Get(n int) *[]byte {
	t := tier(n)
	if t < 0 {
		b := make([]byte, n)
		return &b
	}
	if v, ok := p.tiers[t].Get().(*[]byte); ok {
		*v = (*v)[:n]
		return v
	}
	b := make([]byte, n, 1<<(t+minShift))
	return &b
}

// Put gives a buffer back; one not from Get's tiers is dropped.
func (p *Pool) Put(b *[]byte) {
	c := cap(*b)
	t := tier(c)
	if t < 0 || c != 1<<(t+minShift) {
		return
	}
	p.tiers[t].Put(b)
}
