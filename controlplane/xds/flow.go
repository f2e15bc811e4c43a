package xds

import (
	"sync"
	"time"
)

// flowTimers wakes a connection's owner when a held push's ACK timeout expires. Each connection
// has at most one timer, armed for its earliest deadline; firing sends on the connection's flow
// channel without blocking (the owner re-arms for later deadlines).
type flowTimers struct {
	mu     sync.Mutex
	now    func() time.Time
	timers map[*conn]*flowTimer
}

type flowTimer struct {
	t  *time.Timer
	at time.Time
}

func newFlowTimers(now func() time.Time) *flowTimers {
	return &flowTimers{now: now, timers: make(map[*conn]*flowTimer)}
}

func (f *flowTimers) arm(c *conn, at time.Time) {
	if at.IsZero() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft, ok := f.timers[c]; ok {
		if !ft.at.After(at) {
			return
		}
		ft.t.Stop()
	}
	ft := &flowTimer{at: at}
	ft.t = time.AfterFunc(max(at.Sub(f.now()), 0), func() {
		f.mu.Lock()
		if f.timers[c] == ft {
			delete(f.timers, c)
		}
		f.mu.Unlock()
		select {
		case c.wake <- at:
		default:
		}
	})
	f.timers[c] = ft
}

func (f *flowTimers) remove(c *conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft, ok := f.timers[c]; ok {
		ft.t.Stop()
		delete(f.timers, c)
	}
}

// stopAll stops every timer (server shutdown).
func (f *flowTimers) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c, ft := range f.timers {
		ft.t.Stop()
		delete(f.timers, c)
	}
}
