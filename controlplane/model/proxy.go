package model

import (
	"fmt"
	"net/netip"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// NodeType is the kind of proxy, the first field of an Istio node id.
type NodeType string

// Node types.
const (
	SidecarProxy NodeType = "sidecar"
	Router       NodeType = "router"
)

// Generator names which generator family serves a proxy (node metadata GENERATOR).
const (
	GeneratorEnvoy = ""     // the default: an Envoy sidecar or router
	GeneratorGRPC  = "grpc" // a proxyless gRPC client (grpc-go's xDS client)
)

// Proxy is a connected client, parsed from its Envoy node. It is immutable once built.
type Proxy struct {
	Type NodeType
	// IPAddresses of the workload (the second field of the id; several separated by "+" is
	// not used by Istio ids, one address is the norm).
	IPAddresses []string
	// ID is "pod.namespace" (the third field).
	ID string
	// DNSDomain is the fourth field, e.g. "ns.svc.cluster.local".
	DNSDomain string
	// Namespace from metadata NAMESPACE, else from the ID.
	Namespace string
	// Labels are the proxy's labels: those of its node (metadata LABELS) as parsed, replaced
	// by its workload's in the registry for a connected proxy (WithWorkloadLabels).
	Labels map[string]string
	// StaticLabels are the node's metadata STATIC_LABELS (the agent's ISTIO_METAJSON_LABELS):
	// kept under the workload's labels when those replace the node's.
	StaticLabels map[string]string
	ClusterID    string
	Generator    string
	IstioVersion string
	// InterceptionMode from metadata INTERCEPTION_MODE (REDIRECT, TPROXY, NONE).
	InterceptionMode string
	// Locality is the node's own locality (Node.locality). istiod prefers what the registry
	// and the proxy's labels say (gen.ProxyLocality); this is the last resort.
	Locality Locality
	// NodeID is the raw node id.
	NodeID string
	// Identity is the SPIFFE id the stream's peer authenticated as (client certificate or
	// JWT) on the secure ADS listener; empty on the plaintext listener. It is set by the ADS
	// server, never parsed from the node (which the client controls), and selects the
	// workload certificate SDS serves.
	Identity string
}

// ParseNodeID splits an Istio node id "type~ip~pod.ns~ns.svc.cluster.local".
func ParseNodeID(id string) (NodeType, string, string, string, error) {
	parts := strings.Split(id, "~")
	if len(parts) != 4 {
		return "", "", "", "", fmt.Errorf("node id %q: want 4 fields type~ip~pod.namespace~domain separated by '~', got %d", id, len(parts))
	}
	t := NodeType(parts[0])
	if t != SidecarProxy && t != Router {
		return "", "", "", "", fmt.Errorf("node id %q: unknown proxy type %q (want %q or %q)", id, parts[0], SidecarProxy, Router)
	}
	if _, err := netip.ParseAddr(parts[1]); err != nil {
		return "", "", "", "", fmt.Errorf("node id %q: bad IP address %q", id, parts[1])
	}
	if parts[2] == "" {
		return "", "", "", "", fmt.Errorf("node id %q: empty pod.namespace field", id)
	}
	return t, parts[1], parts[2], parts[3], nil
}

// ParseProxy builds a Proxy from an Envoy node: the Istio id and the metadata Istio sets.
func ParseProxy(node *corev3.Node) (*Proxy, error) {
	if node == nil {
		return nil, fmt.Errorf("request has no node: the first request on a stream must carry one")
	}
	t, ip, id, domain, err := ParseNodeID(node.GetId())
	if err != nil {
		return nil, err
	}
	p := &Proxy{Type: t, IPAddresses: []string{ip}, ID: id, DNSDomain: domain, NodeID: node.GetId()}
	if l := node.GetLocality(); l != nil {
		p.Locality = Locality{Region: l.GetRegion(), Zone: l.GetZone(), SubZone: l.GetSubZone()}
	}
	md := node.GetMetadata().GetFields()
	p.Namespace = stringField(md, "NAMESPACE")
	if p.Namespace == "" {
		if i := strings.IndexByte(id, '.'); i >= 0 && i < len(id)-1 {
			p.Namespace = id[i+1:]
		}
	}
	if p.Namespace == "" {
		return nil, fmt.Errorf("node id %q: no namespace in metadata NAMESPACE nor in the pod.namespace field", node.GetId())
	}
	p.ClusterID = stringField(md, "CLUSTER_ID")
	p.Generator = stringField(md, "GENERATOR")
	p.IstioVersion = stringField(md, "ISTIO_VERSION")
	p.InterceptionMode = stringField(md, "INTERCEPTION_MODE")
	if p.Labels, err = stringMap(md, "LABELS", node.GetId()); err != nil {
		return nil, err
	}
	if p.StaticLabels, err = stringMap(md, "STATIC_LABELS", node.GetId()); err != nil {
		return nil, err
	}
	return p, nil
}

// stringMap reads metadata key as a map of strings (nil when absent).
func stringMap(md map[string]*structpb.Value, key, nodeID string) (map[string]string, error) {
	lv := md[key].GetStructValue()
	if lv == nil {
		return nil, nil
	}
	out := make(map[string]string, len(lv.GetFields()))
	for k, v := range lv.GetFields() {
		s, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, fmt.Errorf("node %q: metadata %s[%q] is not a string", nodeID, key, k)
		}
		out[k] = s.StringValue
	}
	return out, nil
}

func stringField(md map[string]*structpb.Value, key string) string {
	return md[key].GetStringValue()
}

// IsGRPC reports whether the proxy is a proxyless gRPC client.
func (p *Proxy) IsGRPC() bool { return p.Generator == GeneratorGRPC }

// IP returns the proxy's first IP address.
func (p *Proxy) IP() string {
	if len(p.IPAddresses) == 0 {
		return ""
	}
	return p.IPAddresses[0]
}
