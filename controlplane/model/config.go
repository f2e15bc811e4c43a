package model

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
)

// Kind is an Istio config kind.
type Kind string

// The config kinds the control plane understands (istio.io/api networking and security types).
const (
	KindServiceEntry    Kind = "ServiceEntry"
	KindWorkloadEntry   Kind = "WorkloadEntry"
	KindVirtualService  Kind = "VirtualService"
	KindDestinationRule Kind = "DestinationRule"
	KindSidecar         Kind = "Sidecar"
	KindGateway         Kind = "Gateway"
	// KindPeerAuthentication is security.istio.io's PeerAuthentication (inbound mTLS mode).
	KindPeerAuthentication Kind = "PeerAuthentication"
	// KindAuthorizationPolicy is security.istio.io's AuthorizationPolicy (inbound RBAC).
	KindAuthorizationPolicy Kind = "AuthorizationPolicy"
	// KindRequestAuthentication is security.istio.io's RequestAuthentication (inbound JWT).
	KindRequestAuthentication Kind = "RequestAuthentication"
	// KindService and KindEndpoint are not Istio config: they key changes that come from a
	// service registry (a service's definition, or only its endpoints).
	KindService  Kind = "Service"
	KindEndpoint Kind = "Endpoint"
	// KindSecret keys a push of rotated SDS secrets; Name is the identity (SPIFFE id).
	KindSecret Kind = "Secret"
)

// ConfigKinds lists the Istio config kinds in a stable order.
var configKinds = []Kind{KindServiceEntry, KindWorkloadEntry, KindVirtualService, KindDestinationRule, KindSidecar, KindGateway, KindPeerAuthentication, KindAuthorizationPolicy, KindRequestAuthentication}

// ConfigKinds returns the Istio config kinds in a stable order.
func ConfigKinds() []Kind { return append([]Kind(nil), configKinds...) }

// ConfigKey names one config object or one registry service.
type ConfigKey struct {
	Kind      Kind
	Name      string
	Namespace string
}

func (k ConfigKey) String() string { return fmt.Sprintf("%s/%s/%s", k.Kind, k.Namespace, k.Name) }

// Meta is a config object's metadata.
type Meta struct {
	Kind              Kind
	Name              string
	Namespace         string
	Labels            map[string]string
	Annotations       map[string]string
	ResourceVersion   string
	CreationTimestamp time.Time
	// Source says where the object came from (a file path, "memory", …), for /debug/config.
	Source string
}

// Key returns the object's ConfigKey.
func (m Meta) Key() ConfigKey { return ConfigKey{Kind: m.Kind, Name: m.Name, Namespace: m.Namespace} }

// Config is an Istio config object: metadata and an istio.io/api spec
// (*networking.ServiceEntry, *networking.VirtualService, …). Configs are immutable once stored.
type Config struct {
	Meta
	Spec proto.Message
}
