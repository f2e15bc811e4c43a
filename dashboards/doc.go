// Package dashboards holds xdslab's Grafana dashboards and Prometheus rules, written as Go.
//
// Two dashboards are declared as data (Spec: rows of panels, each panel a list of PromQL
// queries with a unit and a description) and rendered to Grafana JSON with the Grafana
// Foundation SDK:
//
//   - ControlPlane watches a control plane through Istio's metric names (pilot_*, plus the
//     standard process_* and go_* series), so it works unchanged on istiod; the series Istio
//     lacks (xdslab_cp_*, xds_cache_reads with its result label) sit in a separate row that
//     stays empty on istiod.
//   - Lab watches a run: push latency and convergence measured at the fake Envoys, simulator
//     events, fleet responses, NACKs and no-op pushes, missed events and the harness's own cost.
//
// The rendered JSON is committed under grafana/ and a test fails when it is stale (regenerate
// with `go test ./dashboards -update`). The recording and alerting rules live in rules/ as
// Prometheus YAML with their promtool unit tests beside them; they are embedded so that
// `xdslab dashboards --out DIR` can write dashboards, rules, a Grafana provisioning tree and a
// Prometheus scrape config in one go (Write).
//
// Because every query is declared here, the tests can check what a hand-edited dashboard
// cannot: that each panel has a unit and a description, that each metric it names is one the
// code exports, and — against a real Prometheus server scraping a running control plane and
// fleet — that each query returns data.
package dashboards
