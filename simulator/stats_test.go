package simulator

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/xdslab/xdslab/internal/dist"
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

// A rate is a Poisson process: exponential inter-arrival times with mean 1/rate (KS test) and
// counts per second with variance equal to their mean.
func TestPoissonArrivals(t *testing.T) {
	const rate = 50.0
	cfg := Config{Seed: 5, Duration: 200 * time.Second, Topology: smallTopology(),
		Churn: []Churn{{Kind: ConfigChange, Target: TargetDestinationRule, Rate: rate}}}
	sim, err := New(cfg)
	require.NoError(t, err)
	var gaps []float64
	perSecond := make([]float64, 200)
	last := time.Duration(0)
	for _, ev := range drain(t, sim) {
		require.Empty(t, ev.Skip)
		gaps = append(gaps, (ev.Scheduled - last).Seconds())
		perSecond[int(ev.Scheduled/time.Second)]++
		last = ev.Scheduled
	}
	n := float64(len(gaps))
	require.InDelta(t, rate*200, n, 4*math.Sqrt(rate*200))
	mean := stat.Mean(gaps, nil)
	require.InDelta(t, 1/rate, mean, 4*(1/rate)/math.Sqrt(n), "mean inter-arrival")
	// One-sample Kolmogorov–Smirnov against Exp(rate); critical value at alpha 0.001.
	slices.Sort(gaps)
	ex := distuv.Exponential{Rate: rate}
	d := 0.0
	for i, g := range gaps {
		f := ex.CDF(g)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	require.Less(t, d, 1.95/math.Sqrt(n), "KS statistic")
	cm, cv := stat.MeanVariance(perSecond, nil)
	require.InDelta(t, 1.0, cv/cm, 0.3, "index of dispersion of counts per second")
}

// Every and at are fixed schedules on the absolute timeline; start and stop bound them.
func TestFixedSchedules(t *testing.T) {
	cfg := Config{Seed: 1, Duration: 10 * time.Second, Topology: smallTopology(), Churn: []Churn{
		{Kind: ConfigChange, Target: TargetDestinationRule, Every: 2 * time.Second, Start: time.Second, Stop: 8 * time.Second},
		{Kind: ConfigChange, Target: TargetVirtualService, At: []time.Duration{9 * time.Second, 500 * time.Millisecond, 12 * time.Second}},
	}}
	sim, err := New(cfg)
	require.NoError(t, err)
	var got []time.Duration
	for _, ev := range drain(t, sim) {
		got = append(got, ev.Scheduled)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{500 * ms, 3000 * ms, 5000 * ms, 7000 * ms, 9000 * ms}, got)
}
