package simulator

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
	networking "istio.io/api/networking/v1alpha3"
)

// The generated topology follows its distributions (fixed seed, so the test is deterministic;
// tolerances are 4 standard errors, so a correct generator passes for almost every seed).
func TestTopologyDistributions(t *testing.T) {
	const median, sigma = 8.0, 0.6
	topo := DefaultTopology()
	topo.Services = 5000
	topo.Namespaces = 50
	topo.EndpointsPerService = dist.Spec{Dist: "lognormal", Median: median, Sigma: sigma}
	topo.PortsPerService = dist.Spec{Dist: "uniform", Min: 1, Max: 4}
	topo.Protocols = Protocols{HTTP: 5, GRPC: 3, TCP: 2}
	m, err := newMesh(topo, 99)
	require.NoError(t, err)
	require.Len(t, m.services, 5000)

	var counts []float64
	var protos [3]float64
	zones := map[string]float64{}
	for _, s := range m.services {
		counts = append(counts, float64(len(s.endpoints)))
		for _, p := range s.ports {
			protos[p.proto]++
		}
		for _, e := range s.endpoints {
			zones[e.locality()]++
		}
	}
	slices.Sort(counts)
	// Endpoints per service: the median of the rounded draws is the lognormal's median, the
	// mean is exp(mu + sigma²/2).
	require.Equal(t, median, stat.Quantile(0.5, stat.Empirical, counts, nil))
	ln := distuv.LogNormal{Mu: math.Log(median), Sigma: sigma}
	mean, sd := stat.MeanStdDev(counts, nil)
	se := ln.StdDev() / math.Sqrt(float64(len(counts)))
	require.InDelta(t, ln.Mean(), mean, 4*se, "mean endpoints per service")
	require.InDelta(t, ln.StdDev(), sd, 0.1*ln.StdDev(), "sd of endpoints per service")

	// Protocol mix: chi-square goodness of fit against the weights.
	total := protos[0] + protos[1] + protos[2]
	expected := []float64{total * 0.5, total * 0.3, total * 0.2}
	chi := stat.ChiSquare(protos[:], expected)
	p := 1 - distuv.ChiSquared{K: 2}.CDF(chi)
	require.Greater(t, p, 0.001, "protocol mix %v vs %v (chi² %.2f)", protos, expected, chi)

	// Localities: uniform over the 6 zones.
	var obs, exp []float64
	var n float64
	for _, c := range zones {
		n += c
	}
	for _, c := range zones {
		obs = append(obs, c)
		exp = append(exp, n/float64(len(zones)))
	}
	require.Len(t, zones, 6)
	chi = stat.ChiSquare(obs, exp)
	require.Greater(t, 1-distuv.ChiSquared{K: float64(len(zones) - 1)}.CDF(chi), 0.001, "zones %v", zones)
}

// TestExplicitImporters: a namespace's own Sidecar decides for its clients, else the root
// namespace's, else they see everything; ./*, NS/*, */*, ~/* and ~NS/host read per namespace; a Sidecar
// with a workload selector is not followed; no namespace-wide Sidecar means no scoping.
func TestExplicitImporters(t *testing.T) {
	sidecar := func(ns string, sel bool, hosts ...string) istioconfig.Config {
		sc := &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: hosts}}}
		if sel {
			sc.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "x"}}
		}
		return istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "s", Namespace: ns}, Spec: sc}
	}
	nss := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name        string
		cfgs        []istioconfig.Config
		want, hosts map[string][]string
	}{
		{"none", nil, nil, nil},
		{"selector only", []istioconfig.Config{sidecar("a", true, "./*")}, nil, nil},
		{"own and root", []istioconfig.Config{sidecar("a", false, "./*", "c/*"), sidecar("istio-system", false, "./*")},
			map[string][]string{"a": {"a"}, "b": {"b"}, "c": {"a", "c"}}, map[string][]string{}},
		{"all and none", []istioconfig.Config{sidecar("a", false, "*/*"), sidecar("b", false, "~/*")},
			map[string][]string{"a": {"a", "c"}, "b": {"a", "c"}, "c": {"a", "c"}}, map[string][]string{}},
		{"one host", []istioconfig.Config{sidecar("a", false, "./*", "b/x.b.svc.cluster.local")},
			map[string][]string{"a": {"a", "b", "c"}, "b": {"b", "c"}, "c": {"b", "c"}}, map[string][]string{"x.b.svc.cluster.local": {"a"}}},
		// Exclusions (~NS/host): a namespace one reaches into is not counted whole, an excluded
		// host not at all, and "~NS/host" is never an import.
		{"exclusions", []istioconfig.Config{sidecar("a", false, "*/*", "~b/x.b.svc.cluster.local", "c/y.c.svc.cluster.local", "~c/y.c.svc.cluster.local")},
			map[string][]string{"a": {"a", "b", "c"}, "b": {"b", "c"}, "c": {"b", "c"}}, map[string][]string{}},
	} {
		got, hosts, _ := explicitImporters(tc.cfgs, nss)
		if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(hosts, tc.hosts) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, hosts, tc.want, tc.hosts)
		}
	}
	// The one-host Sidecar: an event on x.b reaches a's sidecars, one on y.b does not.
	m := &mesh{}
	m.importers, m.hostImporters, m.heldPorts = explicitImporters([]istioconfig.Config{sidecar("a", false, "./*", "b/x.b.svc.cluster.local")}, nss)
	pr := m.predicateReach([]probe.Predicate{
		{Op: probe.EndpointPresent, Resource: "outbound|80||x.b.svc.cluster.local"},
		{Op: probe.EndpointPresent, Resource: "outbound|80||y.b.svc.cluster.local"},
	}, m.reach("b"))
	if want := [][]string{nil, {"b", "c"}}; !reflect.DeepEqual(pr, want) {
		t.Errorf("predicate reach %v, want %v", pr, want)
	}
}

// TestExplicitImportersEgressPorts: an egress listener with a port imports only that port and
// builds that port's routes alone, so the lab counts none of its hosts, holds clusters to the
// catch-all listener's imports, and holds no client of that Sidecar to a route of the port.
func TestExplicitImportersEgressPorts(t *testing.T) {
	sc := &networking.Sidecar{Egress: []*networking.IstioEgressListener{
		{Port: &networking.SidecarPort{Number: 8041, Protocol: "HTTP", Name: "http"}, Hosts: []string{"c/*"}},
		{Hosts: []string{"./*", "b/*"}},
	}}
	cfgs := []istioconfig.Config{{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Name: "s", Namespace: "a"}, Spec: sc}}
	nss := []string{"a", "b", "c"}
	m := &mesh{}
	m.importers, m.hostImporters, m.heldPorts = explicitImporters(cfgs, nss)
	if want := map[string][]string{"a": {"a", "b", "c"}, "b": {"a", "b", "c"}, "c": {"b", "c"}}; !reflect.DeepEqual(m.importers, want) {
		t.Errorf("importers %v, want %v (the port's listener imports c on 8041 only)", m.importers, want)
	}
	if want := map[string][]uint32{"a": {8041}}; !reflect.DeepEqual(m.heldPorts, want) {
		t.Errorf("heldPorts %v, want %v", m.heldPorts, want)
	}
	pr := m.predicateReach([]probe.Predicate{
		{Op: probe.RouteTo, Resource: "8041", Host: "x.b.svc.cluster.local", Cluster: "outbound|8041|v1|x.b.svc.cluster.local"},
		{Op: probe.RouteTo, Resource: "8080", Host: "x.b.svc.cluster.local", Cluster: "outbound|8080|v1|x.b.svc.cluster.local"},
		{Op: probe.EndpointPresent, Resource: "outbound|8041||x.b.svc.cluster.local"},
	}, m.reach("b"))
	if want := [][]string{{"b", "c"}, nil, nil}; !reflect.DeepEqual(pr, want) {
		t.Errorf("predicate reach %v, want %v", pr, want)
	}
}
