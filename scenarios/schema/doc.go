// Package schema generates the two descriptions of the scenario file that are derived from its
// Go types: the JSON Schema that editors complete and check scenario files with
// (scenarios/scenario.schema.json, printed by `xdslab validate --schema`) and the field tables
// of docs/scenarios.md. Both read the struct tags of scenarios' types (yaml through
// scenarios.FieldKey, doc, enum, range, pattern, kinds, def) and the defaults
// (scenarios.Defaults, scenarios.DefaultClient), so neither can drift from the loader.
//
// It sits beside the pipeline, not in it: nothing a run does reads it. Its tests fail when the
// checked-in schema or the docs tables are stale; regenerate both with
// `go test ./scenarios/schema -run 'TestSchemaUpToDate|TestDocsUpToDate' -update`.
package schema
