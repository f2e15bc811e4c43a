package machine

import (
	"fmt"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/xdslab/xdslab/probe"
)

// deltaWire is incremental xDS (DeltaAggregatedResources): subscriptions change by difference,
// a response adds or changes some resources and removes others by name, every resource carries
// a version, and a new stream restates what the client holds as initial_resource_versions.
// Like Envoy, only ACKs and NACKs carry a nonce.
type deltaWire struct{}

func (deltaWire) first(m *Machine, now time.Time) { m.firstEnvoy(now) }

func (deltaWire) restate(m *Machine, s *Step, t rtype) {
	ts := &m.types[t]
	r := m.deltaReq(t)
	if !t.wildcard() {
		r.ResourceNamesSubscribe = ts.names
	}
	if len(ts.res) > 0 {
		r.InitialResourceVersions = make(map[string]string, len(ts.res))
		for name, e := range ts.res {
			if e.version != "" {
				r.InitialResourceVersions[name] = e.version
			}
		}
	}
	s.Delta = append(s.Delta, r)
}

// resubscribe sends the difference, nothing when there is none.
func (deltaWire) resubscribe(m *Machine, s *Step, t rtype, names []string) {
	sub, unsub := diffSorted(m.types[t].names, names)
	if len(sub) == 0 && len(unsub) == 0 {
		return
	}
	m.setNames(t, names, unsub)
	r := m.deltaReq(t)
	r.ResourceNamesSubscribe = sub
	r.ResourceNamesUnsubscribe = unsub
	s.Delta = append(s.Delta, r)
}

// ack goes after the subscriptions the response caused, as in SotW: Envoy's Delta mux
// (NewGrpcMuxImpl::onDiscoveryResponse) queues the ACK with kickOffAck only once
// handleResponse has returned, and the subscriptions made while the response was applied went
// out before that: CdsApiHelper and LdsApiImpl resume EDS/SDS and RDS/SDS at the end of
// onConfigUpdate, and the LDS subscription that warmed clusters start is made inside the EDS
// update. (Its rule that ACKs go before plain updates orders only requests queued together.)
func (deltaWire) ack(m *Machine, s *Step, u *update) {
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: u.t.url(), ResponseNonce: u.nonce, Node: m.attachNode()}
	if s.Info.Nacked {
		req.ErrorDetail = m.nackStatus(s.Info.Error)
	}
	s.Delta = append(s.Delta, req)
}

func (deltaWire) named(t rtype) bool { return !t.wildcard() }

func (deltaWire) dependent(t rtype) (rtype, bool) { return envoyDependent(t) }

// owed: a Delta server owes a restated type only what initial_resource_versions did not cover
// (it sends nothing for resources the client holds at their current versions): a held
// resource without a version (applied from a NACKed response) or, for a named type, a
// subscribed name the client does not hold. Changes made while the client was away come as
// ordinary updates, which the client cannot tell from later ones.
func (deltaWire) owed(m *Machine, t rtype) bool {
	ts := &m.types[t]
	for _, e := range ts.res {
		if e.version == "" {
			return true
		}
	}
	if t.wildcard() {
		return false
	}
	for _, n := range ts.names {
		if _, ok := ts.res[n]; !ok && !m.isDraining(t, n) {
			return true // a draining listener's routes or secrets the server removed: not owed again
		}
	}
	return false
}

// deltaReq starts a Delta subscription request.
func (m *Machine) deltaReq(t rtype) *discoveryv3.DeltaDiscoveryRequest {
	return &discoveryv3.DeltaDiscoveryRequest{TypeUrl: t.url(), Node: m.attachNode()}
}

// OnDelta handles one DeltaDiscoveryResponse received at recv.
func (m *Machine) OnDelta(r *discoveryv3.DeltaDiscoveryResponse, recv time.Time) Step {
	m.seq++
	m.streamResp++
	s := Step{Response: true}
	u := m.deltaUpdate(&s, r)
	s.Info.Recv = recv
	m.handle(&s, &u, recv)
	return s
}

// deltaUpdate reads a Delta response into an update, and fills s.Info with what the response
// is.
func (m *Machine) deltaUpdate(s *Step, r *discoveryv3.DeltaDiscoveryResponse) update {
	s.Info = probe.ResponseInfo{Seq: m.seq, TypeURL: r.GetTypeUrl(), Nonce: r.GetNonce(), Delta: true, Resources: len(r.GetResources())}
	for _, res := range r.GetResources() {
		s.Info.Bytes += len(res.GetResource().GetValue())
	}
	t, ok := typeOf(r.GetTypeUrl())
	if !ok || !m.types[t].subscribed {
		// Envoy drops a Delta response for a type it has no subscription for, unanswered.
		return update{typeURL: r.GetTypeUrl(), unwatched: dropUnwatched}
	}
	m.types[t].nonce = r.GetNonce()
	u := update{t: t, typeURL: r.GetTypeUrl(), nonce: r.GetNonce(), removed: r.GetRemovedResources(), versions: true}
	u.items = make([]item, 0, len(r.GetResources()))
	for _, res := range r.GetResources() {
		a := res.GetResource()
		if a == nil {
			continue // a TTL heartbeat: nothing to apply
		}
		if a.GetTypeUrl() != r.GetTypeUrl() {
			u.err = fmt.Errorf("resource %s type %s does not match the response type %s", res.GetName(), a.GetTypeUrl(), r.GetTypeUrl())
			break
		}
		name := res.GetName()
		if name == "" {
			name, _ = readName(a.GetValue())
		}
		u.items = append(u.items, item{name: name, raw: a.GetValue(), version: res.GetVersion()})
	}
	return u
}
