package xds

import (
	"fmt"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// BenchmarkNamedEDSCache: 60 sidecars of three namespaces each ask, by name, for every
// assignment of a 300-service mesh whose endpoints have sidecars, once per push of a config
// change (a VirtualService edited, which no assignment reads; or, in dr-flip, one service's
// DestinationRule switching between ISTIO_MUTUAL and DISABLE). It reports the share of those
// reads the ADS server's cache answered (hit-ratio) and the server's time per proxy's request.
// The rule cases: none; one public rule per service (ISTIO_MUTUAL, or DISABLE); one rule per
// service exported to the namespace ns-1 alone (DISABLE), which the other namespaces' proxies
// do not see.
func BenchmarkNamedEDSCache(b *testing.B) {
	const services, perNS = 300, 20
	namespaces := []string{"ns-0", "ns-1", "ns-2"}
	rule := func(svc *model.Service, mode networking.ClientTLSSettings_TLSmode, exportTo []string) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "r-" + strings.SplitN(svc.Hostname, ".", 2)[0], Namespace: svc.Namespace},
			Spec: &networking.DestinationRule{Host: svc.Hostname, ExportTo: exportTo, TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: mode}}}}
	}
	vs := func(i int) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "edited", Namespace: "ns-0"},
			Spec: &networking.VirtualService{Hosts: []string{"nowhere.example"}, Http: []*networking.HTTPRoute{{Name: fmt.Sprint(i),
				Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "nowhere.example"}}}}}}}
	}
	for _, tc := range []struct {
		name   string
		rules  func(*model.Service) *istioconfig.Config
		drFlip bool
	}{
		{name: "no-rules"},
		{name: "istio-mutual", rules: func(svc *model.Service) *istioconfig.Config {
			return rule(svc, networking.ClientTLSSettings_ISTIO_MUTUAL, nil)
		}},
		{name: "disable", rules: func(svc *model.Service) *istioconfig.Config {
			return rule(svc, networking.ClientTLSSettings_DISABLE, nil)
		}},
		{name: "exported-to-one", rules: func(svc *model.Service) *istioconfig.Config {
			return rule(svc, networking.ClientTLSSettings_DISABLE, []string{"ns-1"})
		}},
		{name: "dr-flip", rules: func(svc *model.Service) *istioconfig.Config {
			return rule(svc, networking.ClientTLSSettings_ISTIO_MUTUAL, nil)
		}, drFlip: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			in := topology(services, 5)
			for _, eps := range in.Endpoints {
				for _, ep := range eps {
					ep.Labels = map[string]string{"app": "x", gen.TLSModeLabel: "istio"}
				}
			}
			if tc.rules != nil {
				for _, svc := range in.Services {
					in.Configs = append(in.Configs, tc.rules(svc))
				}
			}
			var names []string
			for _, svc := range in.Services {
				names = append(names, gen.ClusterName(gen.Outbound, 8080, "", svc.Hostname))
			}
			var proxies []*model.Proxy
			for i := range perNS * len(namespaces) {
				ns := namespaces[i%len(namespaces)]
				proxies = append(proxies, &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{fmt.Sprintf("10.250.0.%d", i+1)},
					ID: fmt.Sprintf("pod-%d.%s", i, ns), Namespace: ns})
			}
			s, err := New(testOptions())
			if err != nil {
				b.Fatal(err)
			}
			seq := uint64(1)
			snap := model.NewSnapshot(seq, in)
			s.Push(snap, &model.PushRequest{Full: true})
			ask := func() {
				st := s.current()
				for _, p := range proxies {
					if _, err := s.resources(p, st, gen.EndpointType, names, false); err != nil {
						b.Fatal(err)
					}
				}
			}
			ask() // the cold start is not what is measured
			before := s.cache.Stats()
			var spent time.Duration
			for i := 0; b.Loop(); i++ {
				seq++
				var key istioconfig.Key
				var c *istioconfig.Config
				if tc.drFlip {
					mode := networking.ClientTLSSettings_DISABLE
					if i%2 == 1 {
						mode = networking.ClientTLSSettings_ISTIO_MUTUAL
					}
					c = rule(in.Services[0], mode, nil)
				} else {
					c = vs(i)
				}
				key = istioconfig.Key{Kind: c.Kind, Name: c.Name, Namespace: c.Namespace}
				snap = snap.Apply(seq, model.SnapshotDelta{Configs: map[istioconfig.Key]*istioconfig.Config{key: c}})
				s.Push(snap, &model.PushRequest{Full: true, ConfigsUpdated: map[istioconfig.Key]struct{}{key: {}}})
				start := time.Now()
				ask()
				spent += time.Since(start)
			}
			after := s.cache.Stats()
			hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
			b.ReportMetric(float64(hits)/float64(hits+misses), "hit-ratio")
			b.ReportMetric(float64(misses)/float64(b.N), "misses/push")
			b.ReportMetric(float64(spent.Microseconds())/float64(b.N*len(proxies)), "µs/request")
		})
	}
}
