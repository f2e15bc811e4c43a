package push

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func fixedNow(tm time.Time) func() time.Time { return func() time.Time { return tm } }

func TestQueueDequeueBlocksUntilEnqueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewQueue[string](fixedNow(at(5)))
		got := make(chan Item[string], 1)
		go func() {
			it, err := q.Dequeue(context.Background())
			if err != nil {
				t.Errorf("Dequeue: %v", err)
			}
			got <- it
		}()
		synctest.Wait()
		select {
		case it := <-got:
			t.Fatalf("Dequeue returned %v from an empty queue", it)
		default:
		}
		if r := q.Enqueue("a", req(1)); r != Queued {
			t.Fatalf("Enqueue = %v", r)
		}
		it := <-got
		if it.Conn != "a" || !it.Enqueued.Equal(at(5)) || q.Processing() != 1 || q.Len() != 0 {
			t.Fatalf("item %+v, processing %d, len %d", it, q.Processing(), q.Len())
		}
	})
}

func TestQueueDequeueContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewQueue[string](nil)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := q.Dequeue(ctx)
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Dequeue returned %v, want context.Canceled", err)
		}
		// A done context wins over a waiting item, and leaves it queued.
		q.Enqueue("a", req(1))
		if _, err := q.Dequeue(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Dequeue with a done context returned %v", err)
		}
		if q.Len() != 1 {
			t.Fatalf("Len %d, want 1", q.Len())
		}
	})
}

func TestQueueClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewQueue[string](nil)
		const waiters = 3
		errc := make(chan error, waiters)
		for range waiters {
			go func() {
				_, err := q.Dequeue(context.Background())
				errc <- err
			}()
		}
		synctest.Wait()
		q.Close()
		q.Close()
		for range waiters {
			if err := <-errc; !errors.Is(err, ErrClosed) {
				t.Fatalf("Dequeue returned %v, want ErrClosed", err)
			}
		}
		if r := q.Enqueue("a", req(1)); r != Ignored {
			t.Fatalf("Enqueue after Close = %v, want ignored", r)
		}
	})
}

// TestQueueMarkDoneWakesWorker: a request deferred while its connection is processed is
// handed to a waiting worker as soon as MarkDone queues it.
func TestQueueMarkDoneWakesWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewQueue[string](nil)
		q.Enqueue("a", req(1))
		if _, err := q.Dequeue(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r := q.Enqueue("a", req(2)); r != Deferred {
			t.Fatalf("Enqueue = %v, want deferred", r)
		}
		got := make(chan Item[string], 1)
		go func() {
			it, _ := q.Dequeue(context.Background())
			got <- it
		}()
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("a connection being processed was handed out again")
		}
		q.MarkDone("a")
		if it := <-got; it.Conn != "a" || fmt.Sprint(ids(it.Req)) != "[2]" {
			t.Fatalf("item %v %v", it.Conn, ids(it.Req))
		}
	})
}

// TestQueueCancelledWaiterPassesWakeup: a waiter whose context ends must not swallow the
// wake-up meant for another waiter. Waiter 1 waits first, so Enqueue's Signal may go to it
// (sync.Cond wakes the oldest waiter) just as its context ends; the item must still reach
// waiter 2.
func TestQueueCancelledWaiterPassesWakeup(t *testing.T) {
	for range 5 {
		synctest.Test(t, func(t *testing.T) {
			q := NewQueue[string](nil)
			ctx1, cancel1 := context.WithCancel(context.Background())
			defer cancel1()
			errc := make(chan error, 1)
			go func() {
				_, err := q.Dequeue(ctx1)
				errc <- err
			}()
			synctest.Wait()
			got := make(chan Item[string], 1)
			go func() {
				it, _ := q.Dequeue(context.Background())
				got <- it
			}()
			synctest.Wait()
			cancel1()
			q.Enqueue("a", req(1))
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled waiter returned %v", err)
			}
			synctest.Wait()
			select {
			case it := <-got:
				if it.Conn != "a" {
					t.Fatalf("got %v", it.Conn)
				}
			default:
				q.Close()
				<-got
				t.Fatalf("item stranded in the queue (len %d) while a worker waits", q.Len())
			}
		})
	}
}

// TestQueueConcurrentWorkers: many producers and workers; every connection is processed by
// one worker at a time and every event is delivered exactly once.
func TestQueueConcurrentWorkers(t *testing.T) {
	q := NewQueue[int](nil)
	const (
		conns     = 50
		producers = 4
		perProd   = 2000
		workers   = 8
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		busy     = map[int]bool{}
		seen     = map[uint64]int{}
		wg       sync.WaitGroup
		producer sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for {
				it, err := q.Dequeue(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				if busy[it.Conn] {
					t.Errorf("worker %d: connection %d handed out while processing", w, it.Conn)
				}
				busy[it.Conn] = true
				for _, id := range ids(it.Req) {
					seen[id]++
				}
				mu.Unlock()
				mu.Lock()
				busy[it.Conn] = false
				mu.Unlock()
				q.MarkDone(it.Conn)
			}
		})
	}
	for p := range producers {
		producer.Go(func() {
			for i := range perProd {
				id := uint64(p*perProd + i + 1)
				q.Enqueue(int(id)%conns, req(id))
			}
		})
	}
	producer.Wait()
	// Wait for the queue to drain: every event delivered.
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == producers*perProd {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %d delivered %d times", id, n)
		}
	}
}
