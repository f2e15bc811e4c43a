// Package scenarios defines the scenario file: the schema (Go types), a strict YAML loader that
// names file:line:col and the fix for every mistake, defaults, validation (k6-style thresholds
// included, checked against the metrics catalogue), and the built-in scenario library embedded
// in the binary.
//
// In the flow, scenarios sits first: `xdslab run|sim|validate|tune` resolve a scenario by
// built-in name or file path (Resolve), and hand the fully resolved *Scenario to the runner,
// which maps its sections onto the simulator (topology, churn), the fleet (clients) and the
// control plane (controlPlane). The resolved scenario is also what summary.json embeds as its
// config, so a run is reproducible from its own report.
//
// Loading is two steps over a copy of Defaults(): the YAML is parsed into yaml.v3 nodes (which
// carry line and column), a reflective walk decodes those nodes onto the defaults (an absent key
// keeps its default; an unknown key, a wrong type or a bad unit is an *Error with position and a
// "did you mean"), then Validate checks values and cross-field rules, reporting positions through
// the paths the walk recorded. Every error is collected, so one run of `xdslab validate` lists
// them all.
//
// Parameter sweeps vary a loaded scenario with Clone and Set ("controlPlane.debounce.minQuiet",
// "50ms"), which decode the value exactly as the loader would and re-validate.
//
// Three subpackages keep apart what does not need the scenario file's structure, and what
// only describes it:
//
//   - scenarios/units: the values written with a unit (Duration, Rate, TimeDist) and their
//     parsers, which the decoder calls;
//   - scenarios/threshold: the k6 threshold expression (parse, evaluate), the metric selector
//     of a threshold key and its check against the metrics catalogue; bench/collect and
//     bench/tune judge a run with it;
//   - scenarios/schema: the JSON Schema (scenario.schema.json) and docs/scenarios.md's field
//     tables, generated from the struct tags (`doc`, `yaml`) and Defaults(); its tests fail when
//     either is stale (regenerate with
//     `go test ./scenarios/schema -run 'TestSchemaUpToDate|TestDocsUpToDate' -update`).
//
// scenarios imports units and threshold, which know nothing of it; schema imports scenarios.
package scenarios
