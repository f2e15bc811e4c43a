package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xdslab/xdslab/bench/compare"
)

// compareFlags are the flags of 'xdslab compare'.
type compareFlags struct {
	threshold        string
	metricThresholds []string
	worse            []string
	format           string
	output           string
	alpha            float64
	gate             string
	allowInconc      bool
}

func newCompareCmd() *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare BASE NEW [--threshold 5%] [--metric-threshold NAME[:STAT]=PCT] [--format text|markdown|json|junit|html]",
		Short: "Compare two runs (or two sets of repeated runs) and fail on a significant regression",
		Long: `compare reads BASE and NEW — each a summary.json, or a directory of repeated runs as written
by 'xdslab run --repeat K --out DIR' (DIR/run-1/summary.json …) — and compares every metric
they share, stat by stat (trends: avg, p(50), p(90), p(99), p(99.9); counters: count; gauges:
value; rates: rate), in a benchstat-like table:

  - With enough repeated runs on both sides (4 a side at alpha 0.05), each side's figure is
    the median over runs with a 95% interval, and a Mann-Whitney U test over the runs says
    whether the change is significant.
  - With fewer runs (one, or 2-3 a side, with which the U test cannot reach p < 0.05 at all),
    a trend is tested on values drawn from the HDR histograms the summaries carry, merged
    over each side's runs (a percentile must also move beyond its own interval, or, when too
    few events bound it, with the whole distribution); other metrics cannot be tested and are
    INCONCLUSIVE.
  - Figures that are deterministic under a fixed seed (push cycles, events per push, NACKs,
    bytes) are compared exactly when both sides record the same seed.
  - ~ means no significant change.

A row is a regression when its change is significant, in the metric's worse direction
(latency up, cache hit ratio down, push cycles up, …) and larger than its threshold
(--threshold, or --metric-threshold for one metric or stat). --worse sets the direction of a
metric compare cannot classify from its name. --gate REGEXP limits the metrics that can fail
the comparison (the others are still shown): a CI gate usually names the few figures it is
about, since every gated row is one more chance of a false alarm.

A gated row whose test could not have detected a change of any size (too few runs or events)
is INCONCLUSIVE, never "~": the comparison then fails (exit 1) unless --allow-inconclusive.
One run per side cannot show how much a figure varies from run to run (machine load, timer
jitter): gate on repeated runs (K >= 5 per side) when you can.

--gate, --metric-threshold and --worse must name what base measured: a gate that selects no
metric, a threshold on an unknown metric, tag or stat (compare never computes p(95) or max), a
direction of an unknown metric would otherwise be ignored, and are refused (exit 2) with the
names there are. So is a base that measured nothing, and a bare threshold above 1 (5 would be
500%: write 5% or 0.05).

Exit codes: 0 no regression, 1 a significant regression beyond its threshold or an
inconclusive gated row, 2 bad usage or input.`,
		Example: `  xdslab run quickstart --repeat 5 --out out/base
  xdslab run quickstart.yaml --repeat 5 --out out/new
  xdslab compare out/base out/new
  xdslab compare base.json new.json --threshold 10% --metric-threshold xdslab_push_latency_seconds:p(99)=20%
  xdslab compare out/base out/new --format junit --output compare.xml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr(fmt.Errorf("compare: want BASE and NEW (each a summary.json or a run directory), got %d argument(s)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCompare(cmd, args[0], args[1], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.threshold, "threshold", "5%", "smallest significant change for the worse that fails the comparison: 5% or 0.05")
	fl.StringArrayVar(&f.metricThresholds, "metric-threshold", nil, "per-metric threshold NAME[{tag:value}][:STAT]=PCT, e.g. xdslab_push_latency_seconds:p(99)=10% (repeatable)")
	fl.StringArrayVar(&f.worse, "worse", nil, "direction of a metric: NAME=up (higher is worse), NAME=down or NAME=none (repeatable)")
	fl.StringVar(&f.format, "format", "text", "output format: "+strings.Join(compare.Formats, ", "))
	fl.StringVar(&f.output, "output", "", "write the report to this file instead of stdout")
	fl.Float64Var(&f.alpha, "alpha", 0.05, "significance level of the U test")
	fl.StringVar(&f.gate, "gate", "", "only metrics whose name matches this regular expression can fail the comparison (default: all)")
	fl.BoolVar(&f.allowInconc, "allow-inconclusive", false, "exit 0 when gated rows could not detect a change (too few runs or events) and none regressed")
	return cmd
}

// compareOptions turns the flags into compare.Options, or a usage error naming the flag.
func compareOptions(f compareFlags) (compare.Options, error) {
	o := compare.DefaultOptions()
	th, err := compare.ParsePercent(f.threshold)
	if err != nil {
		return o, fmt.Errorf("compare: --%w", err)
	}
	o.Threshold = th
	for _, s := range f.metricThresholds {
		mt, err := compare.ParseMetricThreshold(s)
		if err != nil {
			return o, fmt.Errorf("compare: %w", err)
		}
		o.MetricThresholds = append(o.MetricThresholds, mt)
	}
	for _, s := range f.worse {
		d, err := compare.ParseDirectionOverride(s)
		if err != nil {
			return o, fmt.Errorf("compare: %w", err)
		}
		o.Directions = append(o.Directions, d)
	}
	if !(f.alpha > 0 && f.alpha < 1) {
		return o, fmt.Errorf("compare: --alpha %g must be between 0 and 1, e.g. 0.05", f.alpha)
	}
	o.Alpha = f.alpha
	o.AllowInconclusive = f.allowInconc
	if f.gate != "" {
		re, err := regexp.Compile(f.gate)
		if err != nil {
			return o, fmt.Errorf("compare: --gate %q: %v", f.gate, err)
		}
		o.Gate = re
	}
	if !slices.Contains(compare.Formats, f.format) {
		return o, fmt.Errorf("compare: --format %q: use %s", f.format, strings.Join(compare.Formats, ", "))
	}
	return o, nil
}

func runCompare(cmd *cobra.Command, basePath, newPath string, f compareFlags) error {
	opts, err := compareOptions(f)
	if err != nil {
		return usageErr(err)
	}
	base, err := compare.LoadSide(basePath)
	if err != nil {
		return usageErr(err)
	}
	nw, err := compare.LoadSide(newPath)
	if err != nil {
		return usageErr(err)
	}
	rep, err := compare.Compare(base, nw, opts)
	if err != nil {
		return usageErr(err)
	}
	var buf bytes.Buffer
	if err := compare.WriteReport(&buf, rep, f.format); err != nil {
		return usageErr(err)
	}
	if f.output != "" {
		if err := os.WriteFile(f.output, buf.Bytes(), 0o644); err != nil {
			return usageErr(fmt.Errorf("compare: --output: %w", err))
		}
	} else if _, err := cmd.OutOrStdout().Write(buf.Bytes()); err != nil {
		return err
	}
	if rep.Regressed() {
		var names []string
		for _, r := range rep.Rows {
			if r.Regression {
				names = append(names, r.Name())
			}
		}
		return withCode(exitRegression, errors.New("compare: "+fmt.Sprint(rep.Regressions)+" regression(s): "+strings.Join(names, "; ")))
	}
	if len(rep.Missing) > 0 {
		return withCode(exitRegression, fmt.Errorf("compare: %d gated metric(s) measured in base were not measured in new: %s", len(rep.Missing), strings.Join(rep.Missing, ", ")))
	}
	if rep.Failed() {
		return withCode(exitRegression, fmt.Errorf("compare: inconclusive: %d gated row(s) could not have detected a regression with these runs (see the table); repeat the runs, or pass --allow-inconclusive", rep.Inconclusive))
	}
	return nil
}
