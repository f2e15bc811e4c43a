package istioconfig

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
)

// Kind is an Istio config kind. The control plane also uses the type to key changes that are
// not Istio config (a registry's service or its endpoints; see controlplane/model).
type Kind string

// The Istio config kinds: istio.io/api networking and security types.
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
)

var kinds = []Kind{KindServiceEntry, KindWorkloadEntry, KindVirtualService, KindDestinationRule, KindSidecar, KindGateway, KindPeerAuthentication, KindAuthorizationPolicy, KindRequestAuthentication}

// Kinds returns the Istio config kinds in a stable order.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// Key names one config object (or, in the control plane, one registry service).
type Key struct {
	Kind      Kind
	Name      string
	Namespace string
}

func (k Key) String() string { return fmt.Sprintf("%s/%s/%s", k.Kind, k.Namespace, k.Name) }

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

// Key returns the object's Key.
func (m Meta) Key() Key { return Key{Kind: m.Kind, Name: m.Name, Namespace: m.Namespace} }

// Config is an Istio config object: metadata and an istio.io/api spec
// (*networking.ServiceEntry, *networking.VirtualService, …). Configs are immutable once stored.
type Config struct {
	Meta
	Spec proto.Message
}
