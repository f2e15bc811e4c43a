package push

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

const benchConns = 1000

// benchReqs returns one endpoint push request per round, shared by all connections (the
// debouncer hands one request to every connection).
func benchReqs(rounds int) []*model.PushRequest {
	out := make([]*model.PushRequest, rounds)
	for i := range out {
		out[i] = &model.PushRequest{
			ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: "svc", Namespace: "ns"}: {}},
			Reasons:        map[model.TriggerReason]int{model.ReasonEndpointUpdate: 1},
		}
	}
	return out
}

// BenchmarkPending: one push cycle to 1,000 connections on the pure core: each connection
// enqueued, then (round 2) merged into its waiting request, then dequeued and marked done.
func BenchmarkPending(b *testing.B) {
	for _, rounds := range []int{1, 2} {
		name := map[int]string{1: "enqueue+dequeue", 2: "enqueue+merge+dequeue"}[rounds]
		b.Run(name, func(b *testing.B) {
			reqs := benchReqs(rounds)
			p := NewPending[int]()
			now := time.Unix(1, 0)
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range reqs {
					for c := range benchConns {
						p.Enqueue(c, r, now)
					}
				}
				for range benchConns {
					it, _ := p.Dequeue()
					p.MarkDone(it.Conn)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchConns, "ns/conn")
		})
	}
}

// BenchmarkQueue: the same cycle through the locked shell from one goroutine (the cost of
// the lock and the clock read).
func BenchmarkQueue(b *testing.B) {
	reqs := benchReqs(1)
	q := NewQueue[int](nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for c := range benchConns {
			q.Enqueue(c, reqs[0])
		}
		for range benchConns {
			it, err := q.Dequeue(ctx)
			if err != nil {
				b.Fatal(err)
			}
			q.MarkDone(it.Conn)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchConns, "ns/conn")
}

// BenchmarkQueueWorkers: one push cycle to 1,000 connections with a producer and
// DefaultConcurrency(2) = 25 workers contending for the queue, as the push pipeline runs it.
func BenchmarkQueueWorkers(b *testing.B) {
	reqs := benchReqs(1)
	workers := DefaultConcurrency(2)
	q := NewQueue[int](nil)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		done = make(chan struct{}, benchConns)
	)
	for range workers {
		wg.Go(func() {
			for {
				it, err := q.Dequeue(ctx)
				if err != nil {
					return
				}
				q.MarkDone(it.Conn)
				done <- struct{}{}
			}
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		for c := range benchConns {
			q.Enqueue(c, reqs[0])
		}
		for range benchConns {
			<-done
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchConns, "ns/conn")
	cancel()
	wg.Wait()
}

// BenchmarkFlow: a push held and released by the ACK, per type.
func BenchmarkFlow(b *testing.B) {
	f := NewFlow(DefaultFlowOptions())
	r := benchReqs(1)[0]
	now := time.Unix(1, 0)
	b.ReportAllocs()
	for b.Loop() {
		f.Sent(eds, "n", now)
		if f.Push(eds, r, now) != nil {
			b.Fatal("not held")
		}
		if res := f.Ack(eds, "n", now); res.Release == nil {
			b.Fatal("not released")
		}
	}
}
