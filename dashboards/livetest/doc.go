// Package livetest checks the dashboards and rules against a real Prometheus server (Debian's
// prometheus binary) scraping a real run: run.Run with the in-process control plane and a
// small fleet, its live /metrics scraped every second. Every query of every panel, every
// dashboard variable and every recording rule must return data, except the queries listed in
// exclusions with the reason they cannot in a short run.
//
// It is a package of its own so that the dashboards package's fast tests do not depend on the
// runner, and so that `go test ./dashboards/livetest` names exactly what it costs: about 40 s.
package livetest
