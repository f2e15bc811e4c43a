package gen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Type URLs of the resources generated here.
const (
	ClusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	ListenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	// SecretType is SDS over ADS: the workload certificate and root (sds.go).
	SecretType = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
)

// Cacheable reports whether resources of typeURL may go into the shared marshalled-resource
// cache. Secrets may not: they hold a private key, differ per identity and are never shared
// between streams of different workloads.
func Cacheable(typeURL string) bool { return typeURL != SecretType }

// Well-known cluster and listener names (Istio's).
const (
	BlackHoleCluster          = "BlackHoleCluster"
	PassthroughCluster        = "PassthroughCluster"
	InboundPassthroughCluster = "InboundPassthroughCluster"
	VirtualOutboundListener   = "virtualOutbound"
	VirtualInboundListener    = "virtualInbound"
	// VirtualOutboundPort receives all redirected outbound traffic (iptables REDIRECT).
	VirtualOutboundPort = 15001
	// VirtualInboundPort receives all redirected inbound traffic.
	VirtualInboundPort = 15006
	// AllowAnyVirtualHost is the last virtual host of every sidecar route configuration.
	AllowAnyVirtualHost = "allow_any"
	// BlockAllVirtualHost is the catch-all virtual host under REGISTRY_ONLY: 502 for any
	// host the route configuration does not name.
	BlockAllVirtualHost = "block_all"
)

// Resource is one generated xDS resource.
type Resource struct {
	// Name is the resource name (cluster, listener or route configuration name).
	Name string
	// Message is the resource (*clusterv3.Cluster, *endpointv3.ClusterLoadAssignment, …).
	Message proto.Message
	// Deps are the config objects and registry entries the resource was built from, sorted and
	// unique. A change to any of them (a PushRequest.ConfigsUpdated key) invalidates it.
	// Services are keyed by ServiceKey, their endpoints by EndpointKey.
	Deps []istioconfig.Key
}

// Generator builds the resources of one type for a proxy from a snapshot. names nil (or
// containing "*") asks for every resource of the type (wildcard CDS/LDS); otherwise only the
// named ones are returned (a name that matches nothing is omitted, except EDS, which answers
// every well-formed cluster name, with no endpoints when the service is unknown, and RDS, which
// answers every name as istiod does). Resources come sorted by name. A non-nil error joins
// every problem found; the resources returned are still valid and complete except for the
// broken parts.
type Generator interface {
	Generate(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error)
}

// GeneratorFunc adapts a function to Generator.
type GeneratorFunc func(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error)

// Generate calls f.
func (f GeneratorFunc) Generate(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
	return f(p, s, names)
}

var _ Generator = GeneratorFunc(nil)

// ForType returns the generator for a type URL and a proxy: the proxyless gRPC variant when
// p.IsGRPC(), the router (gateway) one for node type router (gateway.go), the sidecar one
// otherwise. It returns nil for a type URL it does not serve.
func ForType(typeURL string, p *model.Proxy) Generator {
	grpc := p != nil && p.IsGRPC()
	if p != nil && p.Type == model.Router && !grpc {
		return routerForType(typeURL)
	}
	var f GeneratorFunc
	switch typeURL {
	case ClusterType:
		f = sidecarClusters
		if grpc {
			f = grpcClusters
		}
	case EndpointType:
		f = endpoints
	case ListenerType:
		f = sidecarListeners
		if grpc {
			f = grpcListeners
		}
	case RouteType:
		f = withEveryName(withSniffedRoutes(sidecarRoutes))
		if grpc {
			f = grpcRoutes
		}
	default:
		return nil
	}
	return guarded(f)
}

// guarded makes a generator safe for a nil proxy (treated as a proxy with no address, labels
// or namespace) and reports a nil snapshot as an error.
func guarded(f GeneratorFunc) GeneratorFunc {
	return func(p *model.Proxy, s *model.Snapshot, names []string) ([]Resource, error) {
		if s == nil {
			return nil, errors.New("gen: no snapshot to generate from")
		}
		if p == nil {
			p = &model.Proxy{}
		}
		return f(p, s, names)
	}
}

// Types lists the type URLs served, in the order Envoy requests them.
func Types() []string { return []string{ClusterType, EndpointType, ListenerType, RouteType} }

// Direction of a cluster.
const (
	Outbound = "outbound"
	Inbound  = "inbound"
)

// ClusterName builds Istio's cluster name "DIRECTION|PORT|SUBSET|HOST".
func ClusterName(direction string, port uint32, subset, host string) string {
	return direction + "|" + strconv.FormatUint(uint64(port), 10) + "|" + subset + "|" + host
}

// ClusterNameParts is a parsed cluster name.
type ClusterNameParts struct {
	Direction string
	Port      uint32
	Subset    string
	Host      string
	// SNIDNAT marks a gateway's SNI-DNAT cluster "outbound_.PORT_.SUBSET_.HOST" (IstioSNI),
	// which an AUTO_PASSTHROUGH server forwards to by SNI (gateway_autopassthrough.go).
	SNIDNAT bool
}

// String renders the name p was parsed from.
func (p ClusterNameParts) String() string {
	if p.SNIDNAT {
		return IstioSNI(p.Port, p.Subset, p.Host)
	}
	return ClusterName(p.Direction, p.Port, p.Subset, p.Host)
}

// sniDNATPrefix starts the name of an SNI-DNAT cluster.
const sniDNATPrefix = Outbound + "_."

// ParseClusterName splits "outbound|PORT|SUBSET|HOST" (or inbound), or a gateway's SNI-DNAT
// cluster name "outbound_.PORT_.SUBSET_.HOST". The port must be a decimal number in
// 1..65535; an outbound name needs a host.
func ParseClusterName(name string) (ClusterNameParts, error) {
	if rest, ok := strings.CutPrefix(name, sniDNATPrefix); ok {
		port, rest, ok1 := strings.Cut(rest, "_.")
		sub, host, ok2 := strings.Cut(rest, "_.")
		if !ok1 || !ok2 {
			return ClusterNameParts{}, fmt.Errorf("cluster name %q: want outbound_.PORT_.SUBSET_.HOST", name)
		}
		num, err := parsePort(port)
		if err != nil {
			return ClusterNameParts{}, fmt.Errorf("cluster name %q: %w", name, err)
		}
		if host == "" || strings.Contains(host, "|") || strings.Contains(sub, "|") {
			return ClusterNameParts{}, fmt.Errorf("cluster name %q: want outbound_.PORT_.SUBSET_.HOST with a host and no '|'", name)
		}
		return ClusterNameParts{Direction: Outbound, Port: num, Subset: sub, Host: host, SNIDNAT: true}, nil
	}
	dir, rest, ok1 := strings.Cut(name, "|")
	port, rest, ok2 := strings.Cut(rest, "|")
	sub, host, ok3 := strings.Cut(rest, "|")
	if !ok1 || !ok2 || !ok3 {
		return ClusterNameParts{}, fmt.Errorf("cluster name %q: want DIRECTION|PORT|SUBSET|HOST (4 fields separated by '|')", name)
	}
	if dir != Outbound && dir != Inbound {
		return ClusterNameParts{}, fmt.Errorf("cluster name %q: direction %q is neither %q nor %q", name, dir, Outbound, Inbound)
	}
	num, err := parsePort(port)
	if err != nil {
		return ClusterNameParts{}, fmt.Errorf("cluster name %q: %w", name, err)
	}
	if dir == Outbound && host == "" {
		return ClusterNameParts{}, fmt.Errorf("cluster name %q: outbound cluster without a host", name)
	}
	if strings.Contains(host, "|") {
		return ClusterNameParts{}, fmt.Errorf("cluster name %q: host %q contains '|'", name, host)
	}
	return ClusterNameParts{Direction: dir, Port: num, Subset: sub, Host: host}, nil
}

func parsePort(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 || n > 65535 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("port %q is not a number in 1..65535", s)
	}
	return uint32(n), nil
}

// HostPortName is the proxyless gRPC listener and route configuration name "HOST:PORT".
func HostPortName(host string, port uint32) string {
	return host + ":" + strconv.FormatUint(uint64(port), 10)
}

// ParseHostPort splits "HOST:PORT" at the last colon.
func ParseHostPort(name string) (string, uint32, error) {
	i := strings.LastIndexByte(name, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("name %q: want HOST:PORT", name)
	}
	port, err := parsePort(name[i+1:])
	if err != nil {
		return "", 0, fmt.Errorf("name %q: %w", name, err)
	}
	return name[:i], port, nil
}

// ServiceKey is the dependency key of a registry service (its definition).
func ServiceKey(svc *model.Service) istioconfig.Key {
	return istioconfig.Key{Kind: model.KindService, Name: svc.Hostname, Namespace: svc.Namespace}
}

// EndpointKey is the dependency key of a registry service's endpoints.
func EndpointKey(svc *model.Service) istioconfig.Key {
	return istioconfig.Key{Kind: model.KindEndpoint, Name: svc.Hostname, Namespace: svc.Namespace}
}

// wantAll reports whether names is a wildcard request.
func wantAll(names []string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == "*" {
			return true
		}
	}
	return false
}

// nameSet returns the requested names as a set, nil for a wildcard request.
func nameSet(names []string) map[string]struct{} {
	if wantAll(names) {
		return nil
	}
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

// vtMessage is implemented by every envoy message when built with -tags vtprotobuf (the envoy
// module's vtprotobuf code is behind that build tag; the Makefile sets it).
type vtMessage interface {
	proto.Message
	MarshalVTStrict() ([]byte, error)
	SizeVT() int
}

// Marshal encodes a resource with vtprotobuf when the message supports it (every envoy type,
// with -tags vtprotobuf), falling back to deterministic proto.Marshal.
func Marshal(m proto.Message) ([]byte, error) {
	if vt, ok := m.(vtMessage); ok {
		return vt.MarshalVTStrict()
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// Size is the encoded size of a resource.
func Size(m proto.Message) int {
	if vt, ok := m.(vtMessage); ok {
		return vt.SizeVT()
	}
	return proto.Size(m)
}

// toAny wraps an extension config in an Any, encoded with vtprotobuf.
func toAny(m proto.Message) *anypb.Any {
	b, err := Marshal(m)
	if err != nil {
		// Envoy messages built here always encode; a failure is a programming error.
		panic(fmt.Sprintf("gen: marshal %T: %v", m, err))
	}
	return &anypb.Any{TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()), Value: b}
}
