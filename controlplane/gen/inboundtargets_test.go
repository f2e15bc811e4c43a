package gen

import (
	"slices"
	"testing"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestInboundServiceTargets: a sidecar's inbound clusters come from its service targets as
// istiod's registries find them: a ServiceEntry of its node's NAMESPACE (of any namespace
// without one), a Kubernetes Service of its config namespace, each port only where the
// endpoint serves it (inboundtargets.yaml).
func TestInboundServiceTargets(t *testing.T) {
	const ip = "10.1.0.1"
	entry := func(host, ns string, num, target uint32) (*model.Service, *model.Endpoint) {
		svc := &model.Service{Hostname: host, Namespace: ns, Resolution: model.ResolutionStatic, Addresses: []string{"240.0.97.9"},
			Source: istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: host, Namespace: ns},
			Ports:  []model.Port{{Name: "tcp", Number: num, Protocol: model.ProtocolTCP}}}
		return svc, &model.Endpoint{Service: host, Address: ip, Ports: map[string]uint32{"tcp": target}, Weight: 1, Health: model.Healthy,
			Source: istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Name: "w", Namespace: ns}}
	}
	own, ownEp := entry("own.app.example", "app", 9460, 9461)
	annex, annexEp := entry("lintel.annex.example", "annex", 9470, 9471)
	// A Kubernetes Service of app whose slice lists its port "http" but not "admin".
	kube := &model.Service{Hostname: "web.app.svc.cluster.local", Namespace: "app", Addresses: []string{"10.96.9.1"},
		Source: istioconfig.Key{Kind: model.KindService, Name: "web", Namespace: "app"},
		Ports:  []model.Port{{Name: "http", Number: 80, Protocol: model.ProtocolHTTP}, {Name: "admin", Number: 81, Protocol: model.ProtocolHTTP}}}
	kubeEp := &model.Endpoint{Service: kube.Hostname, Address: ip, Ports: map[string]uint32{"http": 8080}, OnlyListedPorts: true, Weight: 1, Health: model.Healthy,
		Source: istioconfig.Key{Kind: "EndpointSlice", Name: "web-1", Namespace: "app"}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{own, annex, kube},
		Endpoints: map[string][]*model.Endpoint{own.Hostname: {ownEp}, annex.Hostname: {annexEp}, kube.Hostname: {kubeEp}}})
	for _, tc := range []struct {
		name, nodeNS string
		want         []string
	}{
		{"node NAMESPACE app", "app", []string{"inbound|8080||", "inbound|9461||"}},
		{"no node NAMESPACE: entries of any namespace", "", []string{"inbound|8080||", "inbound|9461||", "inbound|9471||"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{ip}, ID: "web-1.app", Namespace: "app", NodeNamespace: tc.nodeNS,
				DNSDomain: "app.svc.cluster.local", Labels: map[string]string{"app": "web"}, Resolved: true}
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []string
			for _, n := range names(g[ClusterType]) {
				if len(n) > 8 && n[:8] == "inbound|" {
					got = append(got, n)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("inbound clusters %v, want %v", got, tc.want)
			}
		})
	}
}
