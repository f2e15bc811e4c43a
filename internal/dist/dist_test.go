package dist

import (
	"math"
	"sort"
	"testing"

	"go.uber.org/goleak"
	"gonum.org/v1/gonum/stat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSpecsMatchTheirParameters(t *testing.T) {
	const n = 20000
	tests := []struct {
		spec       Spec
		mean, tol  float64 // expected mean and relative tolerance
		median     float64 // expected median when > 0
		medianTolR float64
	}{
		{spec: Constant(7), mean: 7, tol: 0},
		{spec: Spec{Dist: "uniform", Min: 2, Max: 10}, mean: 6, tol: 0.02},
		{spec: Spec{Dist: "exp", Mean: 5}, mean: 5, tol: 0.03},
		{spec: Spec{Dist: "normal", Mean: 50, Sigma: 5}, mean: 50, tol: 0.01},
		{spec: Spec{Dist: "lognormal", Median: 8, Sigma: 0.6}, mean: 8 * math.Exp(0.18), tol: 0.03, median: 8, medianTolR: 0.03},
		{spec: Spec{Dist: "pareto", Min: 1, Alpha: 3}, mean: 1.5, tol: 0.05},
	}
	for _, tc := range tests {
		t.Run(tc.spec.Dist, func(t *testing.T) {
			s, err := New(tc.spec, 42)
			if err != nil {
				t.Fatal(err)
			}
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = s.Float()
			}
			m := stat.Mean(xs, nil)
			if math.Abs(m-tc.mean) > tc.tol*tc.mean+1e-12 {
				t.Errorf("mean %g, want %g ± %g%%", m, tc.mean, tc.tol*100)
			}
			if tc.median > 0 {
				sort.Float64s(xs)
				med := stat.Quantile(0.5, stat.Empirical, xs, nil)
				if math.Abs(med-tc.median) > tc.medianTolR*tc.median {
					t.Errorf("median %g, want %g", med, tc.median)
				}
			}
		})
	}
}

func TestZipfRange(t *testing.T) {
	s, err := New(Spec{Dist: "zipf", S: 1.5, Max: 20}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ones := 0
	for range 5000 {
		v := s.Int()
		if v < 1 || v > 20 {
			t.Fatalf("zipf value %d outside 1..20", v)
		}
		if v == 1 {
			ones++
		}
	}
	if ones < 1500 { // P(1) ≈ 0.41 for s=1.5, n=20
		t.Errorf("zipf rank 1 drawn %d/5000 times, want the most frequent", ones)
	}
}

func TestSameSeedSameSequence(t *testing.T) {
	a, _ := New(Spec{Dist: "lognormal", Median: 3, Sigma: 1}, 9)
	b, _ := New(Spec{Dist: "lognormal", Median: 3, Sigma: 1}, 9)
	for range 100 {
		if a.Float() != b.Float() {
			t.Fatal("same seed gave different sequences")
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []Spec{
		{Dist: "gauss"},
		{Dist: "uniform", Min: 5, Max: 1},
		{Dist: "exp"},
		{Dist: "lognormal", Sigma: 1},
		{Dist: "pareto", Min: 1},
		{Dist: "zipf", S: 1, Max: 10},
		{Dist: "constant", Value: -1},
	}
	for _, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
		if _, err := New(s, 1); err == nil {
			t.Errorf("New(%+v): no error", s)
		}
	}
}
