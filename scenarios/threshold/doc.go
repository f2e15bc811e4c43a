// Package threshold is the k6-style threshold expression of a scenario's thresholds section
// ("p(99)<500ms", "count==0", "rate<1%"): its parser, whose errors name the part that is wrong
// and the fix, its evaluation against a metric's aggregated values (Eval) or against a value
// known only to lie in a histogram bucket (EvalBound), and the metric selector of a threshold
// key ("xdslab_fleet_nacks_total{type:cds}"), and Check, which holds a key and its expressions
// against the metrics catalogue (internal/catalog): a metric some run writes, its tags and
// their values, the aggregations and units that fit it.
//
// In the flow, the scenarios loader parses each expression (scenarios.Scenario.Thresholds holds
// them) and reports Check's problems at their file positions; after a run bench/collect judges
// every threshold against the run's summary, bench/tune against the measured figures, and
// bench/report draws them on the latency plots. It knows nothing of the scenario file: the
// client groups and churn kinds a tag may name are handed to Check.
package threshold
