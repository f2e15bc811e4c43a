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
