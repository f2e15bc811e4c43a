package scenarios

import (
	"slices"
	"testing"

	"github.com/xdslab/xdslab/scenarios/threshold"
)

func TestImplicitThresholds(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // keys
	}{
		{"default group", "name: x\n", []string{"xdslab_connect_incomplete_clients{group:group-1}"}},
		{"every group", "name: x\nclients: [{name: a}, {name: b}]\n",
			[]string{"xdslab_connect_incomplete_clients{group:a}", "xdslab_connect_incomplete_clients{group:b}"}},
		{"relaxed group", "name: x\nclients: [{name: a, requireFullConfig: false}, {name: b}]\n",
			[]string{"xdslab_connect_incomplete_clients{group:b}"}},
		{"none required", "name: x\nclients: [{name: a, requireFullConfig: false}]\n", nil},
		{"an explicit threshold beside it", "name: x\nclients: [{name: a, requireFullConfig: false}]\nthresholds:\n  xdslab_connect_incomplete_clients{group:a}: ['value<=3']\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadBytes("s.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range s.ImplicitThresholds() {
				got = append(got, it.Key)
				if err := threshold.CheckSelector(it.Key); err != nil {
					t.Errorf("%s: %v", it.Key, err)
				}
				if parsed, err := threshold.Parse(it.Threshold.Source); err != nil || parsed != it.Threshold {
					t.Errorf("%s: threshold %+v does not parse back (%+v, %v)", it.Key, it.Threshold, parsed, err)
				}
				if ok, err := it.Threshold.Eval(map[string]float64{"value": 0}); !ok || err != nil {
					t.Errorf("%s: 0 incomplete clients fail it (%v)", it.Key, err)
				}
				if ok, _ := it.Threshold.Eval(map[string]float64{"value": 1}); ok {
					t.Errorf("%s: 1 incomplete client passes it", it.Key)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("keys = %q, want %q", got, tc.want)
			}
		})
	}
}
