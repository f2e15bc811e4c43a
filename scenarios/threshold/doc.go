// Package threshold is the k6-style threshold expression of a scenario's thresholds section
// ("p(99)<500ms", "count==0", "rate<1%"): its parser, whose errors name the part that is wrong
// and the fix, its evaluation against a metric's aggregated values (Eval) or against a value
// known only to lie in a histogram bucket (EvalBound), and the metric selector of a threshold
// key ("xdslab_fleet_nacks_total{type:cds}").
//
// In the flow, the scenarios loader parses each expression (scenarios.Scenario.Thresholds holds
// them) and checks each key against the metrics catalogue; after a run bench/collect judges
// every threshold against the run's summary, bench/tune against the measured figures, and
// bench/report draws them on the latency plots. The package is a leaf: it knows neither the
// scenario file nor the metrics.
package threshold
