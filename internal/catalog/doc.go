// Package catalog is the single list of the metrics a run writes into summary.json (and
// evaluates thresholds on): each metric's name, type, unit, tags and the values those tags
// take, and which figures lead the headline of a run's report.
//
// `xdslab validate` checks a scenario's thresholds against it (an unknown name, a tag the
// metric does not carry or a value it never takes, an aggregation the metric's type lacks),
// so a threshold that could never be evaluated fails before the run rather than after it. The
// code that emits the metrics is tested against it: bench/run's tests check every entry of a
// real run's summary with Check, so the catalogue cannot drift from what runs write.
package catalog
