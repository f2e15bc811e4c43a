package simulator_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// A rate is a Poisson process: exponential inter-arrival times with mean 1/rate (KS test) and
// counts per second with variance equal to their mean.
func TestPoissonArrivals(t *testing.T) {
	const rate = 50.0
	cfg := simulator.Config{Seed: 5, Duration: 200 * time.Second, Topology: simtest.SmallTopology(),
		Churn: []simulator.Churn{{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, Rate: rate}}}
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	var gaps []float64
	perSecond := make([]float64, 200)
	last := time.Duration(0)
	for _, ev := range simtest.Drain(t, sim) {
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
	cfg := simulator.Config{Seed: 1, Duration: 10 * time.Second, Topology: simtest.SmallTopology(), Churn: []simulator.Churn{
		{Kind: simulator.ConfigChange, Target: simulator.TargetDestinationRule, Every: 2 * time.Second, Start: time.Second, Stop: 8 * time.Second},
		{Kind: simulator.ConfigChange, Target: simulator.TargetVirtualService, At: []time.Duration{9 * time.Second, 500 * time.Millisecond, 12 * time.Second}},
	}}
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	var got []time.Duration
	for _, ev := range simtest.Drain(t, sim) {
		got = append(got, ev.Scheduled)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{500 * ms, 3000 * ms, 5000 * ms, 7000 * ms, 9000 * ms}, got)
}
