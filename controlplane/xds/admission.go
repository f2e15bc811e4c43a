package xds

import (
	"sync"
	"time"
)

// admission is a token bucket for new streams: rate per second, up to burst at once. A stream
// that finds no token may reserve the next one if it comes within the wait bound, so a burst of
// reconnects above the bucket is spread out (like istiod's one-second wait on its limiter)
// instead of bounced with ResourceExhausted and retried by every client at once.
type admission struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64 // negative when tokens are reserved ahead
	last   time.Time
}

func newAdmission(rate float64, burst int) *admission {
	if rate <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &admission{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// reserve takes a token at now and says how long the caller must wait before using it, or
// reports false (and takes nothing) when the token would come later than maxWait. A nil
// admission admits everything at once.
func (a *admission) reserve(now time.Time, maxWait time.Duration) (time.Duration, bool) {
	if a == nil {
		return 0, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.last.IsZero() && now.After(a.last) {
		a.tokens = min(a.burst, a.tokens+now.Sub(a.last).Seconds()*a.rate)
	}
	if now.After(a.last) {
		a.last = now
	}
	if a.tokens >= 1 {
		a.tokens--
		return 0, true
	}
	wait := time.Duration((1 - a.tokens) / a.rate * float64(time.Second))
	if wait > maxWait {
		return 0, false
	}
	a.tokens--
	return wait, true
}
