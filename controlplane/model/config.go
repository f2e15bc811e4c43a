package model

import "github.com/xdslab/xdslab/istioconfig"

// Istio config objects (istioconfig.Config, Key, Meta, Kind) live in the leaf istioconfig,
// shared with the simulator and the sinks. The kinds below are not Istio config: they key
// changes that come from elsewhere, in the same istioconfig.Key.
const (
	// KindService and KindEndpoint key changes from a service registry (a service's
	// definition, or only its endpoints).
	KindService  istioconfig.Kind = "Service"
	KindEndpoint istioconfig.Kind = "Endpoint"
	// KindSecret keys a push of rotated SDS secrets; Name is the identity (SPIFFE id).
	KindSecret istioconfig.Kind = "Secret"
)
