package gen

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// Tests of differences from istiod the random parity meshes found (hack/istio/parity,
// testdata/mesh/found.yaml section 10).

// generatedCluster returns the generated cluster called name, nil when there is none.
func generatedCluster(g generated, name string) *clusterv3.Cluster {
	for _, r := range g[ClusterType] {
		if r.Name == name {
			return r.Message.(*clusterv3.Cluster)
		}
	}
	return nil
}

// mentions reports whether any generated resource of typeURL names s (a cluster name) in its
// JSON form.
func mentions(t *testing.T, g generated, typeURL, s string) bool {
	t.Helper()
	for _, r := range g[typeURL] {
		b, err := protojson.Marshal(r.Message)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// TestDNSEntryWithoutEndpoints: a DNS entry whose workloadSelector selects no WorkloadEntry
// has no endpoints at all (not even its host name, which is the endpoint of an entry without
// workloadSelector and endpoints): istiod builds no cluster for it, while the sidecar's route
// and tcp_proxy still name the cluster. With its host-name endpoint it has a STRICT_DNS one.
func TestDNSEntryWithoutEndpoints(t *testing.T) {
	const host = "depot.example.com"
	svc := &model.Service{Hostname: host, Namespace: "other", Addresses: []string{"240.10.0.1"}, Resolution: model.ResolutionDNS, MeshExternal: true,
		Ports:  []model.Port{{Name: "http", Number: 8300, Protocol: model.ProtocolHTTP}, {Name: "tcp", Number: 8301, Protocol: model.ProtocolTCP}},
		Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Namespace: "other", Name: "depot"}}
	vs := vsConfig("depot", "other", &networking.VirtualService{Hosts: []string{host}, Http: []*networking.HTTPRoute{{
		Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host, Port: &networking.PortSelector{Number: 8300}}}},
	}}})
	for _, tc := range []struct {
		name      string
		endpoints []*model.Endpoint
		want      clusterv3.Cluster_DiscoveryType // -1: no cluster
	}{
		{"selector selects nothing", nil, -1},
		{"host name endpoint", []*model.Endpoint{dnsHostEndpoint(svc)}, clusterv3.Cluster_STRICT_DNS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := model.SnapshotInput{Services: []*model.Service{svc}, Configs: []*istioconfig.Config{vs}}
			if tc.endpoints != nil {
				in.Endpoints = map[string][]*model.Endpoint{host: tc.endpoints}
			}
			p := sidecarProxy("10.9.0.1", "other")
			g, err := generateAll(t, p, model.NewSnapshot(1, in))
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			for _, port := range []uint32{8300, 8301} {
				name := ClusterName(Outbound, port, "", host)
				c := generatedCluster(g, name)
				switch {
				case tc.want < 0 && c != nil:
					t.Errorf("%s: built (%v), want no cluster", name, c.GetType())
				case tc.want >= 0 && c.GetType() != tc.want:
					t.Errorf("%s: type %v (built %v), want %v", name, c.GetType(), c != nil, tc.want)
				}
			}
			if !mentions(t, g, RouteType, ClusterName(Outbound, 8300, "", host)) {
				t.Errorf("no route names the cluster of port 8300")
			}
			if !mentions(t, g, ListenerType, ClusterName(Outbound, 8301, "", host)) {
				t.Errorf("no tcp_proxy names the cluster of port 8301")
			}
		})
	}
}
