package fakeenvoy

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// IdentityTemplate builds Istio-style node identities for a fleet.
type IdentityTemplate struct {
	// Type is the Istio proxy type: "sidecar" (default) or "router" (a gateway).
	Type string
	// Namespace of every client (default "default"), unless Namespaces > 0 spreads the clients
	// round-robin over ns-0 .. ns-(Namespaces-1).
	Namespace  string
	Namespaces int
	// ClusterID (default "Kubernetes"), IstioVersion (default "1.28.0"), Generator (omitted
	// when empty; "grpc" marks proxyless gRPC clients).
	ClusterID, IstioVersion, Generator string
	// Labels go to metadata LABELS.
	Labels map[string]string
	// IPBase is the first client address; client i gets IPBase + i. The default, 100.64.0.1
	// (shared address space), keeps fake proxies off the simulator's 10.0.0.0/8 endpoint
	// addresses: a proxy whose IP is an endpoint gets inbound config of its own, so a chance
	// collision would change what the control plane generates for it.
	IPBase string
}

// Validate reports a template that cannot produce identities.
func (t IdentityTemplate) Validate() error {
	switch t.Type {
	case "", "sidecar", "router":
	default:
		return fmt.Errorf("identity: type %q: use sidecar or router", t.Type)
	}
	if t.Namespaces < 0 {
		return fmt.Errorf("identity: namespaces %d must be >= 0", t.Namespaces)
	}
	if t.IPBase != "" {
		a, err := netip.ParseAddr(t.IPBase)
		if err != nil || !a.Is4() {
			return fmt.Errorf("identity: ipBase %q must be an IPv4 address like 10.0.0.1", t.IPBase)
		}
	}
	return nil
}

// NamespaceOf returns the namespace client index lives in.
func (t IdentityTemplate) NamespaceOf(index int) string {
	if t.Namespaces > 0 {
		return fmt.Sprintf("ns-%d", index%t.Namespaces)
	}
	if t.Namespace != "" {
		return t.Namespace
	}
	return "default"
}

// Node returns the identity of client index: id type~IP~pod-index.ns~ns.svc.cluster.local and
// Istio's node metadata. An invalid template still yields a node (with defaults); call
// Validate first to report it.
func (t IdentityTemplate) Node(index int) *corev3.Node {
	typ := t.Type
	if typ == "" {
		typ = "sidecar"
	}
	ns := t.NamespaceOf(index)
	ip := ipAt(t.IPBase, index)
	pod := fmt.Sprintf("pod-%d", index)
	if typ == "router" {
		pod = fmt.Sprintf("gateway-%d", index)
	}
	clusterID := orDefault(t.ClusterID, "Kubernetes")
	version := orDefault(t.IstioVersion, "1.28.0")

	labels := make(map[string]*structpb.Value, len(t.Labels))
	keys := make([]string, 0, len(t.Labels))
	for k := range t.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		labels[k] = structpb.NewStringValue(t.Labels[k])
	}
	fields := map[string]*structpb.Value{
		"NAMESPACE":         structpb.NewStringValue(ns),
		"CLUSTER_ID":        structpb.NewStringValue(clusterID),
		"ISTIO_VERSION":     structpb.NewStringValue(version),
		"INTERCEPTION_MODE": structpb.NewStringValue("REDIRECT"),
		"NAME":              structpb.NewStringValue(pod),
		"INSTANCE_IPS":      structpb.NewStringValue(ip),
		"LABELS":            structpb.NewStructValue(&structpb.Struct{Fields: labels}),
	}
	if t.Generator != "" {
		fields["GENERATOR"] = structpb.NewStringValue(t.Generator)
	}
	return &corev3.Node{
		Id:            fmt.Sprintf("%s~%s~%s.%s~%s.svc.cluster.local", typ, ip, pod, ns, ns),
		Cluster:       typ + "." + ns,
		Metadata:      &structpb.Struct{Fields: fields},
		UserAgentName: "envoy",
	}
}

func ipAt(base string, index int) string {
	a, err := netip.ParseAddr(base)
	if err != nil || !a.Is4() {
		a = netip.AddrFrom4([4]byte{100, 64, 0, 1})
	}
	b := a.As4()
	v := binary.BigEndian.Uint32(b[:]) + uint32(index)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
