package machine

import (
	"slices"
	"time"
)

// Listener draining. Envoy does not drop a listener an LDS update removes or replaces: the old
// one drains for --drain-time-s (istio-agent passes its proxyConfig's drainDuration, 45s by
// default; Envoy's own default is 600s) with its filter chains. Their HTTP connection managers
// keep their RDS subscriptions, and their transport sockets their SDS secrets, until it is
// gone. Until then the client still asks for those route configurations and those secrets (the
// ones on ADS: the agent's secrets are not the control plane's), still applies and ACKs what
// the server sends of them, and only then sends the request that leaves them out (SotW: the
// shorter list; Delta: an unsubscribe). A listener that never took traffic (its route
// configuration, or its secret, never arrived) is dropped at once. Proxyless gRPC clients
// have no listeners to drain.
//
// A drain is kept per name (a route configuration, or a secret on ADS), not per listener: one
// the current listeners (or, for a secret, the clusters) name again is no longer draining,
// and what several drained listeners named ends with the latest drain.

// draining returns t's subscription after an LDS change at now: refs (what is now referenced:
// sorted, possibly shared, never modified) plus what only draining listeners use. A name the
// client held that refs no longer names starts draining when drop says the change took it
// from a listener (nil: any; for RDS only listeners name route configurations); one refs names
// again is no longer draining.
func (m *Machine) draining(t rtype, refs []string, drop func(string) bool, now time.Time) []string {
	held := m.types[t].res
	for _, n := range removedSorted(m.types[t].names, refs) {
		if _, ok := m.drain[t][n]; ok {
			continue // draining since an earlier change
		}
		if _, ok := held[n]; !ok {
			continue // its listener never took traffic
		}
		if drop != nil && !drop(n) {
			continue // not a removed or replaced listener's (a cluster's secret)
		}
		if m.drain[t] == nil {
			m.drain[t] = make(map[string]time.Time)
		}
		m.drain[t][n] = now.Add(m.drainFor)
	}
	for n := range m.drain[t] {
		if _, ok := slices.BinarySearch(refs, n); ok {
			delete(m.drain[t], n)
		}
	}
	return m.withDraining(t, refs)
}

// withDraining is refs (sorted, not modified) with t's names still draining.
func (m *Machine) withDraining(t rtype, refs []string) []string {
	if len(m.drain[t]) == 0 {
		m.drain[t] = nil
		return refs
	}
	names := make([]string, 0, len(refs)+len(m.drain[t]))
	names = append(names, refs...)
	for n := range m.drain[t] {
		names = append(names, n)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// endDrains ends, at now, the drains whose time is up: the client asks for their route
// configurations and secrets no more.
func (m *Machine) endDrains(s *Step, now time.Time) {
	for t := range m.drain {
		ended := false
		for n, at := range m.drain[t] {
			if !now.Before(at) {
				delete(m.drain[t], n)
				ended = true
			}
		}
		if !ended {
			continue
		}
		switch rtype(t) {
		case tRDS:
			m.subscribeNames(s, tRDS, m.withDraining(tRDS, m.refsOf(tLDS)))
		case tSDS:
			m.subscribeNames(s, tSDS, m.withDraining(tSDS, m.adsSecretNames(now)))
		}
	}
}

// nextDrainEnd is when the next drain ends; zero when nothing drains.
func (m *Machine) nextDrainEnd() time.Time {
	var next time.Time
	for t := range m.drain {
		for _, at := range m.drain[t] {
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// isDraining reports whether name of type t is subscribed only for a draining listener.
func (m *Machine) isDraining(t rtype, name string) bool {
	_, ok := m.drain[t][name]
	return ok
}

// noteDrainedSecrets records, before an LDS change commits, the secrets on ADS that old (the
// copy of a listener the change removes or replaces) names: they drain with it unless
// something still names them (followUpSecrets).
func (m *Machine) noteDrainedSecrets(old *decoded) {
	if m.drainFor <= 0 {
		return
	}
	for _, r := range old.secretList() {
		if r.overADS() {
			m.drainedSecrets = append(m.drainedSecrets, r.name)
		}
	}
}
