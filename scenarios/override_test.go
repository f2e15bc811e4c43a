package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xdslab/xdslab/scenarios/units"
)

func TestSet(t *testing.T) {
	base, err := Builtin("delta-vs-sotw")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, value string
		check       func(*Scenario) bool
		errSub      string
	}{
		{"controlPlane.debounce.minQuiet", "50ms", func(s *Scenario) bool { return s.ControlPlane.Debounce.MinQuiet.D() == 50*time.Millisecond }, ""},
		{"controlPlane.debounce.maxDelay", "1s", func(s *Scenario) bool { return s.ControlPlane.Debounce.MaxDelay.D() == time.Second }, ""},
		{"clients[1].count", "7", func(s *Scenario) bool { return s.Clients[1].Count == 7 && s.Clients[0].Count == 500 }, ""},
		{"clients[0].ackDelay.mean", "3ms", func(s *Scenario) bool {
			return s.Clients[0].AckDelay.Mean == 0.003 && s.Clients[0].AckDelay.Dist == "exp"
		}, ""},
		{"clients[0].ackDelay", "10ms", func(s *Scenario) bool { return s.Clients[0].AckDelay == units.TimeDist{Dist: "constant", Value: 0.01} }, ""},
		{"topology.endpointsPerService.median", "9", func(s *Scenario) bool {
			e := s.Topology.EndpointsPerService
			return e.Median == 9 && e.Sigma == 0.6 && e.Max == 60
		}, ""},
		{"topology.protocols", "{tcp: 1}", func(s *Scenario) bool { return s.Topology.Protocols == Protocols{TCP: 1} }, ""},
		{"churn[0].rate", "2/s", func(s *Scenario) bool { return s.Churn[0].Rate == 2 }, ""},
		{"thresholds.xdslab_fleet_nacks_total", "['count<5']", func(s *Scenario) bool {
			return len(s.Thresholds["xdslab_fleet_nacks_total"]) == 1 && len(s.Thresholds) == 5
		}, ""},
		{"seed", "99", func(s *Scenario) bool { return s.Seed == 99 }, ""},
		// Paths through a pointer (churn[i].delta, topology.mesh) reach its fields.
		{"churn[1].delta.max", "5", func(s *Scenario) bool {
			return s.Churn[1].Delta.Max == 5 && s.Churn[1].Delta.Dist == "uniform" && s.Churn[1].Delta.Min == 1
		}, ""},
		{"churn[1].delta", "{dist: uniform, min: 2, max: 4}", func(s *Scenario) bool { return s.Churn[1].Delta.Min == 2 && s.Churn[1].Delta.Max == 4 }, ""},
		{"controlPlane.debounce.minQuite", "1s", nil, `did you mean "minQuiet"?`},
		{"controlPlane.debounce.minQuiet", "5", nil, "has no unit"},
		{"controlPlane.debounce.minQuiet", "20s", nil, "shorter than minQuiet"}, // maxDelay 10s
		{"clients[5].count", "1", nil, "has 2 entries"},
		{"clients[x].count", "1", nil, "bad index"},
		{"seed.x", "1", nil, `has no field "x"`},
		{"topology.endpointsPerService.mode", "1", nil, "unknown distribution field"},
		{"thresholds.xdslab_fleet_nacks_total", "['p(99)<1']", nil, "is a counter"},
		{"", "1", nil, "empty path"},
		{"name", "a: [", nil, "invalid value"},
		{"churn[1].delta.mean", "1", nil, "mean does not apply to dist uniform"},
		// A failing path through a pointer that is nil allocates nothing in the scenario.
		{"topology.mesh.services", "5", nil, "topology.mesh"},
	}
	for _, tc := range tests {
		t.Run(tc.path+"="+tc.value, func(t *testing.T) {
			s := base.Clone()
			err := s.Set(tc.path, tc.value)
			if tc.errSub != "" {
				var es Errors
				if err == nil || !errors.As(err, &es) || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("Set = %v, want an Errors containing %q", err, tc.errSub)
				}
				// A value given to Set has no place in a file: no "--set:1:1".
				if strings.HasPrefix(err.Error(), "--set:1") {
					t.Errorf("Set = %q: a position in the value alone", err)
				}
				// A failed Set leaves the scenario as it was.
				if diff := cmp.Diff(base, s, ignoreSrc, cmp.AllowUnexported(Scenario{})); diff != "" {
					t.Errorf("a failed Set changed the scenario:\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(s) {
				t.Errorf("after Set the scenario is %+v", s)
			}
		})
	}
	// Clone is deep: none of the above changed the base.
	again, err := Builtin("delta-vs-sotw")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(again, base, ignoreSrc); diff != "" {
		t.Errorf("Set on a clone changed the original:\n%s", diff)
	}
}
