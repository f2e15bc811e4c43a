package machine

import (
	"slices"
	"time"
)

// Listener draining. Envoy does not drop a listener an LDS update removes or replaces: the old
// one drains for --drain-time-s (istio-agent passes its proxyConfig's drainDuration, 45s by
// default; Envoy's own default is 600s) with its filter chains, and their HTTP connection
// managers keep their RDS subscriptions until it is gone. Until then the client still asks for
// those route configurations, still applies and ACKs what the server sends of them, and only
// then sends the request that leaves them out (SotW: the shorter list; Delta: an unsubscribe).
// A listener that never took traffic (its route configuration never arrived) is dropped at
// once. Proxyless gRPC clients have no listeners to drain.

// draining returns the RDS subscription after an LDS change at now: refs (what the listeners
// now reference: sorted, possibly shared, never modified) plus the route configurations that
// only draining listeners use. One the client held that refs no longer names starts draining;
// one refs names again is no longer draining.
func (m *Machine) draining(refs []string, now time.Time) []string {
	held := m.types[tRDS].res
	for _, n := range removedSorted(m.types[tRDS].names, refs) {
		if _, ok := m.drain[n]; ok {
			continue // draining since an earlier change
		}
		if _, ok := held[n]; !ok {
			continue // its listener never took traffic
		}
		if m.drain == nil {
			m.drain = make(map[string]time.Time)
		}
		m.drain[n] = now.Add(m.drainFor)
	}
	for n := range m.drain {
		if _, ok := slices.BinarySearch(refs, n); ok {
			delete(m.drain, n)
		}
	}
	return m.withDraining(refs)
}

// withDraining is refs (sorted, not modified) with the route configurations still draining.
func (m *Machine) withDraining(refs []string) []string {
	if len(m.drain) == 0 {
		m.drain = nil
		return refs
	}
	names := make([]string, 0, len(refs)+len(m.drain))
	names = append(names, refs...)
	for n := range m.drain {
		names = append(names, n)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// endDrains ends, at now, the drains whose time is up: the client asks for their route
// configurations no more.
func (m *Machine) endDrains(s *Step, now time.Time) {
	ended := false
	for n, at := range m.drain {
		if !now.Before(at) {
			delete(m.drain, n)
			ended = true
		}
	}
	if !ended {
		return
	}
	m.subscribeNames(s, tRDS, m.withDraining(m.refsOf(tLDS)))
}

// nextDrainEnd is when the next drain ends; zero when nothing drains.
func (m *Machine) nextDrainEnd() time.Time {
	var next time.Time
	for _, at := range m.drain {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// isDraining reports whether route configuration name is subscribed only for a draining
// listener.
func (m *Machine) isDraining(name string) bool {
	_, ok := m.drain[name]
	return ok
}
