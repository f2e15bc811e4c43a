package push

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

func TestDefaultConcurrency(t *testing.T) {
	tests := []struct{ cores, want int }{
		{-3, 20}, {0, 20}, {1, 20}, {2, 25}, {4, 35}, {8, 55}, {16, 95}, {17, 100}, {64, 100},
	}
	for _, tt := range tests {
		if got := DefaultConcurrency(tt.cores); got != tt.want {
			t.Errorf("DefaultConcurrency(%d) = %d, want %d", tt.cores, got, tt.want)
		}
	}
}

func TestNewThrottle(t *testing.T) {
	for _, limit := range []int{0, -1} {
		if _, err := NewThrottle(limit); err == nil || !strings.Contains(err.Error(), "must be at least 1") {
			t.Errorf("NewThrottle(%d): %v", limit, err)
		}
	}
	th, err := NewThrottle(3)
	if err != nil || th.Limit() != 3 || th.InUse() != 0 {
		t.Fatalf("NewThrottle(3) = %v, %v", th, err)
	}
}

func TestThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th, _ := NewThrottle(2)
		ctx := context.Background()
		if err := th.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if !th.TryAcquire() {
			t.Fatal("TryAcquire failed with a free slot")
		}
		if th.TryAcquire() {
			t.Fatal("TryAcquire succeeded with no free slot")
		}
		if th.InUse() != 2 {
			t.Fatalf("InUse %d", th.InUse())
		}
		// A third Acquire waits until a slot is released.
		acquired := make(chan error, 1)
		go func() { acquired <- th.Acquire(ctx) }()
		synctest.Wait()
		if len(acquired) != 0 {
			t.Fatal("Acquire did not wait for a slot")
		}
		th.Release()
		if err := <-acquired; err != nil {
			t.Fatal(err)
		}
		// A waiting Acquire gives up when its context ends, holding nothing.
		cctx, cancel := context.WithCancel(ctx)
		go func() { acquired <- th.Acquire(cctx) }()
		synctest.Wait()
		cancel()
		if err := <-acquired; !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire returned %v, want context.Canceled", err)
		}
		if th.InUse() != 2 {
			t.Fatalf("InUse %d after a cancelled Acquire, want 2", th.InUse())
		}
		// A done context wins even with a free slot.
		th.Release()
		if err := th.Acquire(cctx); !errors.Is(err, context.Canceled) || th.InUse() != 1 {
			t.Fatalf("Acquire with a done context: %v, in use %d", err, th.InUse())
		}
		th.Release()
		defer func() {
			if recover() == nil {
				t.Error("Release without Acquire did not panic")
			}
		}()
		th.Release()
	})
}

// TestThrottleBound: many goroutines never exceed the limit.
func TestThrottleBound(t *testing.T) {
	const limit = 3
	th, _ := NewThrottle(limit)
	var (
		mu       sync.Mutex
		cur, top int
		wg       sync.WaitGroup
	)
	for range 50 {
		wg.Go(func() {
			for range 20 {
				if err := th.Acquire(context.Background()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				cur++
				top = max(top, cur)
				mu.Unlock()
				mu.Lock()
				cur--
				mu.Unlock()
				th.Release()
			}
		})
	}
	wg.Wait()
	if top > limit || top < 1 {
		t.Fatalf("at most %d held at once, limit %d", top, limit)
	}
}
