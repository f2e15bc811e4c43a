package gen

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/controlplane/model"
)

func TestSidecarListenerConflicts(t *testing.T) {
	tcp := func(host, vip string, port uint32) *model.Service {
		s := &model.Service{Hostname: host, Namespace: "n", Ports: []model.Port{{Name: "tcp", Number: port, Protocol: model.ProtocolTCP}}}
		if vip != "" {
			s.Addresses = []string{vip}
		}
		return s
	}
	http := &model.Service{Hostname: "web.n.svc.cluster.local", Namespace: "n", Ports: []model.Port{{Name: "http", Number: 8080, Protocol: model.ProtocolHTTP}}}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		tcp("a.n.svc.cluster.local", "10.0.0.1", 5432),
		tcp("b.n.svc.cluster.local", "10.0.0.1", 5432), // same VIP:port as a
		tcp("c.n.svc.cluster.local", "", 8080),         // port shared with HTTP: the default chain
		tcp("d.n.svc.cluster.local", "", 6000),
		tcp("e.n.svc.cluster.local", "", 6000), // 0.0.0.0_6000 already d's
		tcp("f.n.svc.cluster.local", "10.0.0.2", 15001),
		http,
	}})
	p := sidecarProxy("10.9.9.9", "n")
	rs, err := ForType(ListenerType, p).Generate(p, s, nil)
	if err == nil || !strings.Contains(err.Error(), "both use 10.0.0.1:5432") || !strings.Contains(err.Error(), "port 15001 collides") ||
		strings.Contains(err.Error(), "0.0.0.0_8080") {
		t.Fatalf("err = %v", err)
	}
	got := map[string]string{}
	for _, r := range rs {
		l := r.Message.(*listenerv3.Listener)
		if len(l.GetFilterChains()) == 0 {
			got[r.Name] = ""
			continue
		}
		got[r.Name] = l.GetFilterChains()[0].GetFilters()[0].GetName()
		if r.Name == "0.0.0.0_6000" && !strings.Contains(l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().String(), "d.n.svc") {
			t.Errorf("0.0.0.0_6000 should proxy to d: %v", l)
		}
		// What the HTTP chain does not take goes to c, not through (istiod merges the two).
		if r.Name == "0.0.0.0_8080" && !strings.Contains(l.GetDefaultFilterChain().GetFilters()[0].GetTypedConfig().String(), "outbound|8080||c.n.svc") {
			t.Errorf("0.0.0.0_8080's default chain should proxy to c: %v", l.GetDefaultFilterChain())
		}
	}
	want := map[string]string{
		"10.0.0.1_5432":         tcpProxyFilterName,
		"0.0.0.0_8080":          hcmFilterName,
		"0.0.0.0_6000":          tcpProxyFilterName,
		VirtualOutboundListener: tcpProxyFilterName,
		VirtualInboundListener:  "", // no filter chain of its own: only the default chain
	}
	for k, v := range want {
		if k == VirtualInboundListener {
			if _, ok := got[k]; !ok {
				t.Errorf("missing %s", k)
			}
			continue
		}
		if got[k] != v {
			t.Errorf("listener %s: filter %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("listeners %v, want the %d of %v", got, len(want), want)
	}
}

func TestGRPCListenersNamed(t *testing.T) {
	s := routeMesh()
	p := grpcProxy("app")
	rs, err := ForType(ListenerType, p).Generate(p, s, []string{"web.app.svc.cluster.local:9000", "web.app.svc.cluster.local:1", "nohost:80", ":80", "web.app.svc.cluster.local:9000"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"web.app.svc.cluster.local:9000"}, names); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if rn := routeNames(rs); len(rn) != 1 || rn[0] != "web.app.svc.cluster.local:9000" {
		t.Errorf("route names %v", rn)
	}
}

func TestForType(t *testing.T) {
	if ForType("type.googleapis.com/unknown", nil) != nil {
		t.Error("unknown type URL should have no generator")
	}
	s := routeMesh()
	for _, typeURL := range Types() {
		if ForType(typeURL, nil) == nil || ForType(typeURL, grpcProxy("x")) == nil {
			t.Errorf("%s: no generator", typeURL)
		}
	}
	// The gRPC LDS variant answers host:port names; the sidecar one does not know them.
	g := grpcProxy("app")
	rs, _ := ForType(ListenerType, g).Generate(g, s, []string{"web.app.svc.cluster.local:80"})
	sc := sidecarProxy("10.0.0.1", "app")
	rs2, _ := ForType(ListenerType, sc).Generate(sc, s, []string{"web.app.svc.cluster.local:80"})
	if len(rs) != 1 || len(rs2) != 0 {
		t.Errorf("grpc got %d, sidecar got %d", len(rs), len(rs2))
	}
}

// TestServiceAddressesIPsAndCIDRs: a ServiceEntry's addresses that are IPs (a /32 or /128 is
// one) get a listener each; CIDRs become a prefix-range chain of 0.0.0.0_PORT, also when the
// entry has IPs too (istiod builds a service per address).
func TestServiceAddressesIPsAndCIDRs(t *testing.T) {
	tests := []struct {
		name      string
		addresses []string
		listeners []string // besides virtualInbound and virtualOutbound
		prefixes  []string // of 0.0.0.0_7001's chains
	}{
		{"IPs only", []string{"10.62.0.1", "10.62.0.2"}, []string{"10.62.0.1_7001", "10.62.0.2_7001"}, nil},
		{"CIDR only", []string{"10.60.0.0/16"}, []string{"0.0.0.0_7001"}, []string{"10.60.0.0/16"}},
		{"a /32 is an IP", []string{"10.61.0.5/32"}, []string{"10.61.0.5_7001"}, nil},
		{"CIDRs and IPs", []string{"10.60.0.0/16", "10.61.0.5/32", "10.62.0.1", "fd00::/64"},
			[]string{"0.0.0.0_7001", "10.61.0.5_7001", "10.62.0.1_7001"}, []string{"10.60.0.0/16", "fd00::/64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &model.Service{Hostname: "legacy.internal", Namespace: "app", Addresses: tt.addresses, Resolution: model.ResolutionPassthrough,
				Ports: []model.Port{{Name: "tcp", Number: 7001, Protocol: model.ProtocolTCP}}}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc}})
			p := sidecarProxy("10.1.0.9", "app")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			var got, prefixes []string
			for _, r := range g[ListenerType] {
				if r.Name == VirtualInboundListener || r.Name == VirtualOutboundListener {
					continue
				}
				got = append(got, r.Name)
				if r.Name != "0.0.0.0_7001" {
					continue
				}
				for _, fc := range r.Message.(*listenerv3.Listener).GetFilterChains() {
					for _, pr := range fc.GetFilterChainMatch().GetPrefixRanges() {
						prefixes = append(prefixes, pr.GetAddressPrefix()+"/"+strconv.Itoa(int(pr.GetPrefixLen().GetValue())))
					}
				}
			}
			if diff := cmp.Diff(tt.listeners, got); diff != "" {
				t.Errorf("listeners (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.prefixes, prefixes); diff != "" {
				t.Errorf("0.0.0.0_7001 prefix ranges (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServiceCIDRsChainEach: each CIDR of a ServiceEntry gets a chain of its own on
// 0.0.0.0_PORT, as istiod builds a service per address; of two chains with one masked prefix
// the first service's stays, in istiod's order (oldest first, then by host): a second host of
// one entry, and a younger entry, add none for a CIDR already there. Found by
// hack/istio/parity (testdata/mesh/cidrs.yaml: xdslab put every CIDR in one chain, and gave two
// hosts of one entry the same match, which Envoy rejects).
func TestServiceCIDRsChainEach(t *testing.T) {
	tcp := []model.Port{{Name: "tcp", Number: 7002, Protocol: model.ProtocolTCP}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		{Hostname: "b.internal", Namespace: "app", Addresses: []string{"10.81.0.0/16", "10.80.0.0/16"}, Resolution: model.ResolutionPassthrough, Ports: tcp, CreationTime: t0},
		{Hostname: "c.internal", Namespace: "app", Addresses: []string{"10.81.0.0/16", "10.80.0.0/16"}, Resolution: model.ResolutionPassthrough, Ports: tcp, CreationTime: t0},
		{Hostname: "z.internal", Namespace: "app", Addresses: []string{"10.80.7.0/16", "10.83.0.0/16"}, Resolution: model.ResolutionPassthrough, Ports: tcp, CreationTime: t0.Add(-time.Hour)},
	}})
	p := sidecarProxy("10.1.0.9", "app")
	g, err := generateAll(t, p, s)
	if err != nil {
		t.Fatal(err)
	}
	checkResources(t, p, g)
	var chains []string
	for _, r := range g[ListenerType] {
		if r.Name != "0.0.0.0_7002" {
			continue
		}
		for _, fc := range r.Message.(*listenerv3.Listener).GetFilterChains() {
			chains = append(chains, cidrText(fc.GetFilterChainMatch().GetPrefixRanges())+" "+fc.GetFilters()[0].GetTypedConfig().String())
		}
	}
	slices.Sort(chains)
	var want []string
	for _, c := range []struct{ cidr, host string }{{"10.80.7.0/16", "z"}, {"10.81.0.0/16", "b"}, {"10.83.0.0/16", "z"}} {
		want = append(want, c.cidr+" "+"outbound|7002||"+c.host+".internal")
	}
	if len(chains) != len(want) {
		t.Fatalf("0.0.0.0_7002 chains %q, want %d: %q", chains, len(want), want)
	}
	for i := range want {
		cidr, cluster, _ := strings.Cut(want[i], " ")
		if !strings.HasPrefix(chains[i], cidr+" ") || !strings.Contains(chains[i], cluster) {
			t.Errorf("chain %d: %s, want %s to %s", i, chains[i], cidr, cluster)
		}
	}
}

// TestWildcardListenerSharedWithHTTP: on a port that HTTP services hold (with a VIP or not),
// the TLS and CIDR services without a VIP keep their chains beside the HTTP chain, and the TCP
// service without any address takes the default chain, as istiod merges them.
func TestWildcardListenerSharedWithHTTP(t *testing.T) {
	for _, vip := range []string{"240.0.0.1", ""} {
		t.Run("http vip "+vip, func(t *testing.T) {
			web := &model.Service{Hostname: "web.n.svc.cluster.local", Namespace: "n", Ports: []model.Port{{Name: "http", Number: 9000, Protocol: model.ProtocolHTTP}}}
			if vip != "" {
				web.Addresses = []string{vip}
			}
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
				web,
				{Hostname: "mirrors.example.com", Namespace: "n", Ports: []model.Port{{Name: "tcp", Number: 9000, Protocol: model.ProtocolTCP}}},
				{Hostname: "tls.example.com", Namespace: "n", Ports: []model.Port{{Name: "tls", Number: 9000, Protocol: model.ProtocolTLS}}},
				{Hostname: "cidr.internal", Namespace: "n", Addresses: []string{"10.77.0.0/16"}, Ports: []model.Port{{Name: "tcp", Number: 9000, Protocol: model.ProtocolTCP}}},
			}})
			p := sidecarProxy("10.9.9.9", "n")
			rs, err := ForType(ListenerType, p).Generate(p, s, []string{"0.0.0.0_9000"})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 {
				t.Fatalf("got %d listeners, want 0.0.0.0_9000", len(rs))
			}
			l := rs[0].Message.(*listenerv3.Listener)
			var chains []string
			for _, fc := range l.GetFilterChains() {
				m := fc.GetFilterChainMatch()
				chains = append(chains, fc.GetFilters()[0].GetName()+" "+strings.Join(m.GetServerNames(), ",")+strings.Join(m.GetApplicationProtocols(), ",")+cidrText(m.GetPrefixRanges()))
			}
			slices.Sort(chains)
			want := []string{
				hcmFilterName + " http/1.1,h2c",
				tcpProxyFilterName + " 10.77.0.0/16",
				tcpProxyFilterName + " tls.example.com",
			}
			if !slices.Equal(chains, want) {
				t.Errorf("chains %q, want %q", chains, want)
			}
			if def := l.GetDefaultFilterChain().GetFilters()[0].GetTypedConfig().String(); !strings.Contains(def, "outbound|9000||mirrors.example.com") {
				t.Errorf("default chain %s, want a tcp_proxy to mirrors.example.com", def)
			}
			var filters []string
			for _, f := range l.GetListenerFilters() {
				filters = append(filters, f.GetName())
			}
			if len(filters) != 2 {
				t.Errorf("listener filters %q, want the TLS and HTTP inspectors", filters)
			}
		})
	}
}

func cidrText(rs []*corev3.CidrRange) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.GetAddressPrefix()+"/"+strconv.FormatUint(uint64(r.GetPrefixLen().GetValue()), 10))
	}
	return strings.Join(out, ",")
}

// Two TCP services without any address on one port: istiod gives 0.0.0.0_PORT to the older by
// creation time, whatever their host names.
func TestSidecarWildcardTCPOldestService(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mk := func(host string, created time.Time) *model.Service {
		return &model.Service{Hostname: host, Namespace: "n", CreationTime: created, Resolution: model.ResolutionPassthrough,
			Ports: []model.Port{{Name: "tcp", Number: 9051, Protocol: model.ProtocolTCP}}}
	}
	s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{
		mk("a-new.example", t0.Add(time.Hour)), mk("z-old.example", t0),
	}})
	p := sidecarProxy("10.9.9.9", "n")
	rs, err := ForType(ListenerType, p).Generate(p, s, []string{"0.0.0.0_9051"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("got %d listeners, want 0.0.0.0_9051", len(rs))
	}
	if l := rs[0].Message.(*listenerv3.Listener).String(); !strings.Contains(l, "outbound|9051||z-old.example") || strings.Contains(l, "a-new") {
		t.Errorf("0.0.0.0_9051 should proxy to the older z-old only: %s", l)
	}
}
