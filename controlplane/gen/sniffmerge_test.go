package gen

import (
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestSniffedAndTCPShareVIP: a sniffed port (no protocol) and a TCP port of two services on one
// VIP and port share one listener, as istiod merges them. A sniffed service after a TCP one
// turns the listener sniffed (AutoOverTCP): the TCP chains stay, its own HTTP chain joins
// them, and its TCP chains the listener has a match for already are left out, reported as a
// conflict. A TCP service after a sniffed one adds only chains of new matches (TCPOverAuto).
// MONGO and MYSQL still keep the first listener, meeting another protocol; REDIS merges as TCP
// (corpus sniffmerge.yaml).
func TestSniffedAndTCPShareVIP(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := func(host string, proto model.Protocol, min int) *model.Service {
		return &model.Service{Hostname: host, Namespace: "app", Addresses: []string{"240.2.0.5"}, Resolution: model.ResolutionStatic,
			Ports: []model.Port{{Name: "p", Number: 7300, Protocol: proto}}, CreationTime: t0.Add(time.Duration(min) * time.Minute)}
	}
	subnetRoute := vsConfig("subnet", "app", &networking.VirtualService{Hosts: []string{"pipe.internal"}, Tcp: []*networking.TCPRoute{{
		Match: []*networking.L4MatchAttributes{{DestinationSubnets: []string{"240.2.0.5/32"}}},
		Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "pipe.internal"}}},
	}}})
	for _, tt := range []struct {
		name     string
		svcs     []*model.Service
		cfgs     []*istioconfig.Config
		want     []string // per chain: "match -> clusters", the HTTP chain as "http -> ROUTE"
		sniffed  bool     // the listener has the HTTP inspector
		conflict string   // the service a reported conflict names second; "" for none
	}{{
		name:     "sniffed after TCP",
		svcs:     []*model.Service{svc("pipe.internal", model.ProtocolTCP, 1), svc("auto.internal", model.ProtocolUnknown, 2)},
		want:     []string{"default -> outbound|7300||pipe.internal", "http -> auto.internal:7300"},
		sniffed:  true,
		conflict: "auto.internal",
	}, {
		name:     "TCP after sniffed",
		svcs:     []*model.Service{svc("auto.internal", model.ProtocolUnknown, 1), svc("pipe.internal", model.ProtocolTCP, 2)},
		want:     []string{"default -> outbound|7300||auto.internal", "http -> auto.internal:7300"},
		sniffed:  true,
		conflict: "pipe.internal",
	}, {
		// The TCP service's subnet chain stays beside its own catch-all.
		name:     "sniffed after TCP with a subnet route",
		svcs:     []*model.Service{svc("pipe.internal", model.ProtocolTCP, 1), svc("auto.internal", model.ProtocolUnknown, 2)},
		cfgs:     []*istioconfig.Config{subnetRoute},
		want:     []string{"cidr 240.2.0.5/32 -> outbound|7300||pipe.internal", "default -> outbound|7300||pipe.internal", "http -> auto.internal:7300"},
		sniffed:  true,
		conflict: "auto.internal",
	}, {
		// A sniffed service older than the TCP one (which sorts first by name) comes first.
		name:     "TCP after sniffed, by creation time not name",
		svcs:     []*model.Service{svc("zeta.internal", model.ProtocolUnknown, 1), svc("pipe.internal", model.ProtocolTCP, 2)},
		want:     []string{"default -> outbound|7300||zeta.internal", "http -> zeta.internal:7300"},
		sniffed:  true,
		conflict: "pipe.internal",
	}, {
		name:     "sniffed after MONGO: MONGO keeps it",
		svcs:     []*model.Service{svc("pipe.internal", model.ProtocolMongo, 1), svc("auto.internal", model.ProtocolUnknown, 2)},
		want:     []string{"- -> outbound|7300||pipe.internal"},
		conflict: "auto.internal",
	}, {
		// MYSQL meets only MYSQL, as MONGO: the TCP service's subnet chain does not join.
		name:     "TCP after MYSQL: MYSQL keeps it",
		svcs:     []*model.Service{svc("db.internal", model.ParseProtocol("MYSQL"), 1), svc("pipe.internal", model.ProtocolTCP, 2)},
		cfgs:     []*istioconfig.Config{subnetRoute},
		want:     []string{"- -> outbound|7300||db.internal"},
		conflict: "pipe.internal",
	}, {
		name:     "sniffed after MYSQL: MYSQL keeps it",
		svcs:     []*model.Service{svc("db.internal", model.ParseProtocol("MYSQL"), 1), svc("auto.internal", model.ProtocolUnknown, 2)},
		want:     []string{"- -> outbound|7300||db.internal"},
		conflict: "auto.internal",
	}, {
		// REDIS is TCP here: its chains merge (its catch-all is left out).
		name:     "REDIS after TCP with a subnet route: merged",
		svcs:     []*model.Service{svc("pipe.internal", model.ProtocolTCP, 1), svc("cache.internal", model.ParseProtocol("REDIS"), 2)},
		cfgs:     []*istioconfig.Config{subnetRoute},
		want:     []string{"cidr 240.2.0.5/32 -> outbound|7300||pipe.internal", "default -> outbound|7300||pipe.internal"},
		conflict: "cache.internal",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: tt.svcs, Configs: tt.cfgs})
			p := sidecarProxy("10.1.0.9", "app")
			g, err := generateAll(t, p, s)
			checkResources(t, p, g)
			if got := err != nil && strings.Contains(err.Error(), "and "+tt.conflict+" both use 240.2.0.5:7300"); got != (tt.conflict != "") {
				t.Errorf("conflict naming %q reported: %v (error %v)", tt.conflict, got, err)
			}
			var got []string
			var l *listenerv3.Listener
			for _, r := range g[ListenerType] {
				if r.Name == "240.2.0.5_7300" {
					l = r.Message.(*listenerv3.Listener)
				}
			}
			if l == nil {
				t.Fatal("listener 240.2.0.5_7300 not generated")
			}
			for _, fc := range l.GetFilterChains() {
				if len(fc.GetFilterChainMatch().GetApplicationProtocols()) > 0 {
					h := &hcmv3.HttpConnectionManager{}
					if err := fc.GetFilters()[len(fc.GetFilters())-1].GetTypedConfig().UnmarshalTo(h); err != nil {
						t.Fatal(err)
					}
					got = append(got, "http -> "+h.GetRds().GetRouteConfigName())
					continue
				}
				got = append(got, l4ChainText(fc, ""))
			}
			if d := l.GetDefaultFilterChain(); d != nil {
				got = append(got, l4ChainText(d, "default"))
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chains (-want +got)\n%s", diff)
			}
			inspector := slices.ContainsFunc(l.GetListenerFilters(), func(f *listenerv3.ListenerFilter) bool { return f.GetName() == httpInspectorFilterName })
			if inspector != tt.sniffed {
				t.Errorf("HTTP inspector %v, want %v", inspector, tt.sniffed)
			}
		})
	}
}

// TestWellKnownPortSharesWildcard: a MONGO or MYSQL service without a VIP and an HTTP (or other)
// service on the same port both want 0.0.0.0_PORT. As istiod (isConflictWithWellKnownPort),
// the server-first protocol meets only its own there: the first service (oldest) keeps the
// listener, the other adds nothing, reported; no HTTP inspector in front of MYSQL.
func TestWellKnownPortSharesWildcard(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := func(host string, proto model.Protocol, min int) *model.Service {
		return &model.Service{Hostname: host, Namespace: "app", Resolution: model.ResolutionStatic,
			Ports: []model.Port{{Name: "p", Number: 7400, Protocol: proto}}, CreationTime: t0.Add(time.Duration(min) * time.Minute)}
	}
	withVIP := func(s *model.Service) *model.Service { s.Addresses = []string{"240.2.0.9"}; return s }
	mysql := model.ParseProtocol("MYSQL")
	for _, tt := range []struct {
		name     string
		svcs     []*model.Service
		want     []string // per chain, the HTTP chain as "http"
		sniffed  bool     // the listener has the HTTP inspector
		conflict string   // the service a reported conflict names second; "" for none
	}{{
		name:     "HTTP after MYSQL: MYSQL keeps it alone",
		svcs:     []*model.Service{svc("db.internal", mysql, 1), svc("web.internal", model.ProtocolHTTP, 2)},
		want:     []string{"- -> outbound|7400||db.internal"},
		conflict: "web.internal",
	}, {
		name:     "MYSQL after HTTP: HTTP keeps it",
		svcs:     []*model.Service{svc("web.internal", model.ProtocolHTTP, 1), svc("db.internal", mysql, 2)},
		want:     []string{"default -> PassthroughCluster", "http"},
		sniffed:  true,
		conflict: "db.internal",
	}, {
		name:     "HTTP after MONGO: MONGO keeps it alone",
		svcs:     []*model.Service{svc("pipe.internal", model.ProtocolMongo, 1), svc("web.internal", model.ProtocolHTTP, 2)},
		want:     []string{"- -> outbound|7400||pipe.internal"},
		conflict: "web.internal",
	}, {
		name:     "sniffed after MYSQL: MYSQL keeps it alone",
		svcs:     []*model.Service{svc("db.internal", mysql, 1), svc("auto.internal", model.ProtocolUnknown, 2)},
		want:     []string{"- -> outbound|7400||db.internal"},
		conflict: "auto.internal",
	}, {
		name: "HTTP after TCP: merged",
		svcs: []*model.Service{svc("pipe.internal", model.ProtocolTCP, 1), svc("web.internal", model.ProtocolHTTP, 2)},
		want: []string{"default -> outbound|7400||pipe.internal", "http"}, sniffed: true,
	}, {
		// A MYSQL service with a VIP has its own listener: no conflict.
		name: "MYSQL with a VIP beside HTTP",
		svcs: []*model.Service{withVIP(svc("db.internal", mysql, 1)), svc("web.internal", model.ProtocolHTTP, 2)},
		want: []string{"default -> PassthroughCluster", "http"}, sniffed: true,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s := model.NewSnapshot(1, model.SnapshotInput{Services: tt.svcs})
			p := sidecarProxy("10.1.0.9", "app")
			g, err := generateAll(t, p, s)
			checkResources(t, p, g)
			if tt.conflict == "" && err != nil {
				t.Errorf("error %v", err)
			}
			if tt.conflict != "" && (err == nil || !strings.Contains(err.Error(), tt.conflict+" ("+string(tt.svcs[1].Ports[0].Protocol)+") both use 0.0.0.0:7400")) {
				t.Errorf("error %v, want a conflict naming %s", err, tt.conflict)
			}
			r, ok := find(g[ListenerType], "0.0.0.0_7400")
			if !ok {
				t.Fatal("listener 0.0.0.0_7400 not generated")
			}
			l := r.Message.(*listenerv3.Listener)
			var got []string
			for _, fc := range l.GetFilterChains() {
				if len(fc.GetFilterChainMatch().GetApplicationProtocols()) > 0 {
					got = append(got, "http")
					continue
				}
				got = append(got, l4ChainText(fc, ""))
			}
			if d := l.GetDefaultFilterChain(); d != nil {
				got = append(got, l4ChainText(d, "default"))
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chains (-want +got)\n%s", diff)
			}
			inspector := slices.ContainsFunc(l.GetListenerFilters(), func(f *listenerv3.ListenerFilter) bool { return f.GetName() == httpInspectorFilterName })
			if inspector != tt.sniffed {
				t.Errorf("HTTP inspector %v, want %v", inspector, tt.sniffed)
			}
		})
	}
}
