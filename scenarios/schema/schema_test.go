package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/scenarios"
)

// schemaFile is the checked-in schema; it stays beside the scenario library, where the
// built-ins' editor directives and the schema's $id point.
const schemaFile = "../scenario.schema.json"

var update = flag.Bool("update", false, "rewrite the golden files (scenario.schema.json, docs/scenarios.md tables)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fieldNames lists the keys the loader reads of struct type t, in declaration order.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name := scenarios.FieldKey(t.Field(i)); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// The checked-in schema is what JSON generates; regenerate with
// go test ./scenarios/schema -run TestSchemaUpToDate -update
func TestSchemaUpToDate(t *testing.T) {
	got, err := JSON()
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
		t.Fatalf("%s is stale: run go test ./scenarios/schema -run TestSchemaUpToDate -update", schemaFile)
	}
}

// The schema covers every key the loader accepts (and no other), and its patterns accept what
// the built-ins use.
func TestSchemaMatchesTypes(t *testing.T) {
	raw, err := JSON()
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
	check("Churn", defs["Churn"].(map[string]any), fieldNames(reflect.TypeFor[scenarios.Churn]()))
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
