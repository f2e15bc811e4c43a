package xds

import (
	"sync"
	"time"
)

// admission is a token bucket for new streams: rate per second, up to burst at once.
type admission struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
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

// allow takes a token at now, or reports that none is left. A nil admission allows everything.
func (a *admission) allow(now time.Time) bool {
	if a == nil {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.last.IsZero() {
		a.tokens = min(a.burst, a.tokens+now.Sub(a.last).Seconds()*a.rate)
	}
	a.last = now
	if a.tokens < 1 {
		return false
	}
	a.tokens--
	return true
}
