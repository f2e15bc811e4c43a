package gen

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSidecarEgressBindEdges, as istiod's buildSidecarOutboundListeners decides them: a
// catch-all egress listener binding 0.0.0.0 leaves the listener of a port another egress
// listener holds as that one built it (not binding); the catch-all is the egress listener
// without a port, not an HTTP_PROXY one (whose port model.EgressPort reports as 0); and a
// 0.0.0.0 bind skips the virtual listeners' and the agent's ports whether or not it binds.
func TestSidecarEgressBindEdges(t *testing.T) {
	a := &model.Service{Hostname: "a.rv.svc.cluster.local", Namespace: "rv",
		Ports: []model.Port{{Name: "tcp", Number: 5500, Protocol: model.ProtocolTCP}}}
	b := &model.Service{Hostname: "b.rv.svc.cluster.local", Namespace: "rv", Addresses: []string{"240.0.90.2"},
		Ports: []model.Port{{Name: "http", Number: 5700, Protocol: model.ProtocolHTTP}}}
	c := &model.Service{Hostname: "c.rv.svc.cluster.local", Namespace: "rv", Addresses: []string{"240.0.90.3"},
		Ports: []model.Port{{Name: "tcp", Number: 15021, Protocol: model.ProtocolTCP}}}
	port := func(num uint32, proto string) *networking.SidecarPort {
		return &networking.SidecarPort{Number: num, Protocol: proto, Name: "p"}
	}
	type want struct {
		name  string
		binds bool // bind_to_port unset (true); else false
	}
	tests := []struct {
		name   string
		mode   string
		egress []*networking.IstioEgressListener
		want   []want // outbound listeners besides virtualOutbound
	}{
		{"catch-all 0.0.0.0 NONE bind leaves held ports alone", "REDIRECT", []*networking.IstioEgressListener{
			{Port: port(5500, "TCP"), Hosts: []string{"./a.rv.svc.cluster.local"}},
			{Port: port(5700, "HTTP"), Hosts: []string{"./b.rv.svc.cluster.local"}},
			{Bind: "0.0.0.0", CaptureMode: networking.CaptureMode_NONE, Hosts: []string{"./*"}},
		}, []want{{"0.0.0.0_5500", false}, {"0.0.0.0_5700", false}}},
		{"HTTP_PROXY is not the catch-all", "NONE", []*networking.IstioEgressListener{
			{Port: port(15080, "HTTP_PROXY"), Hosts: []string{"./*"}},
			{Hosts: []string{"./a.rv.svc.cluster.local", "./b.rv.svc.cluster.local"}},
		}, []want{{"127.0.0.1_15080", true}, {"127.0.0.1_5500", true}, {"127.0.0.1_5700", true}}},
		{"0.0.0.0 bind skips the agent's port", "REDIRECT", []*networking.IstioEgressListener{
			{Port: port(15021, "TCP"), Bind: "0.0.0.0", Hosts: []string{"./c.rv.svc.cluster.local"}},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "edge", Namespace: "rv"},
				Spec: &networking.Sidecar{Egress: tt.egress}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{a, b, c}, Configs: []*istioconfig.Config{sc}})
			p := sidecarProxy("10.91.0.1", "rv")
			p.InterceptionMode = tt.mode
			p.StaticPorts = []uint32{15021, 15090}
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got []want
			for _, r := range g[ListenerType] {
				l := r.Message.(*listenerv3.Listener)
				if r.Name == VirtualOutboundListener || l.GetTrafficDirection().String() != "OUTBOUND" {
					continue
				}
				got = append(got, want{r.Name, l.GetBindToPort() == nil || l.GetBindToPort().GetValue()})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("listeners %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("listeners %v, want %v", got, tt.want)
					break
				}
			}
		})
	}
}

// TestInboundIPScopeWildcardBind: a 0.0.0.0 egress bind leaves out the agent's ports, so two
// proxies that differ only in them must not share CDS and LDS.
func TestInboundIPScopeWildcardBind(t *testing.T) {
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "edge", Namespace: "rv"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 5500, Protocol: "TCP", Name: "p"}, Bind: "0.0.0.0", Hosts: []string{"./*"}}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Configs: []*istioconfig.Config{sc}})
	p1, p2 := sidecarProxy("10.91.0.1", "rv"), sidecarProxy("10.91.0.1", "rv")
	p1.StaticPorts, p2.StaticPorts = []uint32{15021}, []uint32{15090}
	if k1, k2 := InboundIPScope(p1, s), InboundIPScope(p2, s); k1 == k2 {
		t.Errorf("proxies with agent ports 15021 and 15090 share the scope %q under a 0.0.0.0 bind", k1)
	}
}
