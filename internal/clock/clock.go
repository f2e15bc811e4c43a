package clock

import "time"

// Clock reads the time and makes timers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, like *time.Timer: after Reset or Stop returns, no value from an
// earlier arming is received from C.
type Timer interface {
	C() <-chan time.Time
	// Reset re-arms the timer to fire d from now.
	Reset(d time.Duration)
	Stop()
}

// Real returns the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// realTimer relies on Go 1.23+ timer semantics (go.mod says go ≥ 1.23): Reset and Stop
// discard any value not yet received, so no draining is needed.
type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time   { return t.t.C }
func (t realTimer) Reset(d time.Duration) { t.t.Reset(d) }
func (t realTimer) Stop()                 { t.t.Stop() }
