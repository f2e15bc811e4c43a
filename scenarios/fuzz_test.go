package scenarios

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzLoad: the loader never panics; it either returns a valid scenario that prints and
// reloads (YAML and JSON) to the same scenario, or an Errors list where every error names the
// file and says what is wrong.
func FuzzLoad(f *testing.F) {
	for _, name := range BuiltinNames() {
		data, err := BuiltinSource(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"name: x\n",
		"name: x\nchurn: [{kind: scale, rate: 1/s, delta: 3}]\nclients: [{ackDelay: 5ms}]\n",
		"name: x\nclients: [&a {count: 2}, {<<: *a, name: b}]\n",
		"name: x\nthresholds: {m_seconds{type:cds}: ['p(99.9)<1.5s', 'avg<1']}\n",
		"{\"name\": \"j\", \"seed\": 5, \"duration\": \"10s\"}",
		"name: x\nduraton: 5s\n",
		"name: x\nclients: [{node: {labels: {app: a, v: \"1\"}}}, {node: {labels: {}}}]\n",
		"- a\n",
		"name: x\n---\nname: y\n",
		meshScenario,
		// The lab's cases (docs/scenarios.md read by a first-time user).
		"\ufeffname: bom\nclients: [{name: a, count: 5}]\n",
		"name: crlf\r\ntopology:\r\n  services: 10\r\n",
		"name: tabs\ntopology:\n\tservices: 10\n",
		"name: x\nbase: &base {count: 5}\nclients:\n  - <<: *base\n    name: a\n",
		"name: x\nthresholds:\n  xdslab_fleet_nacks_total: ['count==0']\n  xdslab_fleet_nacks_total: ['count==1']\n",
		"name: x\nclients: [{count: 999999999999}]\n",
		"name: x\nthresholds: {xdslab_push_latency_seconds: ['p(99)<1s']}\n",
		"name: x\nthresholds: {xdslab_cache_hit_ratio{type:eds}: ['rate>90']}\n",
		"name: x\nduration: 1h30\ncontrolPlane: {debounce: {minQuiet: 5x}}\n",
		"name: x\nclients:\n  -\n",
		"name: m\ntopology: {mesh: {services: [{name: a, namespace: n, ports: [{number: 80, protocol: grpc}], endpoints: [{count: 3, locality: /z}]}], config: \"apiVersion: v1\"}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := LoadBytes("fuzz.yaml", data)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T is not a non-empty Errors: %v", err, err)
			}
			for _, e := range es {
				if e.File != "fuzz.yaml" || e.Msg == "" {
					t.Fatalf("error without file or message: %#v", e)
				}
			}
			if s != nil {
				t.Fatal("a failed load returned a scenario")
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("loaded scenario does not validate: %v", err)
		}
		y, err := s.YAML()
		if err != nil {
			t.Fatal(err)
		}
		back, err := LoadBytes("printed.yaml", y)
		if err != nil {
			t.Fatalf("printed scenario does not reload: %v\n%s", err, y)
		}
		if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
			t.Fatalf("YAML round trip changed the scenario:\n%s\n%s", diff, y)
		}
		j, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err = LoadBytes("printed.json", j)
		if err != nil {
			t.Fatalf("JSON does not reload: %v\n%s", err, j)
		}
		if diff := cmp.Diff(s, back, ignoreSrc); diff != "" {
			t.Fatalf("JSON round trip changed the scenario:\n%s\n%s", diff, j)
		}
	})
}

// FuzzSet: Set (tune --param, overrides) never panics and never changes the scenario it was
// cloned from; it either leaves a valid scenario or returns Errors that name the path and
// carry no position of their own.
func FuzzSet(f *testing.F) {
	for _, kv := range [][2]string{
		{"controlPlane.debounce.minQuiet", "50ms"}, {"controlPlane.debounce.minQuiet", "5x"}, {"clients[1].count", "7"},
		{"clients[0].ackDelay.mean", "3ms"}, {"churn[1].delta.max", "5"}, {"churn[1].delta", "{dist: uniform, min: 2, max: 4}"},
		{"topology.mesh.services", "[]"}, {"clients[0].node.labels", "{app: x}"}, {"clients[0].node.labels.app", "x"},
		{"clients[0].targets", "[a:1]"}, {"clients[0].namespaceCounts", "{ns-0: 500}"}, {"thresholds.xdslab_fleet_nacks_total", "['count<5']"},
		{"seed.x", "1"}, {"", "1"}, {"clients[x].count", "1"}, {"a[1]]", "1"}, {"name", "a: ["}, {"churn[0]", "{kind: scale}"},
	} {
		f.Add(kv[0], kv[1])
	}
	base, err := Builtin("delta-vs-sotw")
	if err != nil {
		f.Fatal(err)
	}
	pristine, _ := Builtin("delta-vs-sotw")
	f.Fuzz(func(t *testing.T, path, value string) {
		c := base.Clone()
		err := c.Set(path, value)
		if diff := cmp.Diff(pristine, base, ignoreSrc); diff != "" {
			t.Fatalf("Set(%q, %q) on a clone changed the original:\n%s", path, value, diff)
		}
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("Set(%q, %q): error %T is not a non-empty Errors: %v", path, value, err, err)
			}
			for _, e := range es {
				if e.Msg == "" || e.File == "--set" && e.Line != 0 {
					t.Fatalf("Set(%q, %q): %#v", path, value, e)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Set(%q, %q) succeeded, and the scenario does not validate: %v", path, value, err)
		}
	})
}
