package fleet

import "testing"

func TestBufferPoolTiers(t *testing.T) {
	p := newBufferPool()
	for _, size := range []int{1, 256, 300, 32<<10 + 1, 1 << 20, 16 << 20} {
		buf := p.Get(size)
		if len(*buf) != size {
			t.Errorf("Get(%d) returned %d bytes", size, len(*buf))
		}
		// A tier at every power of two: never more than twice what was asked (from 256 B).
		if c := cap(*buf); c > 2*max(size, 256) {
			t.Errorf("Get(%d) has capacity %d, want at most %d", size, c, 2*max(size, 256))
		}
		p.Put(buf)
	}
}
