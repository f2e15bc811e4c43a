// Package report writes what a run produced, the last stage of run → collect → report.
//
// Write puts a run's outputs in its directory: summary.json (internal/summary's k6-like shape,
// with encoded HDR histograms, the resolved scenario as config and one record per event in
// results.events), report.html (html.go: self-contained, plots as inline SVG on
// HdrHistogram's "nines" axis, shared with compare's report through plot.go), junit.xml
// (junit.go: one test case per threshold), one .hgrm per trend (hgrm.go: HdrHistogram's
// percentile distribution text) and, for in-process runs, cpu.pprof (go tool pprof -tagfocus
// xdslab_side=harness shows where the harness spent its share). FromSummary (fromsummary.go)
// makes the same outputs of a run known only by its summary, a merged distributed run (xdslab
// merge --out): its plots are drawn from the summary's histograms and event records. text.go
// holds what the console prints about a summary. A harness-saturated run gets a banner atop
// report.html (docs/observability.md).
package report
