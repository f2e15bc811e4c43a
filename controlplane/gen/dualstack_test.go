package gen

import (
	"maps"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestDualStackProxy: a sidecar with an IPv4 and an IPv6 address is built as an IPv4 one
// (istiod's dual stack support is off by default), but for what istiod gives it regardless: ::
// beside 0.0.0.0 on the outbound listeners whose address istiod picks itself (its wildcard),
// ::1 beside 127.0.0.1 where it binds the loopback (captureMode NONE without a bind, an
// HTTP_PROXY port), and ::6 beside 127.0.0.6 as InboundPassthroughCluster's source address.
// A VIP, a bind the Sidecar names (0.0.0.0 included) and the virtual listeners get none, and an
// IPv4 proxy none at all (parity corpus: sidecar-dual, sidecar-dual-bind, sidecar-none-dual,
// sidecar-quire-dual, sidecar-quire-dual-none).
func TestDualStackProxy(t *testing.T) {
	vip := &model.Service{Hostname: "vip.duo.svc.cluster.local", Namespace: "duo", Addresses: []string{"240.0.97.1"}, Ports: []model.Port{
		{Name: "tcp", Number: 5500, Protocol: model.ProtocolTCP}, {Name: "http", Number: 7500, Protocol: model.ProtocolHTTP}}}
	novip := &model.Service{Hostname: "novip.duo.example", Namespace: "duo", Resolution: model.ResolutionDNS, MeshExternal: true,
		Ports: []model.Port{{Name: "tls", Number: 443, Protocol: model.ProtocolTLS}, {Name: "http", Number: 7501, Protocol: model.ProtocolHTTP}}}
	egress := func(num uint32, proto, bind string, mode networking.CaptureMode) *networking.IstioEgressListener {
		return &networking.IstioEgressListener{Port: &networking.SidecarPort{Number: num, Protocol: proto, Name: "p"}, Bind: bind, CaptureMode: mode, Hosts: []string{"./*"}}
	}
	sc := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "duo", Namespace: "duo"},
		Spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "bound"}},
			Egress: []*networking.IstioEgressListener{
				egress(7501, "HTTP", "0.0.0.0", networking.CaptureMode_DEFAULT), // named: no ::
				egress(5500, "TCP", "", networking.CaptureMode_NONE),            // 127.0.0.1 and ::1
				egress(3128, "HTTP_PROXY", "", networking.CaptureMode_DEFAULT),  // 0.0.0.0 and ::
				{Hosts: []string{"./*"}}}}}
	// loop binds two ports to 127.0.0.1 itself (held), the catch-all the rest: under interception
	// mode NONE those two keep the bind as written, the others get istiod's loopbacks.
	loop := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "loop", Namespace: "duo"},
		Spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "loop"}},
			Egress: []*networking.IstioEgressListener{
				egress(5500, "TCP", "127.0.0.1", networking.CaptureMode_DEFAULT),
				egress(7500, "HTTP", "127.0.0.1", networking.CaptureMode_DEFAULT),
				{Hosts: []string{"./*"}}}}}
	// wild's catch-all names 0.0.0.0 as its bind: an address as written, no :: beside it.
	wild := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "wild", Namespace: "duo"},
		Spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "wild"}},
			Egress:           []*networking.IstioEgressListener{{Hosts: []string{"./*"}, Bind: "0.0.0.0"}}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{vip, novip}, Configs: []*istioconfig.Config{sc, loop, wild},
		Endpoints: map[string][]*model.Endpoint{vip.Hostname: {{Service: vip.Hostname, Address: "10.97.0.9", Weight: 1, Health: model.Healthy}}}})

	for _, tc := range []struct {
		name  string
		ips   []string
		app   string
		none  bool   // interception mode NONE
		class string // LoopbackKey
		// extra is each outbound listener's additional address ("" for none).
		extra    map[string]string
		upstream []string // InboundPassthroughCluster's source addresses
	}{
		{"IPv4", []string{"10.97.0.1"}, "client", false, "", map[string]string{
			"0.0.0.0_443": "", "0.0.0.0_7500": "", "0.0.0.0_7501": "", "240.0.97.1_5500": ""}, []string{"127.0.0.6"}},
		{"dual stack", []string{"10.97.0.1", "fd00:97::1"}, "client", false, "dual", map[string]string{
			"0.0.0.0_443": "::", "0.0.0.0_7500": "::", "0.0.0.0_7501": "::", "240.0.97.1_5500": ""}, []string{"127.0.0.6", "::6"}},
		{"dual stack, IPv6 first", []string{"fd00:97::1", "10.97.0.1"}, "client", false, "dual", map[string]string{
			"0.0.0.0_443": "::", "0.0.0.0_7500": "::", "0.0.0.0_7501": "::", "240.0.97.1_5500": ""}, []string{"127.0.0.6", "::6"}},
		{"IPv4, Sidecar", []string{"10.97.0.1"}, "bound", false, "", map[string]string{
			"0.0.0.0_3128": "", "0.0.0.0_443": "", "0.0.0.0_7500": "", "0.0.0.0_7501": "", "127.0.0.1_5500": "", "240.0.97.1_5500": ""}, []string{"127.0.0.6"}},
		{"dual stack, Sidecar", []string{"10.97.0.1", "fd00:97::1"}, "bound", false, "dual", map[string]string{
			"0.0.0.0_3128": "::", "0.0.0.0_443": "::", "0.0.0.0_7500": "::", "0.0.0.0_7501": "", "127.0.0.1_5500": "::1", "240.0.97.1_5500": ""}, []string{"127.0.0.6", "::6"}},
		// Interception mode NONE: every port on istiod's loopbacks, once each.
		{"dual stack, interception NONE", []string{"10.97.0.1", "fd00:97::1"}, "client", true, "dual", map[string]string{
			"127.0.0.1_443": "::1", "127.0.0.1_5500": "::1", "127.0.0.1_7500": "::1", "127.0.0.1_7501": "::1"}, []string{"127.0.0.6", "::6"}},
		{"dual stack, interception NONE, loopback bind named", []string{"10.97.0.1", "fd00:97::1"}, "loop", true, "dual", map[string]string{
			"127.0.0.1_443": "::1", "127.0.0.1_5500": "", "127.0.0.1_7500": "", "127.0.0.1_7501": "::1"}, []string{"127.0.0.6", "::6"}},
		{"dual stack, catch-all bind 0.0.0.0", []string{"10.97.0.1", "fd00:97::1"}, "wild", false, "dual", map[string]string{
			"0.0.0.0_443": "", "0.0.0.0_5500": "", "0.0.0.0_7500": "", "0.0.0.0_7501": ""}, []string{"127.0.0.6", "::6"}},
		{"IPv6 only", []string{"fd00:97::1"}, "client", false, "v6", map[string]string{
			"240.0.97.1_5500": "", "::_443": "", "::_7500": "", "::_7501": ""}, []string{"::6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &model.Proxy{Type: model.SidecarProxy, IPAddresses: tc.ips, ID: "pod.duo", Namespace: "duo", DNSDomain: "duo.svc.cluster.local", Labels: map[string]string{"app": tc.app}}
			if tc.none {
				p.InterceptionMode = "NONE"
			}
			if got := LoopbackKey(p); got != tc.class {
				t.Errorf("LoopbackKey = %q, want %q", got, tc.class)
			}
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			got := map[string]string{}
			for _, r := range g[ListenerType] {
				l := r.Message.(*listenerv3.Listener)
				var extra []string
				for _, a := range l.GetAdditionalAddresses() {
					sa := a.GetAddress().GetSocketAddress()
					if sa.GetPortValue() != l.GetAddress().GetSocketAddress().GetPortValue() {
						t.Errorf("%s: additional address on port %d", r.Name, sa.GetPortValue())
					}
					extra = append(extra, sa.GetAddress())
				}
				if len(extra) > 1 {
					t.Errorf("%s: additional addresses %v, want at most one", r.Name, extra)
				}
				switch r.Name {
				case VirtualOutboundListener, VirtualInboundListener:
					if len(extra) > 0 {
						t.Errorf("%s: additional addresses %v, want none (istiod adds them with dual stack support only)", r.Name, extra)
					}
					continue
				}
				got[r.Name] = ""
				if len(extra) > 0 {
					got[r.Name] = extra[0]
				}
			}
			if !maps.Equal(got, tc.extra) {
				t.Errorf("outbound listeners and their additional address:\n got %v\nwant %v", got, tc.extra)
			}
			var src []string
			for _, r := range g[ClusterType] {
				if r.Name != InboundPassthroughCluster {
					continue
				}
				b := r.Message.(*clusterv3.Cluster).GetUpstreamBindConfig()
				src = append(src, b.GetSourceAddress().GetAddress())
				for _, e := range b.GetExtraSourceAddresses() {
					src = append(src, e.GetAddress().GetAddress())
				}
			}
			if !slices.Equal(src, tc.upstream) {
				t.Errorf("%s source addresses %v, want %v", InboundPassthroughCluster, src, tc.upstream)
			}
		})
	}
}
