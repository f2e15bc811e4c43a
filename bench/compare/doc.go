// Package compare gates releases: it compares the summaries of two configurations (one run or
// repeated runs a side) metric by metric and stat by stat, and says which changes are
// regressions. It sits on top of the summary format, beside tune and merge.
//
// It follows benchstat (stats.go): a side's centre is its median with a distribution-free
// confidence interval, and two sides differ when the Mann-Whitney U test rejects "same
// distribution" at alpha. With too few runs for that test, a trend is tested on its HDR
// histograms, the quantile's own intervals required to be disjoint. Figures deterministic
// under one seed are compared exactly. A quantile known only as a bucket bound (a trend read
// from a control plane's Prometheus histogram) is never treated as a point (bounds.go): a
// change is claimed only when the buckets that hold the sides' confidence intervals do not
// overlap. A metric's direction comes from its name (metrics.go), thresholds per metric and
// stat from the flags (threshold.go); the report is written as text, markdown, JSON, JUnit or
// HTML (format.go, html.go).
package compare
