package gen

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// tlsModes lists, per endpoint address of an assignment, whether it carries tlsMode "istio".
func tlsModes(cla *endpointv3.ClusterLoadAssignment) map[string]bool {
	out := map[string]bool{}
	for _, l := range cla.GetEndpoints() {
		for _, lb := range l.GetLbEndpoints() {
			addr := lb.GetEndpoint().GetAddress().GetSocketAddress().GetAddress()
			out[addr] = lb.GetMetadata().GetFilterMetadata()[transportSocketMatchKey].GetFields()["tlsMode"].GetStringValue() == tlsModeIstio
		}
	}
	return out
}

// TestEndpointTLSModeFollowsDestinationRule: the TLS mode the cluster's DestinationRule sets
// for its port and subset decides the endpoints' tlsMode metadata, as istiod's endpoint
// builder decides: ISTIO_MUTUAL marks every endpoint with a sidecar (whatever its
// PeerAuthentication), any other mode none, and without a mode the PeerAuthentication decides.
// A port-level setting without TLS does not hide the rule's mode (the cluster itself keeps
// auto-mTLS's matches there). An endpoint without a sidecar is never marked. The inlined
// assignment of a DNS cluster (CDS) and EDS agree.
func TestEndpointTLSModeFollowsDestinationRule(t *testing.T) {
	const dnsHost, edsHost = "ledger.vault.svc.cluster.local", "quota.vault.svc.cluster.local"
	const port = 7300
	tcp := []model.Port{{Name: "tcp", Number: port, Protocol: model.ProtocolTCP}}
	ep := func(host, addr, sa, version string) *model.Endpoint {
		return &model.Endpoint{Service: host, Address: addr, Weight: 1, ServiceAccount: sa, Health: model.Healthy,
			Labels: map[string]string{"version": version}, Source: istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Name: addr, Namespace: "vault"}}
	}
	mode := func(m networking.ClientTLSSettings_TLSmode) *networking.ClientTLSSettings {
		return &networking.ClientTLSSettings{Mode: m}
	}
	leastRequest := &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_LEAST_REQUEST}}
	// rules returns one rule per host with tp and the subsets "odd" (its own policy odd) and
	// "even" (none).
	rules := func(tp, odd *networking.TrafficPolicy) []*istioconfig.Config {
		var out []*istioconfig.Config
		for _, h := range []string{dnsHost, edsHost} {
			out = append(out, drConfig(h[:5], "vault", &networking.DestinationRule{Host: h, TrafficPolicy: tp, Subsets: []*networking.Subset{
				{Name: "odd", Labels: map[string]string{"version": "odd"}, TrafficPolicy: odd},
				{Name: "even", Labels: map[string]string{"version": "even"}},
			}}))
		}
		return out
	}
	paDisable := peerAuthConfig("vault", "off", nil, securityapi.PeerAuthentication_MutualTLS_DISABLE, nil, 0)
	// Endpoints: .1 has a sidecar (version odd), .2 has a sidecar (even), .3 none (odd).
	type want struct{ dflt, odd, even [3]bool }
	for _, tt := range []struct {
		name    string
		configs []*istioconfig.Config
		want    want
	}{
		{"no rule", nil, want{[3]bool{true, true, false}, [3]bool{true, false, false}, [3]bool{false, true, false}}},
		{"rule without TLS", rules(&networking.TrafficPolicy{LoadBalancer: leastRequest}, nil),
			want{[3]bool{true, true, false}, [3]bool{true, false, false}, [3]bool{false, true, false}}},
		{"DISABLE, port level without TLS", rules(&networking.TrafficPolicy{Tls: mode(networking.ClientTLSSettings_DISABLE),
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: port}, LoadBalancer: leastRequest}}}, nil),
			want{}},
		{"SIMPLE", rules(&networking.TrafficPolicy{Tls: mode(networking.ClientTLSSettings_SIMPLE)}, nil), want{}},
		{"ISTIO_MUTUAL", rules(&networking.TrafficPolicy{Tls: mode(networking.ClientTLSSettings_ISTIO_MUTUAL)}, nil),
			want{[3]bool{true, true, false}, [3]bool{true, false, false}, [3]bool{false, true, false}}},
		{"DISABLE, ISTIO_MUTUAL at the port", rules(&networking.TrafficPolicy{Tls: mode(networking.ClientTLSSettings_DISABLE),
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: port}, Tls: mode(networking.ClientTLSSettings_ISTIO_MUTUAL)}}}, nil),
			want{[3]bool{true, true, false}, [3]bool{true, false, false}, [3]bool{false, true, false}}},
		{"ISTIO_MUTUAL, a subset's DISABLE", rules(&networking.TrafficPolicy{Tls: mode(networking.ClientTLSSettings_ISTIO_MUTUAL)},
			&networking.TrafficPolicy{Tls: mode(networking.ClientTLSSettings_DISABLE)}),
			want{[3]bool{true, true, false}, [3]bool{false, false, false}, [3]bool{false, true, false}}},
		{"PeerAuthentication DISABLE", []*istioconfig.Config{paDisable}, want{}},
		{"PeerAuthentication DISABLE, ISTIO_MUTUAL", append(rules(&networking.TrafficPolicy{Tls: mode(networking.ClientTLSSettings_ISTIO_MUTUAL)}, nil), paDisable),
			want{[3]bool{true, true, false}, [3]bool{true, false, false}, [3]bool{false, true, false}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eps := func(host string, net int) []*model.Endpoint {
				pre := "10.7." + string(rune('0'+net)) + "."
				return []*model.Endpoint{ep(host, pre+"1", "ledger", "odd"), ep(host, pre+"2", "ledger", "even"), ep(host, pre+"3", "", "odd")}
			}
			s := model.NewSnapshot(1, model.SnapshotInput{
				Services: []*model.Service{
					{Hostname: dnsHost, Namespace: "vault", Resolution: model.ResolutionDNS, Ports: tcp},
					{Hostname: edsHost, Namespace: "vault", Resolution: model.ResolutionStatic, Addresses: []string{"10.96.7.1"}, Ports: tcp},
				},
				Endpoints: map[string][]*model.Endpoint{dnsHost: eps(dnsHost, 1), edsHost: eps(edsHost, 2)},
				Configs:   tt.configs,
			})
			p := sidecarProxy("10.9.9.9", "apps")
			g, err := generateAll(t, p, s)
			if err != nil {
				t.Fatal(err)
			}
			checkResources(t, p, g)
			for _, sub := range []struct {
				subset string
				want   [3]bool
			}{{"", tt.want.dflt}, {"odd", tt.want.odd}, {"even", tt.want.even}} {
				name := ClusterName(Outbound, port, sub.subset, dnsHost)
				c, ok := find(g[ClusterType], name)
				if !ok && sub.subset != "" && !slices.ContainsFunc(tt.configs, func(c *istioconfig.Config) bool { return c.Kind == istioconfig.KindDestinationRule }) {
					continue // no rule, no subsets
				}
				if !ok {
					t.Fatalf("no cluster %s", name)
				}
				name = ClusterName(Outbound, port, sub.subset, edsHost)
				e, ok := find(g[EndpointType], name)
				if !ok {
					t.Fatalf("no assignment %s", name)
				}
				for what, cla := range map[string]*endpointv3.ClusterLoadAssignment{"DNS": c.Message.(*clusterv3.Cluster).GetLoadAssignment(), "EDS": e.Message.(*endpointv3.ClusterLoadAssignment)} {
					got := tlsModes(cla)
					net := map[string]string{"DNS": "1", "EDS": "2"}[what]
					for i, w := range sub.want {
						addr := "10.7." + net + "." + string(rune('1'+i))
						if _, in := got[addr]; !in {
							continue // not in the subset
						}
						if got[addr] != w {
							t.Errorf("%s subset %q endpoint %s tlsMode istio: %v, want %v", what, sub.subset, addr, got[addr], w)
						}
					}
				}
			}
		})
	}
}

// TestAssignmentRuleKeyFollowsProxyView: a named assignment takes the TLS mode of the rule the
// asking proxy sees. A rule exported to one namespace changes its proxies' assignment only;
// the proxies of namespaces that do not see it keep the assignment without a rule, and share
// it (same ViewKey and AssignmentRuleKey), while the proxies that see it get other keys. A
// public rule gives every namespace the same keys.
func TestAssignmentRuleKeyFollowsProxyView(t *testing.T) {
	const host = "ledger.vault.svc.cluster.local"
	name := ClusterName(Outbound, 7300, "", host)
	svc := &model.Service{Hostname: host, Namespace: "vault", Resolution: model.ResolutionStatic, Addresses: []string{"10.96.7.1"},
		Ports: []model.Port{{Name: "tcp", Number: 7300, Protocol: model.ProtocolTCP}}}
	ep := &model.Endpoint{Service: host, Address: "10.7.0.1", Weight: 1, ServiceAccount: "ledger", Health: model.Healthy,
		Source: istioconfig.Key{Kind: istioconfig.KindWorkloadEntry, Name: "w", Namespace: "vault"}}
	rule := func(m networking.ClientTLSSettings_TLSmode, exportTo ...string) *istioconfig.Config {
		return drConfig("ledger", "vault", &networking.DestinationRule{Host: host, ExportTo: exportTo,
			TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: m}}})
	}
	type view struct {
		mtls bool   // the assignment's endpoint carries tlsMode istio
		key  string // ViewKey + AssignmentRuleKey: equal keys share one cache entry
	}
	for _, tt := range []struct {
		name string
		dr   *istioconfig.Config
		want map[string]view // by proxy namespace
	}{
		{"exported to apps", rule(networking.ClientTLSSettings_DISABLE, "apps"), map[string]view{
			"apps":  {mtls: false, key: "drv=vault/ledger|tls=plain"},
			"web":   {mtls: true, key: ""},
			"batch": {mtls: true, key: ""},
			"vault": {mtls: true, key: "dr=vault"}, // its own rules come first: a view of its own
		}},
		{"public", rule(networking.ClientTLSSettings_DISABLE), map[string]view{
			"apps":  {mtls: false, key: "|tls=plain"},
			"web":   {mtls: false, key: "|tls=plain"},
			"vault": {mtls: false, key: "|tls=plain"},
		}},
		{"public ISTIO_MUTUAL", rule(networking.ClientTLSSettings_ISTIO_MUTUAL), map[string]view{
			"apps": {mtls: true, key: "|tls=istio"},
			"web":  {mtls: true, key: "|tls=istio"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: []*model.Service{svc},
				Endpoints: map[string][]*model.Endpoint{host: {ep}}, Configs: []*istioconfig.Config{tt.dr}})
			for ns, w := range tt.want {
				p := sidecarProxy("10.9.9.9", ns)
				rs, err := ForType(EndpointType, p).Generate(p, s, []string{name})
				if err != nil || len(rs) != 1 {
					t.Fatalf("%s: %v, %d assignments", ns, err, len(rs))
				}
				if got := tlsModes(rs[0].Message.(*endpointv3.ClusterLoadAssignment))["10.7.0.1"]; got != w.mtls {
					t.Errorf("proxy of %s: tlsMode istio %v, want %v", ns, got, w.mtls)
				}
				key := ViewKey(EndpointType, p, s, false)
				if rk := AssignmentRuleKey(p, s); rk != nil {
					if r := rk(name); r != "" {
						key += "|" + r
					}
				}
				if key != w.key {
					t.Errorf("proxy of %s: key %q, want %q", ns, key, w.key)
				}
			}
		})
	}
}

// TestExportedRuleKeyIgnoresUnseenRules: the named-EDS view of a proxy names only the rules
// exported to a list of namespaces that it sees, so a rule exported elsewhere, however many
// come, leaves the key (and the cache entries the proxies share) as it was.
func TestExportedRuleKeyIgnoresUnseenRules(t *testing.T) {
	lb := func(name, host string, exportTo ...string) *istioconfig.Config {
		return drConfig(name, "vault", &networking.DestinationRule{Host: host, ExportTo: exportTo,
			TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
				LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}}}})
	}
	web := sidecarProxy("10.9.9.9", "web")
	apps := sidecarProxy("10.9.9.8", "apps")
	for _, tt := range []struct {
		name      string
		rules     []*istioconfig.Config
		web, apps string
	}{
		{"none", nil, "", ""},
		{"one for apps", []*istioconfig.Config{lb("a", "a.vault.svc.cluster.local", "apps")}, "", "drv=vault/a"},
		{"two for apps", []*istioconfig.Config{lb("a", "a.vault.svc.cluster.local", "apps"), lb("b", "b.vault.svc.cluster.local", "apps", ".")}, "", "drv=vault/a,vault/b"},
		{"one for web", []*istioconfig.Config{lb("a", "a.vault.svc.cluster.local", "apps"), lb("c", "c.vault.svc.cluster.local", "web")}, "drv=vault/c", "drv=vault/a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Configs: tt.rules})
			if got := ViewKey(EndpointType, web, s, false); got != tt.web {
				t.Errorf("web: %q, want %q", got, tt.web)
			}
			if got := ViewKey(EndpointType, apps, s, false); got != tt.apps {
				t.Errorf("apps: %q, want %q", got, tt.apps)
			}
		})
	}
}
