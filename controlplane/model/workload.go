package model

import (
	"maps"

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
// workload gives nil, true). istiod asks its Kubernetes registry first (the Pod of the proxy:
// here an endpoint of a Service at the proxy's address, in its namespace, that carries its
// Pod's labels) and then its ServiceEntry registry: the labels of the first workload
// (an inline endpoint of a ServiceEntry, or a WorkloadEntry one selects) at one of the
// proxy's addresses whose ServiceEntry is in the proxy's namespace. A WorkloadEntry that no
// ServiceEntry selects is not a workload of the registry. s nil knows no workload.
func WorkloadLabels(p *Proxy, s *Snapshot) (map[string]string, bool) {
	if p == nil || s == nil {
		return nil, false
	}
	sameNS := func(ep *Endpoint) bool {
		if p.Namespace == "" {
			return true
		}
		svc := s.Service(ep.Service)
		return svc != nil && svc.Namespace == p.Namespace
	}
	for _, kube := range []bool{true, false} {
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
				return ep.Labels, true
			}
		}
	}
	return nil, false
}

// WithWorkloadLabels returns p, a proxy as parsed from its node, with the labels istiod gives
// it in s (SetWorkloadLabels): its workload's (WorkloadLabels) over its node's STATIC_LABELS
// when the registry knows its workload, else its node's LABELS; always its node's for a proxy
// labelled TestVMLabel. It returns p itself when the labels are the same, else a copy.
func WithWorkloadLabels(p *Proxy, s *Snapshot) *Proxy {
	if p == nil || p.Labels[TestVMLabel] != "" {
		return p
	}
	wl, ok := WorkloadLabels(p, s)
	if !ok {
		return p
	}
	if sameLabels(p.Labels, wl, p.StaticLabels) {
		return p // the usual case, checked without building the map (every push asks)
	}
	labels := make(map[string]string, len(wl)+len(p.StaticLabels))
	maps.Copy(labels, p.StaticLabels)
	maps.Copy(labels, wl)
	c := *p
	c.Labels = labels
	return &c
}

// sameLabels reports whether have equals over laid over under (over's value wins for a key
// both hold), without building that map; nil and empty are the same.
func sameLabels(have, over, under map[string]string) bool {
	n := len(over)
	for k, v := range under {
		if _, ok := over[k]; ok {
			continue
		}
		n++
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	if n != len(have) {
		return false
	}
	for k, v := range over {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}
