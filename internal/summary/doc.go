// Package summary is the machine-readable result of a run: the k6-like summary.json that the fleet
// (xdslab fleet --summary), the runner (xdslab run) and compare/gate read and write.
//
// The shape follows k6's summary vocabulary so k6 users can read it:
//
//	{
//	  "version": "1",
//	  "metadata": {"tool": "xdslab", "command": "fleet", "started": ..., "ended": ..., "durationSeconds": ...},
//	  "config": { ...the resolved scenario or command configuration... },
//	  "results": {
//	    "passed": true,
//	    "metrics": [{"name", "type", "contains", "values", "bounds"?, "buckets"?, "tags"?, "histogram"?}],
//	    "thresholds": [{"metric", "tags"?, "expression", "passed", "value"?, "bound"?, "inconclusive"?, "reason"?}]
//	  }
//	}
//
// Metric types are counter, gauge, trend and rate. Values carry:
//
//	counter: count, rate (count per second of the run)
//	gauge:   value, min, max
//	trend:   min, med, avg, max, p(50), p(90), p(99), p(99.9)
//	rate:    rate (passes / total), passes, fails
//
// Unlike k6, values are in the metric's base unit — seconds for "contains": "time", bytes for
// "data" — matching the Prometheus names (xdslab_*_seconds, *_bytes).
//
// Per-dimension metrics (per xDS type, per event kind) are separate entries with the same name
// and a tags object, e.g. {"name": "xdslab_fleet_responses_total", "tags": {"type": "CDS"}};
// the entry without tags is the total over every dimension. Metrics are written sorted by name,
// then by tags, so files diff cleanly.
//
// Every trend may carry its full distribution: "histogram": {"scale": 1e-6, "hdr": "HISTF..."}
// is the base64 of HdrHistogram's V2 compressed encoding; a recorded value v stands for
// v × scale in the base unit (trends of durations record microseconds, scale 1e-6). compare
// decodes it with Histogram.Decode to test distributions rather than points.
//
// A trend read from a Prometheus bucket histogram (a control plane's pilot_debounce_time, scraped
// by xdslab run; NewBucketTrend) claims no precision its buckets lack. Its "values" hold only
// what the buckets give exactly, "avg" (sum ÷ count); every other trend key (min, med, p(50),
// p(90), p(99), p(99.9), max) is in "bounds" as the bucket that holds it, by nearest rank (the
// ⌈q·count⌉-th smallest observation):
//
//	"values":  {"avg": 0.1007},
//	"bounds":  {"p(99)": {"gt": 0.1, "le": 1}, "min": {"gt": 0.1, "le": 1}, ...},
//	"buckets": {"source": "pilot_debounce_time", "count": 18, "sum": 1.8126,
//	            "le": [0.01, 0.1, 1, 3, 5, 10, 20, 30], "cumulative": [0, 0, 18, 18, 18, 18, 18, 18]}
//
// A bound {"gt": a, "le": b} says a < value ≤ b; without "gt" it is the first bucket (value ≤ b),
// without "le" the +Inf bucket (value > a). "buckets" lists the finite upper bounds and the
// cumulative counts at each; the +Inf bucket is implicit (count). A key is in values or in
// bounds, never both, and Validate checks that they are what the buckets give. A histogram with
// no observations has empty values and no bounds: no data, not 0. A threshold evaluated on a
// bound records it ("bound", no "value"): it passes only when the bound proves the expression,
// fails when it disproves it, and is otherwise "inconclusive": true, which fails; "reason" says
// what the verdict rests on. Summaries without these fields (every earlier one) stay valid,
// every value a point; the version stays "1".
//
// results.events [{id, kind, t0, reached, observed, alreadyHeld, superseded, missed,
// unresolved, received, earlyReceives, convergenceSeconds, censored, acked, shardsMissing}]
// holds one record per simulator event (a run, in-process or against --target, and a fleet
// shard write it; a merge combines them): convergence is a maximum over clients and cannot be
// merged from per-shard histograms, and an event's own t0 and convergence are what a reader
// needs to line a latency up with what happened.
//
// Distributed runs (docs/distributed.md) add optional fields, absent from a single run's
// summary: metadata.segment {index, count} (a fleet shard), metadata.startAt (the shared
// start), metadata.clock (the offset from the simulator's clock), metadata.probes (the probe
// stream), metadata.phases [{name, start, end}] and metadata.shards (a merged summary's
// inputs). Summaries without them, or without events, stay valid; the version stays "1".
package summary
