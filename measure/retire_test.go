package measure

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xdslab/xdslab/probe"
)

// TestRetireIndexedMatchesQuadratic: over random pending lists, the indexed retirement retires
// exactly the entries the quadratic one does.
func TestRetireIndexedMatchesQuadratic(t *testing.T) {
	m := NewMatcher(MatcherConfig{})
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []probe.Op{probe.EndpointPresent, probe.EndpointAbsent}
	pred := func() probe.Predicate {
		res := []string{"a", "b", "c"}[rng.IntN(3)]
		switch rng.IntN(6) {
		case 0: // a deletion: it supersedes through the service port it removes
			return probe.Predicate{Op: probe.ClusterAbsent, Resource: res}
		case 1:
			return probe.Predicate{Op: probe.EndpointCount, Resource: res, Count: rng.IntN(2)}
		}
		return probe.Predicate{Op: ops[rng.IntN(2)], Resource: res,
			Address: []string{"10.0.0.1", "10.0.0.2"}[rng.IntN(2)], Port: 80}
	}
	for round := range 500 {
		n := 1 + rng.IntN(40)
		pending := make([]matchPend, n)
		for i := range pending {
			e := probe.Expectation{All: []probe.Predicate{pred()}}
			for rng.IntN(3) == 0 { // some of more than two subjects (matchPend keeps two inline)
				e.All = append(e.All, pred())
			}
			if rng.IntN(5) == 0 { // a deletion beyond the cap: it removes its Rest's ports too
				e.Rest = append(e.Rest, probe.Predicate{Op: probe.ClusterAbsent, Resource: []string{"a", "b", "c"}[rng.IntN(3)]})
			}
			pending[i] = newPend(m.newMatchEvent(e, 0), false)
		}
		var reached []int
		drop0 := make([]bool, n)
		for i := range pending {
			if rng.IntN(4) == 0 {
				reached = append(reached, i)
				drop0[i] = true
			}
		}
		run := func(f func([]matchPend, []int, []bool, func(int))) []int {
			drop := slices.Clone(drop0)
			var out []int
			f(pending, reached, drop, func(j int) { drop[j] = true; out = append(out, j) })
			slices.Sort(out)
			return out
		}
		q, ix := run(retireQuadratic), run(retireIndexed)
		if !slices.Equal(q, ix) {
			t.Fatalf("round %d: quadratic retires %v, indexed %v", round, q, ix)
		}
	}
}
