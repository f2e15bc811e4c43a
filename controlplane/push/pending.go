package push

import (
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
)

// EnqueueResult says what Enqueue did with a request.
type EnqueueResult int

// Enqueue results.
const (
	// Queued: the connection had nothing pending; it joined the back of the queue.
	Queued EnqueueResult = iota
	// Merged: the connection already had a request waiting; the new one was merged into it,
	// which keeps its place in the queue.
	Merged
	// Deferred: the connection is being processed (dequeued, not yet MarkDone); the request
	// waits, merged with any other deferred one, and joins the back of the queue on MarkDone.
	Deferred
	// Ignored: the request was nil.
	Ignored
)

func (r EnqueueResult) String() string {
	switch r {
	case Queued:
		return "queued"
	case Merged:
		return "merged"
	case Deferred:
		return "deferred"
	case Ignored:
		return "ignored"
	}
	return "unknown"
}

// Item is a connection's turn to be pushed.
type Item[K comparable] struct {
	Conn K
	// Req is every request enqueued for Conn since its last turn, merged.
	Req *model.PushRequest
	// Enqueued is when the earliest of those requests was enqueued: Dequeue time minus
	// Enqueued is the connection's queue time (pilot_proxy_queue_time).
	Enqueued time.Time
}

// Pending is the push queue's pure core: a FIFO of connections, each with at most one
// pending (merged) request, plus the set of connections being processed. It reads no clock
// (enqueue times are passed in), never blocks and is not safe for concurrent use: Queue wraps
// it with a lock, and a single goroutine may use it directly.
//
// A connection is in one of four states:
//
//	absent       Enqueue → queued.
//	queued       in the FIFO with one merged request. Enqueue → merged in place (the
//	             position and the first enqueue time are kept); Dequeue → processing.
//	processing   handed out by Dequeue. Enqueue → processing+deferred; MarkDone → absent
//	             (the entry is kept for reuse until Remove).
//	processing+deferred  Enqueue → merged into the deferred request; MarkDone → queued at
//	             the back, keeping the deferred request's first enqueue time.
//
// Remove makes any state absent and drops what was pending.
type Pending[K comparable] struct {
	entries    map[K]*entry
	fifo       []slot[K] // fifo[head:] in order; slots whose seq no longer matches are stale
	head       int
	seq        uint64
	queued     int
	processing int
}

// entry is a known connection. An entry stays after MarkDone (idle: not processing, no
// request), so a steady push cycle allocates nothing; Remove deletes it.
type entry struct {
	req        *model.PushRequest // the queued or deferred request; nil when none
	enqueued   time.Time
	seq        uint64 // the entry's slot in the FIFO, while queued
	processing bool
	owned      bool // req is the entry's own (merged here), not a caller's: merged into in place
}

// queuedAt reports whether e is waiting in the FIFO at slot seq.
func (e *entry) queuedAt(seq uint64) bool { return !e.processing && e.req != nil && e.seq == seq }

type slot[K comparable] struct {
	conn K
	seq  uint64
}

// NewPending returns an empty queue core.
func NewPending[K comparable]() *Pending[K] {
	return &Pending[K]{entries: make(map[K]*entry)}
}

// Len is the number of connections waiting in the queue (deferred requests of connections
// being processed are not counted until MarkDone queues them).
func (p *Pending[K]) Len() int { return p.queued }

// Processing is the number of connections dequeued and not yet marked done.
func (p *Pending[K]) Processing() int { return p.processing }

// Known is the number of connections the queue holds an entry for (waiting, processing or
// idle): each pins its key until Remove.
func (p *Pending[K]) Known() int { return len(p.entries) }

// Enqueue adds req for conn at now. req is not modified (requests are merged into new
// values).
func (p *Pending[K]) Enqueue(conn K, req *model.PushRequest, now time.Time) EnqueueResult {
	if req == nil {
		return Ignored
	}
	e, ok := p.entries[conn]
	switch {
	case !ok || (!e.processing && e.req == nil):
		if !ok {
			e = &entry{}
			p.entries[conn] = e
		}
		e.req, e.enqueued, e.owned = req, now, false
		p.push(conn, e)
		return Queued
	case e.processing:
		if e.req == nil {
			e.enqueued = now
		}
		e.req, e.owned = e.req.MergeOwned(req, e.owned)
		return Deferred
	default:
		e.req, e.owned = e.req.MergeOwned(req, e.owned)
		return Merged
	}
}

// Dequeue hands out the connection at the front, which is then processing until MarkDone or
// Remove. ok is false when no connection is waiting.
func (p *Pending[K]) Dequeue() (item Item[K], ok bool) {
	for p.head < len(p.fifo) {
		s := p.fifo[p.head]
		p.fifo[p.head] = slot[K]{} // let the key be collected
		p.head++
		e, live := p.entries[s.conn]
		if !live || !e.queuedAt(s.seq) {
			continue // removed, or re-queued behind: a stale slot
		}
		item = Item[K]{Conn: s.conn, Req: e.req, Enqueued: e.enqueued}
		e.req, e.enqueued, e.processing, e.owned = nil, time.Time{}, true, false
		p.queued--
		p.processing++
		p.compact()
		return item, true
	}
	p.fifo, p.head = p.fifo[:0], 0
	return item, false
}

// MarkDone ends conn's processing. A request that arrived meanwhile joins the back of the
// queue, and requeued is true. Marking a connection that is not processing does nothing.
func (p *Pending[K]) MarkDone(conn K) (requeued bool) {
	e, ok := p.entries[conn]
	if !ok || !e.processing {
		return false
	}
	e.processing = false
	p.processing--
	if e.req == nil {
		return false
	}
	p.push(conn, e)
	return true
}

// Remove forgets conn (it disconnected): a waiting or deferred request is dropped and a
// later MarkDone for it does nothing. dropped reports whether a request was pending.
func (p *Pending[K]) Remove(conn K) (dropped bool) {
	e, ok := p.entries[conn]
	if !ok {
		return false
	}
	delete(p.entries, conn)
	switch {
	case e.processing:
		p.processing--
	case e.req != nil:
		p.queued--
	}
	return e.req != nil
}

func (p *Pending[K]) push(conn K, e *entry) {
	p.seq++
	e.seq = p.seq
	p.fifo = append(p.fifo, slot[K]{conn: conn, seq: e.seq})
	p.queued++
	p.compact()
}

// compact bounds the FIFO's memory: it drops the consumed prefix once it is the larger part,
// and stale slots (left by Remove and re-queues) once they outnumber the live ones.
func (p *Pending[K]) compact() {
	live := len(p.fifo) - p.head
	if p.head > 64 && p.head >= live {
		n := copy(p.fifo, p.fifo[p.head:])
		clear(p.fifo[n:])
		p.fifo, p.head = p.fifo[:n], 0
	}
	if live > 64 && live > 2*p.queued {
		out := p.fifo[:0]
		for _, s := range p.fifo[p.head:] {
			if e, ok := p.entries[s.conn]; ok && e.queuedAt(s.seq) {
				out = append(out, s)
			}
		}
		clear(p.fifo[len(out):])
		p.fifo, p.head = out, 0
	}
}
