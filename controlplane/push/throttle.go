package push

import (
	"context"
	"fmt"
)

// MaxConcurrency caps DefaultConcurrency, as Istio caps PILOT_PUSH_THROTTLE.
const MaxConcurrency = 100

// DefaultConcurrency is Istio's default push throttle for a machine with cores CPU cores:
// min(15 + 5 × cores, 100). The caller passes the core count from its configuration
// (cmd/ reads runtime.GOMAXPROCS); fewer than 1 core counts as 1.
func DefaultConcurrency(cores int) int {
	return min(15+5*max(cores, 1), MaxConcurrency)
}

// Throttle bounds how many pushes run at once: a counting semaphore whose Acquire honours a
// context. It is safe for concurrent use.
type Throttle struct {
	slots chan struct{}
}

// NewThrottle returns a throttle admitting limit pushes at a time.
func NewThrottle(limit int) (*Throttle, error) {
	if limit < 1 {
		return nil, fmt.Errorf("push throttle is %d: it must be at least 1 (default: %d on 2 cores, min(15+5×cores, %d))", limit, DefaultConcurrency(2), MaxConcurrency)
	}
	return &Throttle{slots: make(chan struct{}, limit)}, nil
}

// Acquire takes a slot, waiting while all are taken. It returns ctx.Err() if ctx ends first,
// and then holds no slot.
func (t *Throttle) Acquire(ctx context.Context) error {
	// A done context wins even when a slot is free, so a stopping server starts no new push.
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case t.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquire takes a slot if one is free.
func (t *Throttle) TryAcquire() bool {
	select {
	case t.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release returns a slot taken by Acquire or TryAcquire. Releasing more than was acquired is
// a programming error and panics.
func (t *Throttle) Release() {
	select {
	case <-t.slots:
	default:
		panic("push: Throttle.Release without a matching Acquire")
	}
}

// InUse is the number of slots taken.
func (t *Throttle) InUse() int { return len(t.slots) }

// Limit is the number of slots.
func (t *Throttle) Limit() int { return cap(t.slots) }
