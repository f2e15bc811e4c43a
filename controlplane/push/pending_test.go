package push

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(msec int) time.Time { return t0.Add(time.Duration(msec) * time.Millisecond) }

// req is a request for one event that names one endpoint key of its own (its id), so merges
// are visible in the merged request's keys (ids).
func req(id uint64) *model.PushRequest {
	return &model.PushRequest{Reasons: map[model.TriggerReason]int{model.ReasonEndpointUpdate: 1},
		ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: strconv.FormatUint(id, 10)}: {}}}
}

// ids are the event ids a request merged (see req), in increasing order.
func ids(r *model.PushRequest) []uint64 {
	var out []uint64
	for k := range r.ConfigsUpdated {
		id, err := strconv.ParseUint(k.Name, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("key %v names no event id", k))
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// qstep is one operation on a Pending and its expected outcome:
//
//	enq CONN ID (at ID ms)  → "queued" | "merged" | "deferred" | "ignored" (ID 0: nil request)
//	deq                     → "CONN [IDS] @MS" or "-"
//	done CONN               → "requeued" | "-"
//	rm CONN                 → "dropped" | "-"
//	len                     → "QUEUED/PROCESSING"
type qstep struct {
	op, conn string
	id       uint64
	want     string
}

func runQueue(t *testing.T, steps []qstep) {
	t.Helper()
	p := NewPending[string]()
	for i, s := range steps {
		var got string
		switch s.op {
		case "enq":
			var r *model.PushRequest
			if s.id != 0 {
				r = req(s.id)
			}
			got = p.Enqueue(s.conn, r, at(int(s.id))).String()
		case "deq":
			got = "-"
			if it, ok := p.Dequeue(); ok {
				got = fmt.Sprintf("%s %v @%d", it.Conn, ids(it.Req), it.Enqueued.Sub(t0).Milliseconds())
				if it.Req.Count() != len(ids(it.Req)) {
					t.Errorf("step %d: request counts %d events for %d ids", i, it.Req.Count(), len(ids(it.Req)))
				}
			}
		case "done":
			got = "-"
			if p.MarkDone(s.conn) {
				got = "requeued"
			}
		case "rm":
			got = "-"
			if p.Remove(s.conn) {
				got = "dropped"
			}
		case "len":
			got = fmt.Sprintf("%d/%d", p.Len(), p.Processing())
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if got != s.want {
			t.Errorf("step %d (%s %s %d): got %q, want %q", i, s.op, s.conn, s.id, got, s.want)
		}
	}
}

func TestPending(t *testing.T) {
	tests := []struct {
		name  string
		steps []qstep
	}{
		{
			name: "FIFO order",
			steps: []qstep{
				{"deq", "", 0, "-"},
				{"enq", "a", 1, "queued"},
				{"enq", "b", 2, "queued"},
				{"enq", "c", 3, "queued"},
				{"len", "", 0, "3/0"},
				{"deq", "", 0, "a [1] @1"},
				{"deq", "", 0, "b [2] @2"},
				{"deq", "", 0, "c [3] @3"},
				{"deq", "", 0, "-"},
				{"len", "", 0, "0/3"},
			},
		},
		{
			name: "a newer request merges into the pending one, which keeps its place and time",
			steps: []qstep{
				{"enq", "a", 1, "queued"},
				{"enq", "b", 2, "queued"},
				{"enq", "a", 3, "merged"},
				{"enq", "a", 4, "merged"},
				{"len", "", 0, "2/0"},
				{"deq", "", 0, "a [1 3 4] @1"},
				{"deq", "", 0, "b [2] @2"},
			},
		},
		{
			name: "a request for a connection being processed is re-queued at MarkDone",
			steps: []qstep{
				{"enq", "a", 1, "queued"},
				{"enq", "b", 2, "queued"},
				{"deq", "", 0, "a [1] @1"},
				{"enq", "a", 5, "deferred"},
				{"enq", "a", 6, "deferred"},
				{"len", "", 0, "1/1"},
				{"deq", "", 0, "b [2] @2"},
				{"deq", "", 0, "-"}, // a is still processing: not handed out twice
				{"enq", "c", 7, "queued"},
				{"done", "a", 0, "requeued"},
				{"len", "", 0, "2/1"},
				{"deq", "", 0, "c [7] @7"},
				{"deq", "", 0, "a [5 6] @5"},
				{"done", "a", 0, "-"},
				{"done", "b", 0, "-"},
				{"done", "c", 0, "-"},
				{"len", "", 0, "0/0"},
				{"enq", "a", 9, "queued"}, // absent again after MarkDone
			},
		},
		{
			name: "MarkDone of a connection not processing does nothing",
			steps: []qstep{
				{"done", "x", 0, "-"},
				{"enq", "a", 1, "queued"},
				{"done", "a", 0, "-"},
				{"len", "", 0, "1/0"},
				{"deq", "", 0, "a [1] @1"},
			},
		},
		{
			name: "Remove drops a queued request and keeps the order of the others",
			steps: []qstep{
				{"enq", "a", 1, "queued"},
				{"enq", "b", 2, "queued"},
				{"enq", "c", 3, "queued"},
				{"rm", "b", 0, "dropped"},
				{"rm", "b", 0, "-"},
				{"len", "", 0, "2/0"},
				{"deq", "", 0, "a [1] @1"},
				{"deq", "", 0, "c [3] @3"},
				{"deq", "", 0, "-"},
			},
		},
		{
			name: "a connection removed and re-added goes to the back",
			steps: []qstep{
				{"enq", "a", 1, "queued"},
				{"enq", "b", 2, "queued"},
				{"rm", "a", 0, "dropped"},
				{"enq", "a", 3, "queued"},
				{"deq", "", 0, "b [2] @2"},
				{"deq", "", 0, "a [3] @3"},
				{"deq", "", 0, "-"},
			},
		},
		{
			name: "Remove while processing: the deferred request is dropped, MarkDone is a no-op",
			steps: []qstep{
				{"enq", "a", 1, "queued"},
				{"deq", "", 0, "a [1] @1"},
				{"rm", "a", 0, "-"},
				{"enq", "a", 2, "queued"}, // a new connection with the same key
				{"deq", "", 0, "a [2] @2"},
				{"rm", "a", 0, "-"},
				{"done", "a", 0, "-"},
				{"len", "", 0, "0/0"},
				{"enq", "b", 3, "queued"},
				{"deq", "", 0, "b [3] @3"},
				{"enq", "b", 4, "deferred"},
				{"rm", "b", 0, "dropped"},
				{"done", "b", 0, "-"},
				{"deq", "", 0, "-"},
				{"len", "", 0, "0/0"},
			},
		},
		{
			name: "nil request is ignored",
			steps: []qstep{
				{"enq", "a", 0, "ignored"},
				{"len", "", 0, "0/0"},
				{"deq", "", 0, "-"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runQueue(t, tt.steps) })
	}
}

// TestPendingModel drives a Pending with random operations and checks it against a naive
// model (a slice scanned linearly), including after many compactions.
func TestPendingModel(t *testing.T) {
	type mentry struct {
		conn     int
		ids      []uint64
		enqueued time.Time
	}
	rng := rand.New(rand.NewPCG(7, 9))
	p := NewPending[int]()
	var queue []mentry              // waiting, in order
	processing := map[int]*mentry{} // conn → deferred request (ids nil: none)
	const conns = 40
	for i := range 50_000 {
		conn := rng.IntN(conns)
		now := at(i)
		switch op := rng.IntN(10); {
		case op < 5: // enqueue
			id := uint64(i + 1)
			got := p.Enqueue(conn, req(id), now)
			want := Queued
			if d, ok := processing[conn]; ok {
				want = Deferred
				if d.ids == nil {
					d.enqueued = now
				}
				d.ids = append(d.ids, id)
			} else if j := indexOf(queue, conn, func(e mentry) int { return e.conn }); j >= 0 {
				want = Merged
				queue[j].ids = append(queue[j].ids, id)
			} else {
				queue = append(queue, mentry{conn: conn, ids: []uint64{id}, enqueued: now})
			}
			if got != want {
				t.Fatalf("op %d: Enqueue(%d) = %v, want %v", i, conn, got, want)
			}
		case op < 8: // dequeue
			it, ok := p.Dequeue()
			if len(queue) == 0 {
				if ok {
					t.Fatalf("op %d: Dequeue gave %v from an empty queue", i, it.Conn)
				}
				continue
			}
			w := queue[0]
			queue = queue[1:]
			processing[w.conn] = &mentry{conn: w.conn}
			if !ok || it.Conn != w.conn || fmt.Sprint(ids(it.Req)) != fmt.Sprint(w.ids) || !it.Enqueued.Equal(w.enqueued) {
				t.Fatalf("op %d: Dequeue = %v %v %v, want %v %v %v", i, it.Conn, ids(it.Req), it.Enqueued, w.conn, w.ids, w.enqueued)
			}
		case op < 9: // mark done
			got := p.MarkDone(conn)
			d, ok := processing[conn]
			want := ok && d.ids != nil
			if ok {
				delete(processing, conn)
				if want {
					queue = append(queue, *d)
				}
			}
			if got != want {
				t.Fatalf("op %d: MarkDone(%d) = %v, want %v", i, conn, got, want)
			}
		default: // remove
			got := p.Remove(conn)
			want := false
			if d, ok := processing[conn]; ok {
				want = d.ids != nil
				delete(processing, conn)
			} else if j := indexOf(queue, conn, func(e mentry) int { return e.conn }); j >= 0 {
				want = true
				queue = append(queue[:j], queue[j+1:]...)
			}
			if got != want {
				t.Fatalf("op %d: Remove(%d) = %v, want %v", i, conn, got, want)
			}
		}
		if p.Len() != len(queue) || p.Processing() != len(processing) {
			t.Fatalf("op %d: Len %d Processing %d, want %d %d", i, p.Len(), p.Processing(), len(queue), len(processing))
		}
		if live := len(p.fifo) - p.head; live > 2*p.Len()+128 {
			t.Fatalf("op %d: FIFO holds %d slots for %d waiting connections: stale slots not compacted", i, live, p.Len())
		}
	}
}

func indexOf[T any](s []T, conn int, key func(T) int) int {
	for i, e := range s {
		if key(e) == conn {
			return i
		}
	}
	return -1
}

// TestPendingStaleSlotsBounded: connections that come and go while nobody dequeues (no
// workers yet, or all busy) must not grow the FIFO without bound.
func TestPendingStaleSlotsBounded(t *testing.T) {
	p := NewPending[int]()
	p.Enqueue(-1, req(1), at(0)) // one connection waits throughout
	for i := range 10_000 {
		p.Enqueue(i, req(2), at(i))
		p.Remove(i)
	}
	if live := len(p.fifo) - p.head; live > 2*p.Len()+64 {
		t.Fatalf("FIFO holds %d slots for %d waiting connections", live, p.Len())
	}
	if it, ok := p.Dequeue(); !ok || it.Conn != -1 {
		t.Fatalf("Dequeue = %v, %v", it.Conn, ok)
	}
	if _, ok := p.Dequeue(); ok {
		t.Fatal("a removed connection was handed out")
	}
}
