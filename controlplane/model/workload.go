package model

import (
	"sync/atomic"

	"github.com/xdslab/xdslab/istioconfig"
)

// TestVMLabel marks a proxy that Istio's own tests run as a stand-in for a VM: istiod keeps
// its node's labels whatever the registry says.
const TestVMLabel = "istio.io/test-vm"

// endpointSliceKind is the Source kind of the Kubernetes registry's endpoints (its
// KindEndpointSlice; repeated here, model does not import the registry).
const endpointSliceKind istioconfig.Kind = "EndpointSlice"

// WorkloadLabels returns the labels istiod reads from its registries for p, a proxy as parsed
// from its node, in s, and whether the registry knows p's workload at all (an unlabelled
// workload gives nil, true). It returns the registry's labels as stored; workload adds the
// topology labels istiod's registries add to them.
func WorkloadLabels(p *Proxy, s *Snapshot) (map[string]string, bool) {
	ep, _ := workload(p, s)
	if ep == nil {
		return nil, false
	}
	return ep.Labels, true
}

// workload returns the endpoint istiod takes for p's workload in s, and whether it is a Pod's
// (a Kubernetes endpoint), or nil. istiod asks only the registries of the proxy's CLUSTER_ID
// when it sends one (xdslab's are RegistryClusterID's), its Kubernetes registry first (the Pod
// of the proxy: here an endpoint of a Service at the proxy's address, in its namespace, that
// carries its Pod's labels; none without metadata NAMESPACE, as istiod finds the Pod by the id's
// pod.namespace only when NAMESPACE names the same namespace) and then its ServiceEntry
// registry: the first workload (an inline endpoint of a ServiceEntry, or a WorkloadEntry one
// selects) at one of the proxy's addresses whose ServiceEntry is in the proxy's namespace (any
// namespace without metadata NAMESPACE). A WorkloadEntry that no ServiceEntry selects is not a
// workload of the registry. s nil knows no workload.
func workload(p *Proxy, s *Snapshot) (*Endpoint, bool) {
	if p == nil || s == nil {
		return nil, false
	}
	if p.ClusterID != "" && p.ClusterID != RegistryClusterID {
		return nil, false
	}
	ns := p.NodeNamespace
	if !p.Resolved {
		ns = p.Namespace // a proxy built by hand: its namespace is its node's
	}
	sameNS := func(ep *Endpoint) bool {
		if ns == "" {
			return true
		}
		svc := s.Service(ep.Service)
		return svc != nil && svc.Namespace == ns
	}
	for _, kube := range []bool{true, false} {
		if kube && ns == "" {
			continue
		}
		for _, ip := range p.IPAddresses {
			for _, ep := range s.EndpointsAt(ip) {
				if (ep.Source.Kind == endpointSliceKind) != kube || !sameNS(ep) {
					continue
				}
				// A Kubernetes endpoint without labels was built without its Pod (the
				// registry does not watch Pods): it says nothing of the workload.
				if kube && ep.Labels == nil {
					continue
				}
				return ep, kube
			}
		}
	}
	return nil, false
}

// IsServiceTarget reports whether istiod counts ep, an endpoint at one of p's addresses, among
// p's service targets (GetProxyServiceTargets), whose ports translate a router's Gateway
// server ports. Its Kubernetes registry takes the Services of the proxy's Pod, in the Pod's
// namespace (or, Pod unknown, the Services of the proxy's config namespace): a Kubernetes
// endpoint counts when its service is in p's config namespace. Its ServiceEntry registry
// takes the entries of the node's NAMESPACE, or of any namespace when the node sends none:
// there the config namespace (from the DNS domain) plays no part. A proxy built by hand (not
// Resolved) is of its Namespace. s nil or a service s does not hold counts for nothing.
func IsServiceTarget(p *Proxy, s *Snapshot, ep *Endpoint) bool {
	if p == nil || s == nil || ep == nil {
		return false
	}
	svc := s.Service(ep.Service)
	if svc == nil {
		return false
	}
	if ep.Source.Kind == endpointSliceKind {
		return svc.Namespace == p.Namespace
	}
	ns := p.NodeNamespace
	if !p.Resolved {
		ns = p.Namespace
	}
	return ns == "" || svc.Namespace == ns
}

// WithWorkloadLabels returns p, a proxy as parsed from its node, with the labels and locality
// istiod gives it in s (its SetWorkloadLabels, then setTopologyLabels): its workload's labels
// (WorkloadLabels, with the cluster and locality its registry adds; a Pod's node name only
// from the proxy's NODE_NAME, not from its endpoint) over its node's
// STATIC_LABELS when the registry knows its workload, else its node's LABELS (always for a
// proxy labelled TestVMLabel); then the topology labels of its locality, CLUSTER_ID, NODE_NAME
// and NETWORK (topology.go). It returns p itself when nothing changes, else a copy.
func WithWorkloadLabels(p *Proxy, s *Snapshot) *Proxy {
	if p == nil {
		return nil
	}
	nodeLabels, nodeLoc := p.NodeLabels, p.NodeLocality
	if !p.Resolved {
		nodeLabels, nodeLoc = p.Labels, p.Locality // built by hand: no topology labels yet
	}
	var l labelLayers
	var ep *Endpoint
	var kube bool
	if nodeLabels[TestVMLabel] == "" {
		ep, kube = workload(p, s)
	}
	if ep != nil {
		l.under, l.over = p.StaticLabels, ep.Labels
		if kube && p.NodeName == "" {
			// A Pod's endpoint carries its node's name (kubernetes.io/hostname, as istiod's
			// endpoints do), but istiod labels the proxy with its NODE_NAME only
			// (GetProxyWorkloadLabels): without one, none. With one, addProxy sets it.
			l.over = withoutLabel(ep.Labels, LabelHostname)
		}
		l.addRegistry(ep, kube)
	} else {
		if p.Resolved {
			return p // ParseProxy resolved them for no workload
		}
		l.over = nodeLabels
	}
	loc := l.addProxy(p, nodeLoc)
	if loc == p.Locality && l.same(p.Labels) {
		return p // checked without building the map (every push asks)
	}
	// The usual case at a workload (its labels carry at least the registry's cluster, which
	// the node's do not): the result of the last call, when its labels are still these.
	if p.memo != nil {
		if last := p.memo.last.Load(); last != nil && last.Locality == loc && l.same(last.Labels) {
			return last
		}
	}
	c := *p
	c.memo = nil
	if !p.Resolved {
		c.NodeLabels, c.NodeLocality = nodeLabels, nodeLoc
	}
	c.Labels, c.Locality, c.Resolved = l.build(), loc, true
	if p.memo != nil {
		p.memo.last.Store(&c)
	}
	return &c
}

// workloadMemo holds a parsed proxy's last result of WithWorkloadLabels, so that a push that
// leaves its workload's labels alone does not copy the proxy again. It is shared by the
// goroutines that ask (the push filter and the proxy's session).
type workloadMemo struct {
	last atomic.Pointer[Proxy]
}

// withoutLabel returns labels without key k: labels itself when it has no k, else a copy.
func withoutLabel(labels map[string]string, k string) map[string]string {
	if _, ok := labels[k]; !ok {
		return labels
	}
	out := make(map[string]string, len(labels)-1)
	for lk, v := range labels {
		if lk != k {
			out[lk] = v
		}
	}
	return out
}
