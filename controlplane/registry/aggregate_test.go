package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// recorder collects changes as compact strings: "E" for an endpoint-only change, "F" for
// any other, then the sorted keys as Kind/name.
type recorder struct {
	mu  sync.Mutex
	got []string
	raw []Change
}

func (r *recorder) onChange(c Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for k := range c.Keys {
		keys = append(keys, string(k.Kind)+"/"+k.Name)
	}
	slices.Sort(keys)
	mode := "F"
	if !c.Full {
		mode = "E"
	}
	r.got = append(r.got, mode+" "+strings.Join(keys, " "))
	r.raw = append(r.raw, c)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

func ep(addr string) *model.Endpoint { return &model.Endpoint{Address: addr} }

func staticSE(ns, name string, hosts []string, addrs ...string) *istioconfig.Config {
	spec := &networking.ServiceEntry{Hosts: hosts, Ports: []*networking.ServicePort{{Number: 80, Name: "http"}},
		Location: networking.ServiceEntry_MESH_INTERNAL, Resolution: networking.ServiceEntry_STATIC}
	for _, a := range addrs {
		spec.Endpoints = append(spec.Endpoints, &networking.WorkloadEntry{Address: a})
	}
	return seConfig(ns, name, spec)
}

func TestAggregateChanges(t *testing.T) {
	mem := NewMemory("memory")
	rec := &recorder{}
	var rejected []string
	now := time.Unix(100, 0)
	agg := NewAggregate(AggregateOptions{Registries: []Registry{mem}, OnChange: rec.onChange, Now: func() time.Time { return now },
		OnError: func(k istioconfig.Key, err error) { rejected = append(rejected, k.String()) }})

	selSE := seConfig("ns1", "vm", &networking.ServiceEntry{Hosts: []string{"vm.ns1"}, Ports: []*networking.ServicePort{{Number: 80, Name: "http"}},
		Resolution: networking.ServiceEntry_STATIC, WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}}})
	vmWE := func(addr, sa string) *istioconfig.Config {
		return weConfig("ns1", "vm-1", &networking.WorkloadEntry{Address: addr, Labels: map[string]string{"app": "vm"}, ServiceAccount: sa})
	}
	vs := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "route", Namespace: "ns1"}, Spec: &networking.VirtualService{Hosts: []string{"a"}}}

	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"memory service added", func() { mem.SetService(&model.Service{Hostname: "m.ns1", Namespace: "ns1"}) }, []string{"F Service/m.ns1"}},
		{"memory endpoints only", func() { mem.SetEndpoints("m.ns1", []*model.Endpoint{ep("10.0.0.1")}) }, []string{"E Endpoint/m.ns1"}},
		{"same endpoints again: no change", func() { mem.SetEndpoints("m.ns1", []*model.Endpoint{ep("10.0.0.1")}) }, nil},
		{"endpoints for an unknown host: nothing to report", func() { mem.SetEndpoints("ghost", []*model.Endpoint{ep("10.0.0.9")}) }, nil},
		{"ServiceEntry with two hosts", func() { change(agg, nil, staticSE("ns1", "se", []string{"a.ext", "b.ext"}, "10.1.0.1")) },
			[]string{"F Endpoint/a.ext Endpoint/b.ext Service/a.ext Service/b.ext"}},
		{"ServiceEntry endpoint change is endpoint-only", func() {
			change(agg, nil, staticSE("ns1", "se", []string{"a.ext", "b.ext"}, "10.1.0.1", "10.1.0.2"))
		}, []string{"E Endpoint/a.ext Endpoint/b.ext"}},
		{"ServiceEntry drops a host: only that host", func() {
			change(agg, nil, staticSE("ns1", "se", []string{"a.ext"}, "10.1.0.1", "10.1.0.2"))
		}, []string{"F Endpoint/b.ext Service/b.ext"}},
		{"invalid ServiceEntry update keeps the last good one", func() {
			change(agg, nil, seConfig("ns1", "se", &networking.ServiceEntry{Hosts: []string{"a.ext"}, Ports: []*networking.ServicePort{{Number: 0, Name: "x"}}}))
		}, nil},
		{"registry shadows a ServiceEntry host", func() {
			mem.Apply(Update{Services: map[string]*model.Service{"a.ext": {Hostname: "a.ext", Namespace: "mesh"}},
				Endpoints: map[string][]*model.Endpoint{"a.ext": {ep("10.9.9.9")}}})
		}, []string{"F Endpoint/a.ext Service/a.ext"}},
		{"registry deletes it: the ServiceEntry's comes back", func() { mem.DeleteService("a.ext") }, []string{"F Endpoint/a.ext Service/a.ext"}},
		{"selector entry without workloads", func() { change(agg, nil, selSE) }, []string{"F Service/vm.ns1"}},
		{"WorkloadEntry selected: service account set changes the service", func() { change(agg, nil, vmWE("10.2.0.1", "vm-sa")) },
			[]string{"F Endpoint/vm.ns1 Service/vm.ns1"}},
		{"WorkloadEntry address change is endpoint-only", func() { change(agg, vmWE("10.2.0.1", "vm-sa"), vmWE("10.2.0.2", "vm-sa")) },
			[]string{"E Endpoint/vm.ns1"}},
		{"WorkloadEntry in another namespace: nothing", func() {
			change(agg, nil, weConfig("ns2", "vm-1", &networking.WorkloadEntry{Address: "10.3.0.1", Labels: map[string]string{"app": "vm"}}))
		}, nil},
		{"WorkloadEntry deleted", func() { change(agg, vmWE("10.2.0.2", "vm-sa"), nil) }, []string{"F Endpoint/vm.ns1 Service/vm.ns1"}},
		{"VirtualService is a config change", func() { change(agg, nil, vs) }, []string{"F VirtualService/route"}},
		{"VirtualService deleted", func() { change(agg, vs, nil) }, []string{"F VirtualService/route"}},
		{"unknown VirtualService deleted: nothing", func() { change(agg, vs, nil) }, nil},
		{"ServiceEntry deleted", func() { change(agg, staticSE("ns1", "se", nil), nil) }, []string{"F Endpoint/a.ext Service/a.ext"}},
	}
	for _, st := range steps {
		st.do()
		if got := rec.take(); !slices.Equal(got, st.want) {
			t.Errorf("%s:\n got  %q\n want %q", st.name, got, st.want)
		}
	}
	if len(rejected) != 1 || rejected[0] != "ServiceEntry/ns1/se" {
		t.Errorf("rejected = %v", rejected)
	}
	if got := agg.ServiceCount(); got != 2 { // m.ns1, vm.ns1
		t.Errorf("services = %d: %v", got, agg.Services())
	}
}

func TestAggregateMergesServiceEntriesForOneHost(t *testing.T) {
	rec := &recorder{}
	agg := NewAggregate(AggregateOptions{OnChange: rec.onChange})
	older := staticSE("ns1", "b-older", []string{"shared.ext"}, "10.0.0.2")
	older.CreationTimestamp = time.Unix(1, 0)
	older.Spec.(*networking.ServiceEntry).SubjectAltNames = []string{"sa-b"}
	newer := staticSE("ns1", "a-newer", []string{"shared.ext"}, "10.0.0.1")
	newer.CreationTimestamp = time.Unix(2, 0)
	newer.Spec.(*networking.ServiceEntry).SubjectAltNames = []string{"sa-a"}
	otherNS := staticSE("ns2", "c", []string{"shared.ext"}, "10.0.0.3")
	otherNS.CreationTimestamp = time.Unix(3, 0)

	change(agg, nil, newer)
	change(agg, nil, older)
	change(agg, nil, otherNS)
	svc := agg.Service("shared.ext")
	if svc.Source.Name != "b-older" {
		t.Errorf("service defined by %s, want the oldest entry", svc.Source)
	}
	if !slices.Equal(svc.ServiceAccounts, []string{"sa-a", "sa-b"}) {
		t.Errorf("service accounts = %v", svc.ServiceAccounts)
	}
	var addrs []string
	for _, e := range agg.Endpoints("shared.ext") {
		addrs = append(addrs, e.Address)
	}
	if !slices.Equal(addrs, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("endpoints = %v (other namespace's must not merge)", addrs)
	}
	// The third entry (other namespace) changed nothing.
	if got := rec.take(); len(got) != 2 {
		t.Errorf("changes = %q, want 2", got)
	}
}

// TestAggregateDNSEndpointsAreFull: the endpoints of a DNS-resolution service are part of its
// cluster, so the aggregate reports their change as Full (the debouncer's EDS bypass and the
// snapshot builder act on that), while an EDS service's stays incremental.
func TestAggregateDNSEndpointsAreFull(t *testing.T) {
	mem := NewMemory("m")
	rec := &recorder{}
	NewAggregate(AggregateOptions{Registries: []Registry{mem}, OnChange: rec.onChange})
	mem.SetService(&model.Service{Hostname: "dns", Resolution: model.ResolutionDNS})
	mem.SetService(&model.Service{Hostname: "eds"})
	rec.take()
	mem.SetEndpoints("dns", []*model.Endpoint{ep("a.example.com")})
	mem.SetEndpoints("eds", []*model.Endpoint{ep("10.0.0.1")})
	if got, want := rec.take(), []string{"F Endpoint/dns", "E Endpoint/eds"}; !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q", got, want)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if c := rec.raw[len(rec.raw)-2]; c.Reason() != model.ReasonEndpointUpdate || !c.EndpointsOnly() || !c.PushRequest().Full {
		t.Errorf("DNS endpoint change: reason %s, endpoints only %v, request %+v", c.Reason(), c.EndpointsOnly(), c.PushRequest())
	}
}

// TestAggregateHeadlessEndpointsAreFull: a headless Service's endpoints have listeners of their
// own for its ports not served through HTTP, so their change is Full; a headless Service with
// HTTP ports only stays incremental (its listener does not depend on them), as in istiod.
func TestAggregateHeadlessEndpointsAreFull(t *testing.T) {
	mem := NewMemory("m")
	rec := &recorder{}
	NewAggregate(AggregateOptions{Registries: []Registry{mem}, OnChange: rec.onChange})
	headless := func(host string, p model.Protocol) *model.Service {
		return &model.Service{Hostname: host, Resolution: model.ResolutionPassthrough, Source: istioconfig.Key{Kind: model.KindService, Name: host},
			Ports: []model.Port{{Name: "p", Number: 80, Protocol: p}}}
	}
	mem.SetService(headless("tcp", model.ProtocolTCP))
	mem.SetService(headless("http", model.ProtocolHTTP))
	rec.take()
	mem.SetEndpoints("tcp", []*model.Endpoint{ep("10.0.0.1")})
	mem.SetEndpoints("http", []*model.Endpoint{ep("10.0.0.2")})
	if got, want := rec.take(), []string{"F Endpoint/tcp", "E Endpoint/http"}; !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q", got, want)
	}
}

func TestChangePushRequest(t *testing.T) {
	at := time.Unix(5, 0)
	tests := []struct {
		name       string
		c          Change
		wantReason model.TriggerReason
		wantFull   bool
	}{
		{"endpoints", Change{Keys: map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: "h"}: {}}, Time: at},
			model.ReasonEndpointUpdate, false},
		{"service", Change{Keys: map[istioconfig.Key]struct{}{{Kind: model.KindService, Name: "h"}: {}, {Kind: model.KindEndpoint, Name: "h"}: {}}, Full: true, Time: at},
			model.ReasonServiceUpdate, true},
		{"config", Change{Keys: map[istioconfig.Key]struct{}{{Kind: istioconfig.KindDestinationRule, Name: "d"}: {}}, Full: true, Time: at},
			model.ReasonConfigUpdate, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.c.PushRequest()
			if req.Full != tc.wantFull || req.Reasons[tc.wantReason] != 1 || req.Count() != 1 || !req.Start.Equal(at) ||
				len(req.ConfigsUpdated) != len(tc.c.Keys) {
				t.Errorf("PushRequest = %+v", req)
			}
		})
	}
}

func TestMemoryRegistry(t *testing.T) {
	mem := NewMemory("m")
	mem.SetService(&model.Service{Hostname: "b"})
	mem.SetService(&model.Service{Hostname: "a"})
	in := []*model.Endpoint{ep("10.0.0.2"), ep("10.0.0.1")}
	mem.SetEndpoints("a", in)
	var got []Update
	mem.Subscribe(func(u Update) { got = append(got, u) })
	if len(got) != 1 || len(got[0].Services) != 2 || len(got[0].Endpoints) != 1 {
		t.Fatalf("initial update = %+v", got)
	}
	eps := mem.Endpoints("a")
	if eps[0].Address != "10.0.0.1" || eps[0].Service != "a" || in[0].Service != "" {
		t.Errorf("endpoints not owned and sorted: %+v (input %+v)", eps, in)
	}
	mem.SetEndpoints("a", nil)
	if len(got) != 2 || mem.Endpoints("a") != nil {
		t.Errorf("updates = %+v", got)
	}
	mem.DeleteService("b")
	if s := mem.Services(); len(s) != 1 || s[0].Hostname != "a" || mem.Service("b") != nil {
		t.Errorf("services = %v", s)
	}
}

// TestAggregateConcurrentWriters checks, under -race, that writers from several goroutines and
// readers agree: the final state is the last write per host, and every change is reported.
func TestAggregateConcurrentWriters(t *testing.T) {
	mem := NewMemory("m")
	var mu sync.Mutex
	changes := 0
	agg := NewAggregate(AggregateOptions{Registries: []Registry{mem}, OnChange: func(Change) { mu.Lock(); changes++; mu.Unlock() }})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			host := string(rune('a' + w))
			mem.SetService(&model.Service{Hostname: host})
			for i := range 50 {
				mem.SetEndpoints(host, []*model.Endpoint{ep("10.0.0." + string(rune('0'+i%10)))})
				_ = agg.View().Endpoints(host)
			}
		})
	}
	wg.Wait()
	if agg.ServiceCount() != 4 {
		t.Errorf("services = %d", agg.ServiceCount())
	}
	if changes != 4*51 { // per host: the service, then 50 endpoint sets that each differ from the last
		t.Errorf("changes = %d, want %d", changes, 4*51)
	}
}

// TestAggregateViewsAreImmutable: each Change carries the state right after it, and later
// writes leave an earlier View as it was.
func TestAggregateViewsAreImmutable(t *testing.T) {
	mem := NewMemory("m")
	var views []*View
	agg := NewAggregate(AggregateOptions{Registries: []Registry{mem}, OnChange: func(c Change) { views = append(views, c.View) }})
	mem.SetService(&model.Service{Hostname: "a"})
	mem.SetEndpoints("a", []*model.Endpoint{ep("10.0.0.1")})
	change(agg, nil, &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "d", Namespace: "ns"}})
	for i := range 100 { // enough hosts to touch every shard
		mem.SetService(&model.Service{Hostname: fmt.Sprintf("h%d", i)})
	}
	mem.SetEndpoints("a", []*model.Endpoint{ep("10.0.0.2")})
	mem.DeleteService("a")
	if len(views) != 105 {
		t.Fatalf("%d views, want one per change (105)", len(views))
	}
	describe := func(v *View) string {
		var eps []string
		for _, e := range v.Endpoints("a") {
			eps = append(eps, e.Address)
		}
		return fmt.Sprintf("services=%d a=%v eps=%v configs=%d", v.ServiceCount(), v.Service("a") != nil, eps, len(v.Configs()))
	}
	for i, want := range map[int]string{
		0:   "services=1 a=true eps=[] configs=0",
		1:   "services=1 a=true eps=[10.0.0.1] configs=0",
		2:   "services=1 a=true eps=[10.0.0.1] configs=1",
		102: "services=101 a=true eps=[10.0.0.1] configs=1",
		103: "services=101 a=true eps=[10.0.0.2] configs=1",
		104: "services=100 a=false eps=[] configs=1",
	} {
		if got := describe(views[i]); got != want {
			t.Errorf("view %d: %s, want %s", i, got, want)
		}
	}
	if agg.View() != views[104] || len(views[104].Services()) != 100 || views[2].Config(istioconfig.Key{Kind: istioconfig.KindDestinationRule, Name: "d", Namespace: "ns"}) == nil {
		t.Errorf("latest view %p, want the last change's %p", agg.View(), views[104])
	}
}

func TestAggregateRegistryPriorityAndReplay(t *testing.T) {
	first, second := NewMemory("first"), NewMemory("second")
	// Content written before the aggregate exists is replayed when it subscribes.
	second.SetService(&model.Service{Hostname: "h", Namespace: "second"})
	second.SetEndpoints("h", []*model.Endpoint{ep("10.0.0.2")})
	rec := &recorder{}
	agg := NewAggregate(AggregateOptions{Registries: []Registry{first, second}, OnChange: rec.onChange})
	if got := rec.take(); !slices.Equal(got, []string{"F Endpoint/h Service/h"}) {
		t.Fatalf("replay = %q", got)
	}
	first.SetService(&model.Service{Hostname: "h", Namespace: "first"})
	if svc := agg.Service("h"); svc.Namespace != "first" || len(agg.Endpoints("h")) != 0 {
		t.Errorf("first registry must win with its own (no) endpoints: %+v %v", svc, agg.Endpoints("h"))
	}
	// Endpoints of the lower-priority registry no longer matter.
	second.SetEndpoints("h", []*model.Endpoint{ep("10.0.0.3")})
	first.DeleteService("h")
	if svc := agg.Service("h"); svc.Namespace != "second" || agg.Endpoints("h")[0].Address != "10.0.0.3" {
		t.Errorf("after delete: %+v %v", svc, agg.Endpoints("h"))
	}
	if got := rec.take(); !slices.Equal(got, []string{"F Endpoint/h Service/h", "F Endpoint/h Service/h"}) {
		t.Errorf("changes = %q (the shadowed endpoint write must report nothing)", got)
	}
}

// cfgState is a test's config store version: each change makes a new one, as config.Memory
// hands the aggregate a new version with each event.
type cfgState map[istioconfig.Key]*istioconfig.Config

func (s cfgState) Config(k istioconfig.Key) *istioconfig.Config { return s[k] }
func (s cfgState) Configs() []*istioconfig.Config               { return slices.Collect(maps.Values(s)) }

var (
	statesMu sync.Mutex
	states   = map[*Aggregate]cfgState{}
)

// change applies old → cur to the test store of agg and hands agg the change with the new
// version.
func change(agg *Aggregate, old, cur *istioconfig.Config) {
	statesMu.Lock()
	next := maps.Clone(states[agg])
	if next == nil {
		next = cfgState{}
	}
	switch {
	case cur != nil:
		next[cur.Key()] = cur
	case old != nil:
		delete(next, old.Key())
	}
	states[agg] = next
	statesMu.Unlock()
	agg.ConfigChanged(old, cur, next)
}

// TestAggregateDeletesOfOneWrite: objects a store deletes in one write arrive as one event
// each, every one carrying the store's version after the whole write; each is still reported.
// Before, only the first was: its event installed the version, and the others then found
// neither the View nor the version holding their object, so a directory's reload that removed
// several files left all but one of their objects in the snapshot.
func TestAggregateDeletesOfOneWrite(t *testing.T) {
	rec := &recorder{}
	agg := NewAggregate(AggregateOptions{OnChange: rec.onChange})
	vs := func(name string) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: name, Namespace: "ns1"},
			Spec: &networking.VirtualService{Hosts: []string{name}}}
	}
	a, b, c := vs("a"), vs("b"), vs("c")
	all := cfgState{a.Key(): a, b.Key(): b, c.Key(): c}
	for _, x := range []*istioconfig.Config{a, b, c} {
		agg.ConfigChanged(nil, x, all)
	}
	rec.take()
	after := cfgState{} // the store's version once the write deleted all three
	for _, x := range []*istioconfig.Config{a, b, c} {
		agg.ConfigChanged(x, nil, after)
	}
	want := []string{"F VirtualService/a", "F VirtualService/b", "F VirtualService/c"}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Errorf("deletes of one write:\n got  %q\n want %q", got, want)
	}
	agg.ConfigChanged(a, nil, after) // deleted already: nothing
	if got := rec.take(); len(got) != 0 {
		t.Errorf("a second delete: %q, want nothing", got)
	}
}
