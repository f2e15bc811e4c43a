package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/xdslab/xdslab/internal/summary"
)

// The files WriteTuneFiles writes into its directory.
const (
	TuneCSVFile  = "tune.csv"
	TuneJSONFile = "tune.json"
	TuneTextFile = "tune.txt"
	TunePNGFile  = "tune.png"
	TuneSVGFile  = "tune.svg"
)

// WriteTuneFiles writes the table (CSV and JSON), the report (text) and the plot (PNG and
// SVG) into dir, creating it. Each file is written whole or not at all.
func WriteTuneFiles(dir string, r *TuneResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{
		{TuneCSVFile, func(w io.Writer) error { return WriteTuneCSV(w, r) }},
		{TuneJSONFile, func(w io.Writer) error { return WriteTuneJSON(w, r) }},
		{TuneTextFile, func(w io.Writer) error { return WriteTuneText(w, r) }},
		{TunePNGFile, func(w io.Writer) error { return TunePlot(w, r, "png") }},
		{TuneSVGFile, func(w io.Writer) error { return TunePlot(w, r, "svg") }},
	}
	for _, wr := range writers {
		var buf bytes.Buffer
		if err := wr.write(&buf); err != nil {
			return fmt.Errorf("tune: %s: %w", wr.name, err)
		}
		path := filepath.Join(dir, wr.name)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("tune: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("tune: %w", err)
		}
	}
	return nil
}

// WriteTuneJSON writes the whole result as indented JSON.
func WriteTuneJSON(w io.Writer, r *TuneResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func tuneCSVFloat(f Float) string {
	v := float64(f)
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// WriteTuneCSV writes one row per grid point: its settings, the measured medians, the
// estimate and the verdicts. Missing figures are empty cells.
func WriteTuneCSV(w io.Writer, r *TuneResult) error {
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
		m := tuneFiguresOf(pt)
		e := pt.Estimate
		row = append(row, strconv.Itoa(pt.Runs), tuneCSVFloat(m.PushLatencyP99), tuneCSVFloat(m.ConvergenceP99),
			tuneCSVFloat(m.PushCycles), tuneCSVFloat(m.EventsPerPush), tuneCSVFloat(m.CPUSeconds), tuneCSVFloat(m.BytesSent),
			tuneCSVFloat(m.DebounceDelayMean), strconv.Itoa(e.PushCycles), tuneCSVFloat(e.EventsPerPush),
			tuneCSVFloat(e.DebounceDelayMean), tuneCSVFloat(e.DebounceDelayP99),
			strconv.FormatBool(pt.MeetsThresholds), strconv.FormatBool(pt.Pareto), strconv.FormatBool(pt.Knee),
			strconv.FormatBool(pt.Recommended), pt.Error)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func tuneFmt(f Float, c summary.ValueType) string {
	if math.IsNaN(float64(f)) {
		return "—"
	}
	return FormatCompareValue(float64(f), c)
}

// WriteTuneText writes the human report: the table, the frontier, the knee, the
// recommendation and how far the estimate was from the real run there.
func WriteTuneText(w io.Writer, r *TuneResult) error {
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
		m := tuneFiguresOf(pt)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", pt.Index, pt.Label,
			tuneFmt(m.PushLatencyP99, summary.Time), tuneFmt(m.ConvergenceP99, summary.Time),
			tuneFmt(m.PushCycles, summary.Default), tuneFmt(m.EventsPerPush, summary.Default),
			tuneFmt(m.CPUSeconds, summary.Time), tuneFmt(m.BytesSent, summary.Data),
			pt.Estimate.PushCycles, tuneFmt(pt.Estimate.DebounceDelayP99, summary.Time), strings.Join(flags, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := w.Write(trimTrailingSpace(table.Bytes())); err != nil {
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
		fmt.Fprintf(w, "search (gonum/optimize Nelder-Mead over the estimate, %d evaluations): minQuiet=%s maxDelay=%s, predicted %d push cycles, debounce delay p99 %s + run overhead %s (point %d)\n",
			sr.Evaluations, sr.MinQuiet, sr.MaxDelay, sr.Predicted.PushCycles, tuneFmt(sr.Predicted.DebounceDelayP99, summary.Time),
			tuneFmt(sr.Overhead, summary.Time), sr.Point)
	} else if r.SearchNote != "" {
		fmt.Fprintf(w, "search: %s\n", r.SearchNote)
	}
	for _, d := range r.Duplicates {
		fmt.Fprintf(w, "not run: %s\n", d)
	}
	if c := r.Check; c != nil {
		fmt.Fprintf(w, "estimate vs real run at the recommended point: push cycles %s predicted, %s measured (%s); mean debounce delay %s predicted, %s measured (%s)\n",
			tuneFmt(c.PushCyclesPredicted, summary.Default), tuneFmt(c.PushCyclesMeasured, summary.Default), tuneRelText(c.PushCyclesError),
			tuneFmt(c.DebounceDelayPredicted, summary.Time), tuneFmt(c.DebounceDelayMeasured, summary.Time), tuneRelText(c.DebounceDelayError))
	}
	if c := r.Policies; c != nil {
		return writeTunePolicies(w, r, c)
	}
	return nil
}

// writeTunePolicies writes the adaptive-vs-fixed comparison: the two points, a row per
// figure with both medians, the U test's p and the verdict, and the overall verdict.
func writeTunePolicies(w io.Writer, r *TuneResult, c *PolicyComparison) error {
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
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d+%d\t%s\t%s\n", f.Figure, tuneFmt(f.Fixed, vt), tuneFmt(f.Adaptive, vt),
			f.NFixed, f.NAdapt, p, f.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := w.Write(trimTrailingSpace(table.Bytes())); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "verdict: %s — %s\n", strings.ToUpper(string(c.Verdict)), c.Why)
	return err
}

func tuneRelText(f Float) string {
	if math.IsNaN(float64(f)) {
		return "not comparable"
	}
	return fmt.Sprintf("%+.1f%%", 100*float64(f))
}

// tuneFiguresOf is the point's measured figures, all NaN when it has none.
func tuneFiguresOf(pt TunePoint) PointFigures {
	if pt.Measured != nil {
		return *pt.Measured
	}
	nan := Float(math.NaN())
	return PointFigures{PushLatencyP99: nan, ConvergenceP99: nan, PushCycles: nan, EventsPerPush: nan,
		CPUSeconds: nan, BytesSent: nan, DebounceDelayMean: nan}
}
