package scenarios

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

const schemaFile = "scenario.schema.json"

// The checked-in schema is what JSONSchema generates; regenerate with
// go test ./scenarios -run TestSchemaUpToDate -update
func TestSchemaUpToDate(t *testing.T) {
	got, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go test ./scenarios -run TestSchemaUpToDate -update", schemaFile)
	}
}

// The schema covers every key the loader accepts (and no other), and its patterns accept what
// the built-ins use.
func TestSchemaMatchesTypes(t *testing.T) {
	raw, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	defs := s["$defs"].(map[string]any)
	props := func(def map[string]any) []string {
		var out []string
		for k := range def["properties"].(map[string]any) {
			out = append(out, k)
		}
		return out
	}
	check := func(name string, def map[string]any, want []string) {
		got := props(def)
		if len(got) != len(want) {
			t.Errorf("%s: schema has %v, types have %v", name, got, want)
		}
		for _, k := range want {
			if _, ok := def["properties"].(map[string]any)[k]; !ok {
				t.Errorf("%s: schema lacks %q", name, k)
			}
			if def["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties must be false", name)
			}
		}
	}
	check("Scenario", s, fieldNames(scenarioType))
	check("Client", defs["Client"].(map[string]any), fieldNames(clientType))
	check("Churn", defs["Churn"].(map[string]any), fieldNames(reflectType[Churn]()))
	dur := regexp.MustCompile(durationPattern)
	for _, ok := range []string{"0", "5ms", "1m30s", "1.5s", "250µs"} {
		if !dur.MatchString(ok) {
			t.Errorf("duration pattern rejects %q", ok)
		}
	}
	for _, bad := range []string{"5", "-5s", "soon", ""} {
		if dur.MatchString(bad) {
			t.Errorf("duration pattern accepts %q", bad)
		}
	}
	rate := regexp.MustCompile(ratePattern)
	for _, ok := range []string{"20/s", "0.5/m", "2 / h", "10"} {
		if !rate.MatchString(ok) {
			t.Errorf("rate pattern rejects %q", ok)
		}
	}
	if !strings.Contains(string(raw), `"default": "100ms"`) {
		t.Error("schema lacks the minQuiet default")
	}
}
