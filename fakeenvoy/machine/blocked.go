package machine

import (
	"fmt"
	"slices"
)

// Why a client has no full config. A run that reaches its end with clients short of a full
// config must say why, in terms a user can act on: which secret from which source and why it
// cannot arrive, which clusters wait for endpoints, which listeners for routes.

// Blocker is why a client does not hold a full config: Reason is the same text for every
// client blocked the same way (it aggregates), Example one resource it concerns.
type Blocker struct {
	Reason  string
	Example string
}

// Blocked reports why the client has no full config yet (ok false once it has held one).
func (m *Machine) Blocked() (b Blocker, ok bool) {
	if m.init.fullDone {
		return Blocker{}, false
	}
	return m.blocker(), true
}

// blocker explains, from the machine's state, why the client has no full config yet; the zero
// Blocker once it has one.
func (m *Machine) blocker() Blocker {
	if m.init.fullDone {
		return Blocker{}
	}
	if m.grpc {
		for _, l := range m.targets {
			if _, ok := m.types[tLDS].res[l]; !ok {
				return Blocker{Reason: "gRPC client: waiting for its target listener (LDS)", Example: l}
			}
		}
		return Blocker{Reason: "gRPC client: waiting for the routes, clusters or endpoints of its targets"}
	}
	switch m.init.phase {
	case phaseCDS:
		return Blocker{Reason: "waiting for the first CDS response"}
	case phaseLDS:
		return Blocker{Reason: "waiting for the first LDS response (clusters done)"}
	}
	if b, ok := m.secretBlocker(); ok {
		return b
	}
	if name, ok := minKey(m.init.warmC); ok {
		return Blocker{Reason: "clusters warming: waiting for their endpoints (EDS)", Example: name}
	}
	if name, ok := minKey(m.init.warmL); ok {
		return Blocker{Reason: "listeners warming: waiting for their routes (RDS)", Example: name}
	}
	// Past CDS and LDS without accepting one: each phase ended at its initial fetch timeout,
	// with no response on this stream (nonce) or every one NACKed.
	for _, t := range []rtype{tCDS, tLDS} {
		switch ts := &m.types[t]; {
		case ts.accepted:
		case ts.nonce == "":
			return Blocker{Reason: "no " + t.String() + " response received (its initial fetch timed out)"}
		default:
			return Blocker{Reason: "no " + t.String() + " response accepted (NACKed)"}
		}
	}
	return Blocker{Reason: "clusters or listeners reference endpoints or routes that never came"}
}

// secretBlocker names the first missing secret (by name) of the warming clusters and
// listeners, and the first (by kind and name) resource waiting for it. The missing secrets are
// few and the waiting resources many (every cluster of a mesh with mTLS): the secrets are tried
// in order, and the first one some resource waits for is the answer. The first resource (by
// name) that names a secret is derived once per shared set: when it waits, as it does while
// the secret is missing, it is the answer without visiting the others.
func (m *Machine) secretBlocker() (Blocker, bool) {
	if len(m.init.secC) == 0 && len(m.init.secL) == 0 {
		return Blocker{}, false
	}
	var best *secretRef
	var who string
	for _, r := range m.missingSecrets() { // each secret asked about once, not once per resource
		for _, t := range []rtype{tCDS, tLDS} { // by kind: "cluster" before "listener"
			_, sec, _ := m.init.warmMaps(t)
			if name, ok := m.firstWaiting(t, *sec, r); ok {
				r := r
				best, who = &r, t.kind()+" "+name
				break
			}
		}
		if best != nil {
			break
		}
	}
	if best == nil {
		return Blocker{}, false
	}
	r := *best
	var why string
	switch {
	case r.overADS():
		why = "asked of the control plane over ADS, not received"
	default:
		l := m.local[r]
		switch {
		case l == nil:
			why = "not requested yet"
		case l.err != nil:
			why = "cannot arrive: " + l.err.Error()
		default:
			why = "being issued by the istio-agent"
		}
	}
	return Blocker{Reason: fmt.Sprintf("waiting for secret %q from %s: %s", r.name, r.source(), why), Example: who}, true
}

// firstWaiting returns the first (by name) of type t's resources in sec that names secret r.
func (m *Machine) firstWaiting(t rtype, sec map[string]due, r secretRef) (string, bool) {
	if len(sec) == 0 {
		return "", false
	}
	ts := &m.types[t]
	if ts.set != nil {
		if h, ok := ts.set.holder(r); ok {
			if _, waits := sec[h]; waits {
				return h, true // the first of all that name r
			}
		}
	}
	first, found := "", false
	for name := range sec {
		if (!found || name < first) && slices.Contains(ts.res[name].d.secretList(), r) {
			first, found = name, true
		}
	}
	return first, found
}

func minKey[V any](m map[string]V) (string, bool) {
	first, ok := "", false
	for k := range m {
		if !ok || k < first {
			first, ok = k, true
		}
	}
	return first, ok
}
