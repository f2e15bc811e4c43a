package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/scenarios/units"
)

// TestDebouncePolicy: the debounce policy and the adaptive parameters load, override and
// fail with file, line, path and fix.
func TestDebouncePolicy(t *testing.T) {
	s, err := LoadBytes("p.yaml", []byte("name: x\ncontrolPlane:\n  debounce: {minQuiet: 10ms, maxDelay: 2s, policy: adaptive, adaptive: {maxQuiet: 500ms, costFactor: 2, weight: 0.5}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := s.ControlPlane.Debounce
	if d.Policy != "adaptive" || d.Adaptive != (AdaptiveDebounce{MaxQuiet: units.Duration(500 * time.Millisecond), CostFactor: 2, Weight: 0.5}) {
		t.Errorf("debounce = %+v", d)
	}
	if err := s.Set("controlPlane.debounce.policy", "fixed"); err != nil || s.ControlPlane.Debounce.Policy != "fixed" {
		t.Errorf("Set policy=fixed: %v", err)
	}
	for _, tc := range []struct {
		name, yaml, path, msg, fix string
		line                       int
	}{
		{"unknown policy", "name: x\ncontrolPlane:\n  debounce: {policy: ewma}\n", "controlPlane.debounce.policy", `unknown debounce policy "ewma"`, "fixed or adaptive", 3},
		{"maxQuiet over maxDelay", "name: x\ncontrolPlane:\n  debounce:\n    maxDelay: 1s\n    policy: adaptive\n    adaptive: {maxQuiet: 2s}\n", "controlPlane.debounce.adaptive.maxQuiet", "longer than maxDelay 1s", "at most maxDelay (1s)", 6},
		{"maxQuiet under minQuiet", "name: x\ncontrolPlane:\n  debounce: {minQuiet: 200ms, policy: adaptive, adaptive: {maxQuiet: 100ms}}\n", "controlPlane.debounce.adaptive.maxQuiet", "shorter than minQuiet 200ms", "at least minQuiet", 3},
		{"weight", "name: x\ncontrolPlane:\n  debounce: {policy: adaptive, adaptive: {weight: 2}}\n", "controlPlane.debounce.adaptive.weight", "weight 2", "(0, 1]", 3},
		{"cost factor", "name: x\ncontrolPlane:\n  debounce: {policy: adaptive, adaptive: {costFactor: -1}}\n", "controlPlane.debounce.adaptive.costFactor", "costFactor -1", "positive", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("bad.yaml", []byte(tc.yaml))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v, want Errors", err)
			}
			for _, e := range es {
				if e.Path == tc.path && strings.Contains(e.Msg, tc.msg) {
					if !strings.Contains(e.Fix, tc.fix) || e.Line != tc.line || e.File != "bad.yaml" {
						t.Errorf("error %+v: want fix %q at bad.yaml:%d", e, tc.fix, tc.line)
					}
					return
				}
			}
			t.Fatalf("no error at %s saying %q: %v", tc.path, tc.msg, err)
		})
	}
}
