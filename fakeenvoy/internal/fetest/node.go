package fetest

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// Node is the node of sidecar index in namespace ns, as fakeenvoy.IdentityTemplate{Namespace:
// ns}.Node(index) builds it (the package fakeenvoy's tests check they are equal): for the
// tests of packages fakeenvoy imports, which cannot use IdentityTemplate.
func Node(ns string, index int) *corev3.Node {
	b := [4]byte{100, 64, 0, 1}
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(index))
	ip := netip.AddrFrom4(b)
	pod := fmt.Sprintf("pod-%d", index)
	return &corev3.Node{
		Id:      fmt.Sprintf("sidecar~%s~%s.%s~%s.svc.cluster.local", ip, pod, ns, ns),
		Cluster: "sidecar." + ns,
		Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{
			"NAMESPACE":         structpb.NewStringValue(ns),
			"CLUSTER_ID":        structpb.NewStringValue("Kubernetes"),
			"ISTIO_VERSION":     structpb.NewStringValue("1.28.0"),
			"INTERCEPTION_MODE": structpb.NewStringValue("REDIRECT"),
			"NAME":              structpb.NewStringValue(pod),
			"INSTANCE_IPS":      structpb.NewStringValue(ip.String()),
			"LABELS":            structpb.NewStructValue(&structpb.Struct{Fields: make(map[string]*structpb.Value, 0)}),
		}},
		UserAgentName: "envoy",
	}
}
