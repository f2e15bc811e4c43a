package run

import (
	"context"
	"sync/atomic"
)

// stopWatch is the early stop of a run or a shard (Options.Stop, ShardOptions.Stop): a
// context the phases watch, which ends with the parent or once stop is closed, and the phase
// the stop came in. What must finish after a stop (collecting, writing) runs on the parent.
type stopWatch struct {
	ctx    context.Context
	parent context.Context
	cancel context.CancelFunc
	at     atomic.Pointer[string]
}

// watchStop watches stop (nil: never) on behalf of ctx; phase names the phase in progress when
// it is closed. Call cancel once done: it ends the watch.
func watchStop(ctx context.Context, stop <-chan struct{}, phase func() string) *stopWatch {
	w := &stopWatch{parent: ctx}
	w.ctx, w.cancel = context.WithCancel(ctx)
	if stop != nil {
		go func() {
			select {
			case <-stop:
				p := phase()
				w.at.Store(&p)
				w.cancel()
			case <-w.ctx.Done():
			}
		}()
	}
	return w
}

// stopped reports whether the stop ended the phases (and not the parent).
func (w *stopWatch) stopped() bool { return w.parent.Err() == nil && w.ctx.Err() != nil }

// stoppedIn is the phase the stop came in; ok is false when there was none.
func (w *stopWatch) stoppedIn() (phase string, ok bool) {
	if p := w.at.Load(); p != nil {
		return *p, true
	}
	return "", false
}
