package tune

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/xdslab/xdslab/bench/compare"
	"github.com/xdslab/xdslab/bench/report"
	"github.com/xdslab/xdslab/internal/atomicfile"
	"github.com/xdslab/xdslab/internal/summary"
)

// The files WriteFiles writes into its directory.
const (
	CSVFile  = "tune.csv"
	JSONFile = "tune.json"
	TextFile = "tune.txt"
	PNGFile  = "tune.png"
	SVGFile  = "tune.svg"
)

// WriteFiles writes the table (CSV and JSON), the report (text) and the plot (PNG and
// SVG) into dir, creating it. Each file is written whole or not at all. When no point has
// figures to plot, it writes the rest, removes a plot an earlier sweep left there, and returns
// an error that is ErrNothingToPlot.
func WriteFiles(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{
		{CSVFile, func(w io.Writer) error { return WriteCSV(w, r) }},
		{JSONFile, func(w io.Writer) error { return WriteJSON(w, r) }},
		{TextFile, func(w io.Writer) error { return WriteText(w, r) }},
		{PNGFile, func(w io.Writer) error { return Plot(w, r, "png") }},
		{SVGFile, func(w io.Writer) error { return Plot(w, r, "svg") }},
	}
	plotted := hasPlot(r)
	for _, wr := range writers {
		if (wr.name == PNGFile || wr.name == SVGFile) && !plotted {
			if err := os.Remove(filepath.Join(dir, wr.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("tune: %s: %w", wr.name, err)
			}
			continue
		}
		if err := atomicfile.Write(filepath.Join(dir, wr.name), wr.write); err != nil {
			return fmt.Errorf("tune: %s: %w", wr.name, err)
		}
	}
	if !plotted {
		return fmt.Errorf("tune: %s and %s not written: %w", PNGFile, SVGFile, ErrNothingToPlot)
	}
	return nil
}

// hasPlot reports whether r has a point to plot.
func hasPlot(r *Result) bool {
	_, err := buildPlot(r)
	return !errors.Is(err, ErrNothingToPlot)
}

// WriteJSON writes the whole result as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func csvFloat(f compare.Float) string {
	v := float64(f)
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// WriteCSV writes one row per grid point: its settings, the measured medians, the
// estimate and the verdicts. Missing figures are empty cells.
func WriteCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	head := []string{"point"}
	for _, p := range r.Params {
		head = append(head, p.Name)
	}
	head = append(head, "runs", "push_latency_p99_s", "convergence_p99_s", "push_cycles", "events_per_push",
		"cp_cpu_s", "bytes_sent", "debounce_delay_mean_s", "est_push_cycles", "est_events_per_push",
		"est_debounce_delay_mean_s", "est_debounce_delay_p99_s", "meets_thresholds", "pareto", "knee", "recommended", "error")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, pt := range r.Points {
		row := []string{strconv.Itoa(pt.Index)}
		for _, s := range pt.Settings {
			row = append(row, s.Value)
		}
		m := figuresOf(pt)
		e := pt.Estimate
		row = append(row, strconv.Itoa(pt.Runs), csvFloat(m.PushLatencyP99), csvFloat(m.ConvergenceP99),
			csvFloat(m.PushCycles), csvFloat(m.EventsPerPush), csvFloat(m.CPUSeconds), csvFloat(m.BytesSent),
			csvFloat(m.DebounceDelayMean), strconv.Itoa(e.PushCycles), csvFloat(e.EventsPerPush),
			csvFloat(e.DebounceDelayMean), csvFloat(e.DebounceDelayP99),
			strconv.FormatBool(pt.MeetsThresholds), strconv.FormatBool(pt.Pareto), strconv.FormatBool(pt.Knee),
			strconv.FormatBool(pt.Recommended), pt.Error)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func formatFigure(f compare.Float, c summary.ValueType) string {
	if math.IsNaN(float64(f)) {
		return "—"
	}
	return compare.FormatValue(float64(f), c)
}

// WriteText writes the human report: the table, the frontier, the knee, the
// recommendation and how far the estimate was from the real run there.
func WriteText(w io.Writer, r *Result) error {
	mode := fmt.Sprintf("%d repeat(s) per point", r.Repeats)
	if r.Interleaved {
		mode += " (interleaved: every point's run 1, then every point's run 2, …)"
	}
	if r.EstimateOnly {
		mode = "estimate only (no runs)"
	}
	fmt.Fprintf(w, "tune %s: %d points, %s, cost = %s\n", r.Scenario, len(r.Points), mode, r.Cost)
	if r.Interrupted != "" {
		fmt.Fprintf(w, "INTERRUPTED: %s; the figures, frontier and recommendation cover only the runs that finished\n", r.Interrupted)
	}
	if len(r.Thresholds) > 0 {
		fmt.Fprintf(w, "latency thresholds: %s\n", strings.Join(r.Thresholds, "; "))
	} else {
		fmt.Fprintln(w, "latency thresholds: none in the scenario")
	}
	fmt.Fprintln(w)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tsettings\tp99 push\tconv p99\tpushes\tev/push\tcp cpu\tbytes\test pushes\test delay p99\t")
	for _, pt := range r.Points {
		var flags []string
		if pt.Recommended {
			flags = append(flags, "RECOMMENDED")
		}
		if pt.Knee {
			flags = append(flags, "knee")
		}
		if pt.Pareto {
			flags = append(flags, "pareto")
		}
		if pt.Error == "" && !pt.MeetsThresholds {
			flags = append(flags, "fails "+strings.Join(pt.FailedThresholds, ", "))
		}
		if pt.Error != "" {
			flags = append(flags, "error: "+pt.Error)
		}
		m := figuresOf(pt)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", pt.Index, pt.Label,
			formatFigure(m.PushLatencyP99, summary.Time), formatFigure(m.ConvergenceP99, summary.Time),
			formatFigure(m.PushCycles, summary.Default), formatFigure(m.EventsPerPush, summary.Default),
			formatFigure(m.CPUSeconds, summary.Time), formatFigure(m.BytesSent, summary.Data),
			pt.Estimate.PushCycles, formatFigure(pt.Estimate.DebounceDelayP99, summary.Time), strings.Join(flags, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := w.Write(report.TrimTrailingSpace(table.Bytes())); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var front []string
	for _, i := range r.Frontier {
		front = append(front, r.Points[i].Label)
	}
	fmt.Fprintf(w, "Pareto frontier (by cost): %s\n", strings.Join(front, " → "))
	if r.Knee >= 0 {
		fmt.Fprintf(w, "knee: %s\n", r.Points[r.Knee].Label)
	}
	if r.Recommended >= 0 {
		fmt.Fprintf(w, "recommendation: %s — %s\n", r.Points[r.Recommended].Label, r.Why)
	} else {
		fmt.Fprintf(w, "recommendation: none — %s\n", r.Why)
	}
	if sr := r.Search; sr != nil {
		where := fmt.Sprintf("point %d", sr.Point)
		if sr.OnGrid {
			where += ", a grid point: not run again"
		}
		fmt.Fprintf(w, "search (gonum/optimize Nelder-Mead over the estimate, %d evaluations): minQuiet=%s maxDelay=%s, predicted %d push cycles, debounce delay p99 %s + run overhead %s (%s)\n",
			sr.Evaluations, sr.MinQuiet, sr.MaxDelay, sr.Predicted.PushCycles, formatFigure(sr.Predicted.DebounceDelayP99, summary.Time),
			formatFigure(sr.Overhead, summary.Time), where)
	} else if r.SearchNote != "" {
		fmt.Fprintf(w, "search: %s\n", r.SearchNote)
	}
	for _, d := range r.Duplicates {
		fmt.Fprintf(w, "not run: %s\n", d)
	}
	if c := r.Check; c != nil {
		fmt.Fprintf(w, "estimate vs real run at the recommended point: push cycles %s predicted, %s measured (%s); mean debounce delay %s predicted, %s measured (%s)\n",
			formatFigure(c.PushCyclesPredicted, summary.Default), formatFigure(c.PushCyclesMeasured, summary.Default), relText(c.PushCyclesError),
			formatFigure(c.DebounceDelayPredicted, summary.Time), formatFigure(c.DebounceDelayMeasured, summary.Time), relText(c.DebounceDelayError))
	}
	if c := r.Policies; c != nil {
		return writePolicies(w, r, c)
	}
	return nil
}

// writePolicies writes the adaptive-vs-fixed comparison: the two points, a row per
// figure with both medians, the U test's p and the verdict, and the overall verdict.
func writePolicies(w io.Writer, r *Result, c *PolicyComparison) error {
	fmt.Fprintf(w, "\nadaptive vs fixed debounce: adaptive %s (point %d) against fixed %s (point %d)\n",
		r.Points[c.Adaptive].Label, c.Adaptive, r.Points[c.Fixed].Label, c.Fixed)
	fmt.Fprintf(w, "  chosen as: %s\n", c.How)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  figure\tfixed\tadaptive\truns\tp (U test)\tadaptive is\t")
	for _, f := range c.Figures {
		vt := summary.Time
		if f.Figure == "push cycles" {
			vt = summary.Default
		}
		p := "—"
		if !math.IsNaN(float64(f.P)) {
			p = strconv.FormatFloat(float64(f.P), 'f', 3, 64)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d+%d\t%s\t%s\n", f.Figure, formatFigure(f.Fixed, vt), formatFigure(f.Adaptive, vt),
			f.NFixed, f.NAdapt, p, f.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := w.Write(report.TrimTrailingSpace(table.Bytes())); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "verdict: %s — %s\n", strings.ToUpper(string(c.Verdict)), c.Why)
	return err
}

func relText(f compare.Float) string {
	if math.IsNaN(float64(f)) {
		return "not comparable"
	}
	return fmt.Sprintf("%+.1f%%", 100*float64(f))
}

// figuresOf is the point's measured figures, all NaN when it has none.
func figuresOf(pt Point) PointFigures {
	if pt.Measured != nil {
		return *pt.Measured
	}
	nan := compare.Float(math.NaN())
	return PointFigures{PushLatencyP99: nan, ConvergenceP99: nan, PushCycles: nan, EventsPerPush: nan,
		CPUSeconds: nan, BytesSent: nan, DebounceDelayMean: nan}
}
