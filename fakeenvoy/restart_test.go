package fakeenvoy

import (
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/machine"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	C = resource.ClusterType
	E = resource.EndpointType
)

// TestClientRestartIsNewProcess: after Restart the client starts from nothing, in SotW and
// Delta: no versions, no initial_resource_versions, CDS only, initialization again.
func TestClientRestartIsNewProcess(t *testing.T) {
	for _, delta := range []bool{false, true} {
		c, err := NewClient(ClientConfig{Node: IdentityTemplate{}.Node(0), Delta: delta}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.m.Start(t0)
		for _, r := range []struct {
			typeURL, nonce string
			msg            proto.Message
		}{{C, "a", fetest.EDSCluster("c1")}, {E, "b", fetest.CLA("c1", "10.0.0.1", 80)}} {
			a := fetest.MustAny(t, r.msg)
			if delta {
				c.m.OnDelta(&discoveryv3.DeltaDiscoveryResponse{TypeUrl: r.typeURL, Nonce: r.nonce, Resources: []*discoveryv3.Resource{{Name: "c1", Version: r.nonce, Resource: a}}}, t0)
			} else {
				c.m.OnSotw(&discoveryv3.DiscoveryResponse{TypeUrl: r.typeURL, VersionInfo: "1", Nonce: r.nonce, Resources: []*anypb.Any{a}}, t0)
			}
		}
		if again := c.m.Start(t0); again.Requests() < 2 {
			t.Fatalf("delta=%v: a reconnect of the same process restates its subscriptions: %d requests", delta, again.Requests())
		}
		if err := c.Restart(); err != nil {
			t.Fatal(err)
		}
		s := c.m.Start(t0)
		if delta {
			if len(s.Delta) != 1 || s.Delta[0].TypeUrl != C || len(s.Delta[0].InitialResourceVersions) != 0 {
				t.Errorf("delta restart: %v, want one CDS request with no initial versions", s.Delta)
			}
		} else {
			if len(s.Sotw) != 1 || s.Sotw[0].TypeUrl != C || s.Sotw[0].VersionInfo != "" {
				t.Errorf("sotw restart: %v, want one CDS request with no version", s.Sotw)
			}
		}
		b, blocked := c.m.Blocked()
		if c.Resource(C, "c1") != nil || !blocked || b.Reason != "waiting for the first CDS response" || c.Synced(C) {
			t.Errorf("delta=%v: the restarted client kept state (blocker %q)", delta, b.Reason)
		}
	}
}

// TestIstioSizedNode: the Istio-sized identity carries what a real sidecar's node does, sent
// once per stream with nodeOnFirstOnly.
func TestIstioSizedNode(t *testing.T) {
	small := IdentityTemplate{Namespaces: 2}.Node(3)
	big := IdentityTemplate{Namespaces: 2, IstioMetadata: true}.Node(3)
	if big.GetId() != small.GetId() {
		t.Errorf("id changed: %q vs %q", big.GetId(), small.GetId())
	}
	md := big.GetMetadata().GetFields()
	for _, k := range []string{"PROXY_CONFIG", "ANNOTATIONS", "POD_PORTS", "OWNER", "WORKLOAD_NAME", "SERVICE_ACCOUNT", "MESH_ID", "NAMESPACE", "LABELS"} {
		if md[k] == nil {
			t.Errorf("metadata %s missing", k)
		}
	}
	if len(big.GetExtensions()) < 50 || big.GetLocality() == nil || len(big.GetClientFeatures()) == 0 {
		t.Errorf("extensions %d, locality %v, client features %v", len(big.GetExtensions()), big.GetLocality(), big.GetClientFeatures())
	}
	if n := proto.Size(big); n < 4000 || n < 8*proto.Size(small) {
		t.Errorf("Istio-sized node is %d bytes (basic %d): want a few KB", n, proto.Size(small))
	}
	m, err := machine.New(machine.Config{Node: big, NodeOnFirstOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	first := m.Start(t0)
	s := m.OnSotw(&discoveryv3.DiscoveryResponse{TypeUrl: C, VersionInfo: "1", Nonce: "a", Resources: []*anypb.Any{fetest.MustAny(t, fetest.EDSCluster("c1"))}}, t0)
	if first.Sotw[0].GetNode() != big || s.Sotw[0].GetNode() != nil || s.Sotw[1].GetNode() != nil {
		t.Errorf("node must go on the stream's first request only")
	}
}

// TestFetestNode: the node the machine's tests use stands for IdentityTemplate's.
func TestFetestNode(t *testing.T) {
	for _, tc := range []struct {
		tmpl  IdentityTemplate
		ns    string
		index int
	}{{IdentityTemplate{}, "default", 0}, {IdentityTemplate{Namespace: "shop"}, "shop", 3}, {IdentityTemplate{Namespaces: 3}, "ns-1", 1000}} {
		if want, got := tc.tmpl.Node(tc.index), fetest.Node(tc.ns, tc.index); !proto.Equal(want, got) {
			t.Errorf("fetest.Node(%q, %d) = %v, want %v", tc.ns, tc.index, got, want)
		}
	}
}
