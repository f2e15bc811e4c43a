package model

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/xdslab/xdslab/istioconfig"
	"go.uber.org/goleak"
	networking "istio.io/api/networking/v1alpha3"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mapSource is a SnapshotSource over plain maps.
type mapSource struct {
	svcs    map[string]*Service
	eps     map[string][]*Endpoint
	configs map[istioconfig.Key]*istioconfig.Config
}

func newSource() *mapSource {
	return &mapSource{svcs: map[string]*Service{}, eps: map[string][]*Endpoint{}, configs: map[istioconfig.Key]*istioconfig.Config{}}
}

func (m *mapSource) clone() *mapSource {
	return &mapSource{svcs: maps.Clone(m.svcs), eps: maps.Clone(m.eps), configs: maps.Clone(m.configs)}
}

func (m *mapSource) Services() []*Service                         { return slices.Collect(maps.Values(m.svcs)) }
func (m *mapSource) Service(h string) *Service                    { return m.svcs[h] }
func (m *mapSource) Endpoints(h string) []*Endpoint               { return m.eps[h] }
func (m *mapSource) Configs() []*istioconfig.Config               { return slices.Collect(maps.Values(m.configs)) }
func (m *mapSource) Config(k istioconfig.Key) *istioconfig.Config { return m.configs[k] }
func (m *mapSource) setEndpoints(h string, addrs ...string) {
	var eps []*Endpoint
	for _, a := range addrs {
		eps = append(eps, &Endpoint{Service: h, Address: a})
	}
	slices.SortFunc(eps, CompareEndpoints)
	m.eps[h] = eps
}

func svc(h string, sas ...string) *Service {
	return &Service{Hostname: h, Namespace: "ns", Ports: []Port{{Name: "http", Number: 80, Protocol: ProtocolHTTP}}, ServiceAccounts: sas}
}

func vs(name string, host string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: name, Namespace: "ns"}, Spec: &networking.VirtualService{Hosts: []string{host}}}
}

func keys(ks ...istioconfig.Key) map[istioconfig.Key]struct{} {
	out := map[istioconfig.Key]struct{}{}
	for _, k := range ks {
		out[k] = struct{}{}
	}
	return out
}

func svcKey(h string) istioconfig.Key {
	return istioconfig.Key{Kind: KindService, Name: h, Namespace: "ns"}
}
func epKey(h string) istioconfig.Key {
	return istioconfig.Key{Kind: KindEndpoint, Name: h, Namespace: "ns"}
}

// withKeys returns r with the Keys a build reports for its lists, every host and config in
// namespace "ns" (as in baseSource).
func withKeys(r ChangeReport) ChangeReport {
	if r.Empty() {
		return r
	}
	r.Keys = map[istioconfig.Key]struct{}{}
	for _, hosts := range [][]string{r.ServicesAdded, r.ServicesRemoved, r.ServicesChanged} {
		for _, h := range hosts {
			r.Keys[svcKey(h)] = struct{}{}
		}
	}
	for _, h := range r.EndpointsChanged {
		r.Keys[epKey(h)] = struct{}{}
	}
	for _, k := range r.ConfigsChanged {
		r.Keys[k] = struct{}{}
	}
	return r
}

func baseSource() *mapSource {
	src := newSource()
	for _, h := range []string{"a", "b", "c"} {
		src.svcs[h] = svc(h, "sa-"+h)
		src.setEndpoints(h, "10.0.0.1", "10.0.0.2")
	}
	v := vs("v1", "a")
	src.configs[v.Key()] = v
	return src
}

func TestBuildSnapshot(t *testing.T) {
	base := baseSource()
	prev, _ := BuildSnapshot(nil, 1, nil, base)
	tests := []struct {
		name   string
		change func(*mapSource)
		req    *PushRequest
		want   ChangeReport
		// sharesServices: no service changed, so the services slice is prev's, not rebuilt.
		sharesServices bool
		same           bool // prev returned as is
	}{
		{
			name:   "endpoint-only change",
			change: func(s *mapSource) { s.setEndpoints("b", "10.0.0.1", "10.0.0.3") },
			req:    &PushRequest{ConfigsUpdated: keys(epKey("b"))},
			want:   ChangeReport{EndpointsChanged: []string{"b"}}, sharesServices: true,
		},
		{
			name:   "endpoints removed",
			change: func(s *mapSource) { delete(s.eps, "b") },
			req:    &PushRequest{ConfigsUpdated: keys(epKey("b"))},
			want:   ChangeReport{EndpointsChanged: []string{"b"}}, sharesServices: true,
		},
		{
			name:   "service account set and endpoints changed: full",
			change: func(s *mapSource) { s.svcs["b"] = svc("b", "sa-b", "sa-new"); s.setEndpoints("b", "10.0.0.9") },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(svcKey("b"), epKey("b"))},
			want:   ChangeReport{Full: true, ServicesChanged: []string{"b"}, EndpointsChanged: []string{"b"}},
		},
		{
			name:   "service added",
			change: func(s *mapSource) { s.svcs["d"] = svc("d"); s.setEndpoints("d", "10.0.0.4") },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(svcKey("d"), epKey("d"))},
			want:   ChangeReport{Full: true, ServicesAdded: []string{"d"}, EndpointsChanged: []string{"d"}},
		},
		{
			name:   "service removed takes its endpoints",
			change: func(s *mapSource) { delete(s.svcs, "a"); delete(s.eps, "a") },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(svcKey("a"))},
			want:   ChangeReport{Full: true, ServicesRemoved: []string{"a"}, EndpointsChanged: []string{"a"}},
		},
		{
			name:   "service redefined, endpoints same",
			change: func(s *mapSource) { c := *s.svcs["c"]; c.Resolution = ResolutionDNS; s.svcs["c"] = &c },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(svcKey("c"))},
			want:   ChangeReport{Full: true, ServicesChanged: []string{"c"}},
		},
		{
			name:   "VirtualService changed",
			change: func(s *mapSource) { v := vs("v1", "b"); s.configs[v.Key()] = v },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(vs("v1", "").Key())},
			want:   ChangeReport{Full: true, ConfigsChanged: []istioconfig.Key{vs("v1", "").Key()}}, sharesServices: true,
		},
		{
			name:   "VirtualService added and removed",
			change: func(s *mapSource) { delete(s.configs, vs("v1", "").Key()); v := vs("v2", "b"); s.configs[v.Key()] = v },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(vs("v1", "").Key(), vs("v2", "").Key())},
			want:   ChangeReport{Full: true, ConfigsChanged: []istioconfig.Key{vs("v1", "").Key(), vs("v2", "").Key()}}, sharesServices: true,
		},
		{
			name:   "equal copy of a config is no change",
			change: func(s *mapSource) { v := vs("v1", "a"); s.configs[v.Key()] = v },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(vs("v1", "").Key())},
			same:   true,
		},
		{
			name:   "nothing changed",
			change: func(*mapSource) {},
			req:    &PushRequest{ConfigsUpdated: keys(epKey("a"))},
			same:   true,
		},
		{
			name:   "full request for everything finds the unnamed change",
			change: func(s *mapSource) { s.setEndpoints("c", "10.9.9.9"); delete(s.configs, vs("v1", "").Key()) },
			req:    &PushRequest{Full: true},
			want:   ChangeReport{Full: true, Rebuilt: true, EndpointsChanged: []string{"c"}, ConfigsChanged: []istioconfig.Key{vs("v1", "").Key()}}, sharesServices: true,
		},
		{
			// The request is the account of every change (the aggregate names hosts, never
			// the ServiceEntry that defines them): what it does not name is not looked at.
			name:   "a change the request does not name is not looked at",
			change: func(s *mapSource) { s.setEndpoints("a", "10.9.9.9") },
			req:    &PushRequest{Full: true, ConfigsUpdated: keys(istioconfig.Key{Kind: istioconfig.KindServiceEntry, Name: "se", Namespace: "ns"}, epKey("b"))},
			same:   true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := base.clone()
			tc.change(src)
			next, rep := BuildSnapshot(prev, 2, tc.req, src)
			if tc.same {
				if next != prev || !rep.Empty() {
					t.Fatalf("want prev unchanged and an empty report, got version %s, %+v", next.Version, rep)
				}
				return
			}
			if diff := cmp.Diff(withKeys(tc.want), rep, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if err := next.Consistent(); err != nil {
				t.Error(err)
			}
			if next.Version != "2" || prev.Version != "1" {
				t.Errorf("versions: next %s prev %s", next.Version, prev.Version)
			}
			if err := prev.Consistent(); err != nil || prev.EndpointCount() != 6 || prev.ServiceCount() != 3 {
				t.Errorf("parent modified: %v, %d endpoints, %d services", err, prev.EndpointCount(), prev.ServiceCount())
			}
			shares := len(next.Services()) > 0 && &next.Services()[0] == &prev.Services()[0]
			if shares != tc.sharesServices {
				t.Errorf("services shared with parent = %v, want %v", shares, tc.sharesServices)
			}
			// The next snapshot equals one built from scratch from the same state.
			fresh, _ := BuildSnapshot(nil, 2, nil, src)
			if diff := cmp.Diff(summaryOf(fresh), summaryOf(next)); diff != "" {
				t.Errorf("differs from a fresh build (-fresh +incremental):\n%s", diff)
			}
			// Generations move only for what changed.
			for _, h := range []string{"a", "b", "c", "d"} {
				wantEP := uint64(1)
				if slices.Contains(rep.EndpointsChanged, h) {
					wantEP = 2
				}
				if len(next.Endpoints(h)) > 0 && next.EndpointGen(h) != wantEP {
					t.Errorf("EndpointGen(%s) = %d, want %d", h, next.EndpointGen(h), wantEP)
				}
				wantSvc := uint64(1)
				if slices.Contains(rep.ServicesAdded, h) || slices.Contains(rep.ServicesChanged, h) {
					wantSvc = 2
				}
				if next.Service(h) != nil && next.ServiceGen(h) != wantSvc {
					t.Errorf("ServiceGen(%s) = %d, want %d", h, next.ServiceGen(h), wantSvc)
				}
			}
			wantCfgGen := uint64(1)
			if len(rep.ConfigsChanged) > 0 {
				wantCfgGen = 2
			}
			if next.ConfigGen() != wantCfgGen {
				t.Errorf("ConfigGen = %d, want %d", next.ConfigGen(), wantCfgGen)
			}
		})
	}
}

// summaryOf renders a snapshot's content (not its generations) for comparison.
func summaryOf(s *Snapshot) []string {
	var out []string
	for _, svc := range s.Services() {
		out = append(out, fmt.Sprintf("svc %s %v %v", svc.Hostname, svc.Resolution, svc.ServiceAccounts))
		for _, ep := range s.Endpoints(svc.Hostname) {
			out = append(out, "  ep "+ep.Address)
		}
	}
	for _, k := range istioconfig.Kinds() {
		for _, c := range s.Configs(k) {
			out = append(out, fmt.Sprintf("cfg %s %v", c.Key(), c.Spec))
		}
	}
	return out
}

func TestBuildSnapshotFromScratch(t *testing.T) {
	s, rep := BuildSnapshot(nil, 7, &PushRequest{ConfigsUpdated: keys(epKey("a"))}, baseSource())
	want := withKeys(ChangeReport{Full: true, Rebuilt: true, ServicesAdded: []string{"a", "b", "c"}, EndpointsChanged: []string{"a", "b", "c"},
		ConfigsChanged: []istioconfig.Key{vs("v1", "").Key()}})
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := s.Consistent(); err != nil || s.Version != "7" {
		t.Errorf("version %s: %v", s.Version, err)
	}
	sum := s.Summary()
	if sum.Services != 3 || sum.Endpoints != 6 || sum.Configs[istioconfig.KindVirtualService] != 1 {
		t.Errorf("summary = %+v", sum)
	}
}

func TestConsistentCatchesBrokenSnapshots(t *testing.T) {
	good, _ := BuildSnapshot(nil, 1, nil, baseSource())
	orphan := good.WithEndpoints(2, map[string][]*Endpoint{"zzz": {{Service: "zzz", Address: "1.1.1.1"}}})
	if err := orphan.Consistent(); err == nil {
		t.Error("endpoints of an unknown service not caught")
	}
	misnamed := good.WithEndpoints(2, map[string][]*Endpoint{"a": {{Service: "b", Address: "1.1.1.1"}}})
	if err := misnamed.Consistent(); err == nil {
		t.Error("endpoint naming another service not caught")
	}
}

// The endpoints of a DNS-resolution service are inlined in its STRICT_DNS/LOGICAL_DNS cluster,
// so a change to them is a full push (CDS content), unlike an EDS service's.
func TestBuildSnapshotDNSEndpointChangeIsFull(t *testing.T) {
	base := baseSource()
	dns := svc("dns")
	dns.Resolution = ResolutionDNS
	base.svcs["dns"] = dns
	base.setEndpoints("dns", "a.example.com")
	prev, _ := BuildSnapshot(nil, 1, nil, base)
	next := base.clone()
	next.setEndpoints("dns", "b.example.com")
	snap, rep := BuildSnapshot(prev, 2, &PushRequest{ConfigsUpdated: keys(epKey("dns"))}, next)
	if want := withKeys(ChangeReport{Full: true, EndpointsChanged: []string{"dns"}}); !cmp.Equal(want, rep, cmpopts.EquateEmpty()) {
		t.Errorf("report (-want +got)\n%s", cmp.Diff(want, rep, cmpopts.EquateEmpty()))
	}
	if eps := snap.Endpoints("dns"); len(eps) != 1 || eps[0].Address != "b.example.com" {
		t.Errorf("snapshot endpoints = %v", eps)
	}
	// So are a headless Service's (a listener per endpoint for its TCP ports).
	next1 := next.clone()
	hl := svc("hl")
	hl.Resolution, hl.Source = ResolutionPassthrough, istioconfig.Key{Kind: KindService, Name: "hl"}
	hl.Ports = []Port{{Name: "tcp", Number: 5432, Protocol: ProtocolTCP}}
	next1.svcs["hl"] = hl
	mid, _ := BuildSnapshot(snap, 3, nil, next1)
	next1b := next1.clone()
	next1b.setEndpoints("hl", "10.0.0.9")
	if _, rep := BuildSnapshot(mid, 4, &PushRequest{ConfigsUpdated: keys(epKey("hl"))}, next1b); !rep.Full {
		t.Errorf("headless endpoint change not reported full: %+v", rep)
	}
	// An EDS service's endpoint change in the same snapshot stays incremental on its own.
	next2 := next.clone()
	next2.setEndpoints("b", "10.0.0.7")
	if _, rep := BuildSnapshot(snap, 3, &PushRequest{ConfigsUpdated: keys(epKey("b"))}, next2); rep.Full {
		t.Errorf("EDS endpoint change reported full: %+v", rep)
	}
}
