package gen

import (
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestHeldEgressListenerOrder: on a listener an egress listener with a port builds (here bound to
// 127.0.0.2), the first of several services takes it in that egress listener's own order, as
// istiod builds it: hosts that all name one host in one namespace order the services by creation
// time alone, so the older ledger keeps the TCP listener although the proxy's whole scope puts
// tally, exported to the proxy's namespace by name, before the public ledger (random seeds 355
// and 412 differed so). Without a port the catch-all's order stays the whole scope's.
func TestHeldEgressListenerOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	ledger := &model.Service{Hostname: "ledger.example.com", Namespace: "app", Addresses: []string{"240.240.1.12"}, CreationTime: t0,
		Ports: []model.Port{{Name: "tcp-443", Number: 443, Protocol: model.ProtocolTCP}}}
	tally := &model.Service{Hostname: "tally.plain.svc.cluster.local", Namespace: "plain", Addresses: []string{"240.240.1.13"}, CreationTime: t0.Add(time.Hour),
		ExportTo: []string{"other", "plain"}, Ports: []model.Port{{Name: "http-443", Number: 443, Protocol: model.ProtocolHTTP}}}
	for _, tc := range []struct {
		name  string
		hosts []string
		want  string
	}{
		{"exact hosts: creation time", []string{"app/ledger.example.com", "plain/tally.plain.svc.cluster.local"}, "outbound|443||ledger.example.com"},
		{"exact hosts listed the other way", []string{"plain/tally.plain.svc.cluster.local", "app/ledger.example.com"}, "outbound|443||ledger.example.com"},
		{"a wildcard host: exported by name first", []string{"app/*", "plain/tally.plain.svc.cluster.local"}, "outbound|443||tally.plain.svc.cluster.local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "bound", Namespace: "other"},
				Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
					{Port: &networking.SidecarPort{Number: 443, Protocol: "TCP", Name: "bound-443"}, Bind: "127.0.0.2", Hosts: tc.hosts},
					{Hosts: []string{"./*"}}}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{ledger, tally}, Configs: []*istioconfig.Config{sc}})
			p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{"10.2.9.9"}, ID: "client.other", Namespace: "other", DNSDomain: "other.svc.cluster.local"}
			g, _ := generateAll(t, p, s) // the second service's chain is reported as left out
			checkResources(t, p, g)
			var got string
			for _, r := range g[ListenerType] {
				if r.Name != "127.0.0.2_443" {
					continue
				}
				tp := &tcpproxyv3.TcpProxy{}
				fcs := r.Message.(*listenerv3.Listener).GetFilterChains()
				if len(fcs) != 1 || fcs[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(tp) != nil {
					t.Fatalf("127.0.0.2_443: %d chains, want one tcp_proxy", len(fcs))
				}
				got = tp.GetCluster()
			}
			if got != tc.want {
				t.Errorf("127.0.0.2_443 proxies to %q, want %q", got, tc.want)
			}
		})
	}
}
