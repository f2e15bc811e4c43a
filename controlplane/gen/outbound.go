package gen

import (
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// outboundFallback is where a sidecar sends outbound traffic no service or route of its
// scope takes, as istiod decides it from the SidecarScope's outboundTrafficPolicy (the
// Sidecar's, else the mesh default ALLOW_ANY): ALLOW_ANY passes it through to its original
// destination (PassthroughCluster), or to the cluster of the policy's egressProxy when one is
// set; REGISTRY_ONLY drops it: connections go to BlackHoleCluster and HTTP requests get a 502
// from the "block_all" virtual host. It applies to the catch-all chain of virtualOutbound, the
// default chain of the 0.0.0.0_PORT and TLS listeners, and the last virtual host of each
// route configuration. Gateways have no Sidecar and keep ALLOW_ANY (they never use it).
type outboundFallback struct {
	// cluster receives what nothing else takes; "" for REGISTRY_ONLY HTTP (a direct response).
	cluster string
	// blockAll is REGISTRY_ONLY.
	blockAll bool
	// dep is the Sidecar the policy comes from (nil for the mesh default).
	dep *istioconfig.Key
}

// fallbackOf returns the outbound fallback of scope sc (nil: no Sidecar applies).
func fallbackOf(sc *model.Scope) outboundFallback {
	if sc == nil || sc.Sidecar == nil {
		return outboundFallback{cluster: PassthroughCluster}
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	pol := spec.GetOutboundTrafficPolicy()
	key := sc.Sidecar.Key()
	switch {
	case pol == nil:
		return outboundFallback{cluster: PassthroughCluster}
	case pol.GetMode() == networking.OutboundTrafficPolicy_REGISTRY_ONLY:
		return outboundFallback{cluster: BlackHoleCluster, blockAll: true, dep: &key}
	case pol.GetEgressProxy() != nil:
		// istiod names the cluster from the destination as written (no short-name
		// resolution, no service lookup): outbound|PORT|SUBSET|HOST. Validation requires
		// the port.
		ep := pol.GetEgressProxy()
		return outboundFallback{cluster: ClusterName(Outbound, ep.GetPort().GetNumber(), ep.GetSubset(), ep.GetHost()), dep: &key}
	}
	return outboundFallback{cluster: PassthroughCluster, dep: &key}
}

// deps lists the Sidecar the fallback comes from, if any.
func (f outboundFallback) deps() []istioconfig.Key {
	if f.dep == nil {
		return nil
	}
	return []istioconfig.Key{*f.dep}
}
