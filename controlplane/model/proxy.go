package model

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
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
	// IPAddresses of the workload, as istiod takes them: metadata INSTANCE_IPS (a comma
	// separated list) when every address in it is an IP, else the second field of the id.
	IPAddresses []string
	// ID is "pod.namespace" (the third field).
	ID string
	// DNSDomain is the fourth field, e.g. "ns.svc.cluster.local".
	DNSDomain string
	// Namespace is the proxy's config namespace: metadata NAMESPACE, else the first label of
	// DNSDomain when it has several (istiod's GetProxyConfigNamespace), else "" (istiod serves
	// such a proxy as of no namespace: it sees what is exported everywhere, the root
	// namespace's Sidecar and policies).
	Namespace string
	// NodeNamespace is metadata NAMESPACE as sent, "" when absent: istiod then looks for the
	// proxy's ServiceEntry workload in every namespace, and for its Pod in none.
	NodeNamespace string
	// Labels are the proxy's labels as istiod gives them (Resolved): its node's (metadata
	// LABELS) with the topology labels added (topology.go), those of its workload in the
	// registry instead for a connected proxy (WithWorkloadLabels).
	Labels map[string]string
	// NodeLabels are the node's metadata LABELS as parsed.
	NodeLabels map[string]string
	// StaticLabels are the node's metadata STATIC_LABELS (the agent's ISTIO_METAJSON_LABELS):
	// kept under the workload's labels when those replace the node's.
	StaticLabels map[string]string
	ClusterID    string
	// NodeName is metadata NODE_NAME (the Kubernetes node), Network metadata NETWORK.
	NodeName     string
	Network      string
	Generator    string
	IstioVersion string
	// InterceptionMode from metadata INTERCEPTION_MODE (REDIRECT, TPROXY, NONE).
	InterceptionMode string
	// Unprivileged is metadata UNPRIVILEGED_POD read as a boolean ("true", "1", …): the
	// proxy cannot bind ports 1-1023.
	Unprivileged bool
	// StaticPorts are the ports of the agent's own listeners, from metadata ENVOY_STATUS_PORT,
	// ENVOY_PROMETHEUS_PORT, ENVOY_SECURE_METRICS_PORT and ENVOY_SECURE_MERGED_METRICS_PORT
	// (those absent or 0 left out): a Sidecar ingress port on the wildcard address may not
	// take one (istiod's conflictWithReservedListener).
	StaticPorts []uint32
	// Locality is the proxy's locality as istiod resolves it (Resolved): its labels' region,
	// zone and subzone, else its locality label's, else its node's (NodeLocality). On a proxy
	// built by hand (not Resolved) it is the node's own (gen.ProxyLocality resolves it).
	Locality Locality
	// NodeLocality is the node's own locality (Node.locality).
	NodeLocality Locality
	// Resolved says that Labels and Locality are istiod's (ParseProxy, WithWorkloadLabels), the
	// topology labels added; a proxy built by hand has only its node's.
	Resolved bool
	// memo is a parsed proxy's last WithWorkloadLabels result (nil on copies and on proxies
	// built by hand).
	memo *workloadMemo
	// NodeID is the raw node id.
	NodeID string
	// Identity is the SPIFFE id the stream's peer authenticated as (client certificate or
	// JWT) on the secure ADS listener; empty on the plaintext listener. It is set by the ADS
	// server, never parsed from the node (which the client controls), and selects the
	// workload certificate SDS serves.
	Identity string
}

// ParseNodeID splits an Istio node id "type~ip~pod.ns~ns.svc.cluster.local". The IP field is
// returned as written: ParseProxy checks it, and needs it only without INSTANCE_IPS.
func ParseNodeID(id string) (NodeType, string, string, string, error) {
	parts := strings.Split(id, "~")
	if len(parts) != 4 {
		return "", "", "", "", fmt.Errorf("node id %q: want 4 fields type~ip~pod.namespace~domain separated by '~', got %d", id, len(parts))
	}
	t := NodeType(parts[0])
	if t != SidecarProxy && t != Router {
		return "", "", "", "", fmt.Errorf("node id %q: unknown proxy type %q (want %q or %q)", id, parts[0], SidecarProxy, Router)
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
	md := node.GetMetadata().GetFields()
	ips, err := proxyIPs(stringField(md, "INSTANCE_IPS"), ip)
	if err != nil {
		return nil, fmt.Errorf("node id %q: %w", node.GetId(), err)
	}
	p := &Proxy{Type: t, IPAddresses: ips, ID: id, DNSDomain: domain, NodeID: node.GetId()}
	if l := node.GetLocality(); l != nil {
		p.NodeLocality = Locality{Region: l.GetRegion(), Zone: l.GetZone(), SubZone: l.GetSubZone()}
	}
	p.NodeNamespace = stringField(md, "NAMESPACE")
	p.Namespace = p.NodeNamespace
	if p.Namespace == "" {
		// As istiod: the namespace of a Kubernetes DNS domain ("ns.svc.cluster.local"), not
		// the id's pod.namespace; without one, none ("").
		if ns, _, ok := strings.Cut(domain, "."); ok {
			p.Namespace = ns
		}
	}
	p.ClusterID = stringField(md, "CLUSTER_ID")
	p.NodeName = stringField(md, "NODE_NAME")
	p.Network = stringField(md, "NETWORK")
	p.Generator = stringField(md, "GENERATOR")
	p.IstioVersion = stringField(md, "ISTIO_VERSION")
	p.InterceptionMode = stringField(md, "INTERCEPTION_MODE")
	p.Unprivileged, _ = strconv.ParseBool(stringField(md, "UNPRIVILEGED_POD"))
	for _, k := range []string{"ENVOY_STATUS_PORT", "ENVOY_PROMETHEUS_PORT", "ENVOY_SECURE_METRICS_PORT", "ENVOY_SECURE_MERGED_METRICS_PORT"} {
		if n := portField(md, k); n != 0 {
			p.StaticPorts = append(p.StaticPorts, n)
		}
	}
	if p.NodeLabels, err = stringMap(md, "LABELS", node.GetId()); err != nil {
		return nil, err
	}
	if p.StaticLabels, err = stringMap(md, "STATIC_LABELS", node.GetId()); err != nil {
		return nil, err
	}
	// The labels and locality istiod gives a proxy whose workload it does not know.
	l := labelLayers{over: p.NodeLabels}
	p.Locality = l.addProxy(p, p.NodeLocality)
	p.Labels = l.build()
	p.Resolved = true
	p.memo = &workloadMemo{}
	return p, nil
}

// proxyIPs are a proxy's addresses as istiod's ParseServiceNodeWithMetadata takes them: the
// INSTANCE_IPS metadata (comma separated) when it is set and every entry is an IP, else the
// node id's IP field when that is an IP.
func proxyIPs(instanceIPs, idIP string) ([]string, error) {
	if instanceIPs != "" {
		ips := strings.Split(instanceIPs, ",")
		if !slices.ContainsFunc(ips, func(s string) bool { _, err := netip.ParseAddr(s); return err != nil }) {
			return ips, nil
		}
	}
	if _, err := netip.ParseAddr(idIP); err == nil {
		return []string{idIP}, nil
	}
	if instanceIPs != "" {
		return nil, fmt.Errorf("bad IP address %q, and metadata INSTANCE_IPS %q is not a comma separated list of IP addresses", idIP, instanceIPs)
	}
	return nil, fmt.Errorf("bad IP address %q and no metadata INSTANCE_IPS", idIP)
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

// portField reads metadata key as a port: a number (as the agent sends it) or a decimal
// string; 0 when absent or not a port.
func portField(md map[string]*structpb.Value, key string) uint32 {
	v := md[key]
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if n := k.NumberValue; n > 0 && n <= 65535 && n == float64(uint32(n)) {
			return uint32(n)
		}
	case *structpb.Value_StringValue:
		if n, err := strconv.ParseUint(k.StringValue, 10, 16); err == nil {
			return uint32(n)
		}
	}
	return 0
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
