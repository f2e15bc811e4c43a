package xds

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
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
	var produced atomic.Int64
	recv := func() (int, error) {
		if produced.Load() == flood {
			<-c.closed
			return 0, context.Canceled
		}
		return int(produced.Add(1)), nil
	}
	underway := make(chan struct{})
	handle := func(k int, _ time.Time) error {
		mu.Lock()
		served++
		if served == 100 {
			close(underway)
		}
		mu.Unlock()
		// As with a client flooding over a fast link, the next request is ready before this
		// one is done: wait until the receive goroutine holds it and is offering it.
		for k < flood && produced.Load() <= int64(k) {
			runtime.Gosched()
		}
		for range 20 {
			runtime.Gosched()
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(s, ctx, c, recv, handle) }()
	<-underway // the flood is on: a request is ready whenever the owner looks
	item := pushItem{req: &model.PushRequest{Full: true}, done: make(chan struct{})}
	mu.Lock()
	servedBefore := served
	mu.Unlock()
	c.pushCh <- item
	<-item.done
	mu.Lock()
	servedAtPush := served
	mu.Unlock()
	cancel()
	close(c.closed)
	<-done
	// The bound counts requests, not time: the owner takes the push after at most
	// maxRequestStreak more requests (a few more may be in hand while the push is offered).
	if ahead := servedAtPush - servedBefore; ahead > maxRequestStreak+4 {
		t.Fatalf("%d requests were served ahead of a waiting push, want at most %d", ahead, maxRequestStreak+4)
	}
}
