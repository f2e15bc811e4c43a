package xds

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/controlplane/model"
)

// A connection that closes while a push is being queued for it (Push copied the connection
// list before it unregistered, and enqueues after) leaves no queue entry behind: the worker
// that dequeues it drops it, and Push itself removes what it enqueued for a closed one.
func TestClosedConnectionLeavesNoQueueEntry(t *testing.T) {
	s, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	req := &model.PushRequest{Full: true}
	// Late enqueue straight into the queue, as the Push that raced the close does.
	late := s.newConn(nil, false)
	s.register(late)
	s.closeConn(late)
	s.queue.Enqueue(late, req)
	// A closed connection still in the list Push reads (the copy raced unregister).
	raced := s.newConn(nil, false)
	close(raced.closed)
	s.mu.Lock()
	s.conns[raced] = struct{}{}
	s.mu.Unlock()
	s.Push(model.NewSnapshot(1, topology(1, 1)), req)
	s.mu.Lock()
	delete(s.conns, raced)
	s.mu.Unlock()

	deadline := time.Now().Add(10 * time.Second)
	for s.queue.Known() != 0 || s.queue.Processing() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("queue still holds %d connection entries (%d processing) after they closed", s.queue.Known(), s.queue.Processing())
		}
		time.Sleep(time.Millisecond)
	}
}

// A client that keeps requests coming cannot starve its own push: the owner lets the waiting
// push in after at most maxRequestStreak requests in a row.
func TestRequestFloodDoesNotStarvePush(t *testing.T) {
	s, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	c := s.newConn(nil, false) // no proxy: a push turn writes nothing and completes at once
	const flood = 20000
	var mu sync.Mutex
	served := 0
	n := 0
	recv := func() (int, error) {
		if n == flood {
			<-c.closed
			return 0, context.Canceled
		}
		n++
		return n, nil
	}
	underway := make(chan struct{})
	handle := func(int, time.Time) error {
		mu.Lock()
		served++
		if served == 100 {
			close(underway)
		}
		mu.Unlock()
		// Give the receive goroutine time to have the next request ready, as a flooding
		// client over a fast link does.
		for range 50 {
			runtimeGosched()
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(s, ctx, c, recv, handle) }()
	<-underway // the flood is on: a request is ready whenever the owner looks
	item := pushItem{req: &model.PushRequest{Full: true}, done: make(chan struct{})}
	c.pushCh <- item
	<-item.done
	mu.Lock()
	servedAtPush := served
	mu.Unlock()
	cancel()
	close(c.closed)
	<-done
	if servedAtPush >= flood {
		t.Fatalf("the push waited for the whole flood (%d requests served first)", servedAtPush)
	}
	t.Logf("push served after %d of %d flood requests", servedAtPush, flood)
}

func runtimeGosched() { runtime.Gosched() }
