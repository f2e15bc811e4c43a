package push

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
)

// ErrClosed is returned by Dequeue once the queue is closed.
var ErrClosed = errors.New("push queue closed")

// Queue is the per-connection push queue shared by the pusher (Enqueue) and the push workers
// (Dequeue, MarkDone) and the connections (Remove on disconnect): a Pending behind one mutex,
// with a condition variable so that Dequeue blocks until a connection is waiting.
type Queue[K comparable] struct {
	now func() time.Time

	mu     sync.Mutex
	cond   *sync.Cond
	p      *Pending[K]
	closed bool
}

// NewQueue returns an empty queue that stamps enqueue times with now (nil means time.Now).
func NewQueue[K comparable](now func() time.Time) *Queue[K] {
	if now == nil {
		now = time.Now
	}
	q := &Queue[K]{now: now, p: NewPending[K]()}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Enqueue adds req for conn: queued at the back, merged into the request already waiting for
// conn, or deferred until MarkDone(conn) if conn is being processed. After Close it does
// nothing and returns Ignored.
func (q *Queue[K]) Enqueue(conn K, req *model.PushRequest) EnqueueResult {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Ignored
	}
	r := q.p.Enqueue(conn, req, now)
	if r == Queued {
		q.cond.Signal()
	}
	return r
}

// Dequeue waits until a connection is waiting and hands it out; the caller pushes to it and
// then calls MarkDone (even if the push failed). It returns ctx.Err() when ctx is done and
// ErrClosed once the queue is closed.
func (q *Queue[K]) Dequeue(ctx context.Context) (Item[K], error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		if q.closed {
			return Item[K]{}, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return Item[K]{}, err
		}
		if it, ok := q.p.Dequeue(); ok {
			return it, nil
		}
		if stop == nil {
			// Wake this waiter when ctx ends. Broadcast, because Signal could wake another; it
			// also means that if Enqueue's Signal went to this waiter just as ctx ended, the
			// other waiters are woken too and one of them takes the item.
			stop = context.AfterFunc(ctx, func() {
				q.mu.Lock()
				q.cond.Broadcast()
				q.mu.Unlock()
			})
		}
		q.cond.Wait()
	}
}

// MarkDone ends the processing of conn; a request that arrived meanwhile is queued.
func (q *Queue[K]) MarkDone(conn K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.p.MarkDone(conn) {
		q.cond.Signal()
	}
}

// Remove forgets conn (it disconnected) and drops its pending request; it reports whether
// one was dropped.
func (q *Queue[K]) Remove(conn K) (dropped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.p.Remove(conn)
}

// Known is the number of connections with an entry (see Pending.Known).
func (q *Queue[K]) Known() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.p.Known()
}

// Len is the number of connections waiting.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.p.Len()
}

// Processing is the number of connections dequeued and not yet marked done.
func (q *Queue[K]) Processing() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.p.Processing()
}

// Close wakes every Dequeue, which returns ErrClosed from now on; Enqueue is ignored. It is
// safe to call more than once.
func (q *Queue[K]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}
