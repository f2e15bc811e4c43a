package xds

import (
	"maps"

	"github.com/xdslab/xdslab/controlplane/model"
)

// pushFilter is istiod's ProxyNeedsPush for one push: it decides, connection by connection,
// whether the push reaches the proxy's scoped view (model.Scope) of the snapshot before or
// after it. Proxies with the same view share one decision (memo, keyed by proxy type and the
// scope keys before and after); a proxy at the address of a changed service's endpoint is
// always pushed, since its inbound config comes from that service, and so is a proxy that a
// changed AuthorizationPolicy selects before or after the push (its RBAC filters). It is used only by the
// goroutine that calls Server.Push.
type pushFilter struct {
	ch   *model.ChangeSet
	memo map[viewChange]bool
}

// viewChange names one proxy view across a push: its type and scope keys before and after.
type viewChange struct {
	typ        model.NodeType
	prev, next string
}

// newPushFilter prepares the filter for req, moving the server from prev (nil before the first
// snapshot) to next.
func newPushFilter(prev *pushState, next *model.Snapshot, req *model.PushRequest) *pushFilter {
	var ps *model.Snapshot
	if prev != nil {
		ps = prev.snap
	}
	return &pushFilter{ch: model.NewChangeSet(ps, next, req), memo: map[viewChange]bool{}}
}

// needsPush reports whether p, a proxy as parsed from its node, must be pushed, and whether
// it needs a full push whatever changed: when the push changes the labels of its workload
// (model.WithWorkloadLabels), and for a router whose address is (or was) a changed service's
// endpoint, since a service of its namespace with an endpoint there translates its Gateway
// server ports (gen.RouterPortKey) and so its listeners and route configuration names
// (gateway pods change rarely: pushing them everything then costs little).
func (f *pushFilter) needsPush(p *model.Proxy) (need, full bool) {
	if p == nil || f.ch.Everything {
		return true, false
	}
	for _, ip := range p.IPAddresses {
		if f.ch.TouchesIP(ip) {
			if p.Type == model.Router && !p.IsGRPC() {
				return true, true
			}
			// Only a change of the endpoints at its address can change its workload.
			prev, next := model.WithWorkloadLabels(p, f.ch.Prev), model.WithWorkloadLabels(p, f.ch.Next)
			return true, !maps.Equal(prev.Labels, next.Labels)
		}
	}
	// The endpoints at its addresses did not change: neither did its labels.
	p = model.WithWorkloadLabels(p, f.ch.Next)
	if f.ch.TouchesAuthz(p) {
		return true, false
	}
	prev, next := f.ch.Prev.ScopeFor(p), f.ch.Next.ScopeFor(p)
	k := viewChange{p.Type, prev.Key(), next.Key()}
	need, ok := f.memo[k]
	if !ok {
		need = f.ch.Affects(prev, next)
		f.memo[k] = need
	}
	return need, false
}

// countTriggers records a push's fan-out: pilot_push_triggers{type} gets, per reason, the
// events merged into req times the connections pushed (istiod counts the request's reasons once
// per proxy it pushes), and xdslab_cp_push_skipped_total{type} the same for the connections
// the filter left out.
func (s *Server) countTriggers(req *model.PushRequest, pushed, skipped int) {
	reasons := req.Reasons
	if len(reasons) == 0 {
		reasons = map[model.TriggerReason]int{model.ReasonUnknown: 1}
	}
	for r, n := range reasons {
		if pushed > 0 {
			s.metrics.PushTriggered(string(r), n*pushed)
		}
		if skipped > 0 {
			s.metrics.PushSkipped(string(r), n*skipped)
		}
	}
}
