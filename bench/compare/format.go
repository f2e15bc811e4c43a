package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/xdslab/xdslab/bench/report"
	"github.com/xdslab/xdslab/internal/junit"
	"github.com/xdslab/xdslab/internal/summary"
)

// Formats of WriteReport.
var Formats = []string{"text", "markdown", "json", "junit", "html"}

// WriteReport writes r in format: text (a benchstat-like table), markdown (a table for pull
// request comments), json (the Report), junit (one testcase per gated row) or html (the verdict,
// both sides' push latency and convergence overlaid on a log "nines" axis, and the table).
func WriteReport(w io.Writer, r *Report, format string) error {
	switch format {
	case "text", "":
		return writeText(w, r)
	case "markdown", "md":
		return writeMarkdown(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "junit":
		return writeJUnit(w, r)
	case "html":
		if r.base == nil || r.nw == nil {
			return fmt.Errorf("compare: the html format needs the sides compared (a report from Compare)")
		}
		return WriteHTML(w, r, r.base, r.nw)
	}
	return fmt.Errorf("unknown format %q: use %s", format, strings.Join(Formats, ", "))
}

// FormatValue renders v in the unit of contains: seconds as ns/µs/ms/s, bytes as B/KiB/…,
// plain numbers with 4 significant digits.
func FormatValue(v float64, contains summary.ValueType) string {
	if math.IsNaN(v) {
		return "—"
	}
	if math.IsInf(v, 0) {
		if v > 0 {
			return "+∞"
		}
		return "-∞"
	}
	a := math.Abs(v)
	switch contains {
	case summary.Time:
		switch {
		case a == 0:
			return "0s"
		case a < 1e-6:
			return fmt.Sprintf("%.4gns", v*1e9)
		case a < 1e-3:
			return fmt.Sprintf("%.4gµs", v*1e6)
		case a < 1:
			return fmt.Sprintf("%.4gms", v*1e3)
		}
		return fmt.Sprintf("%.4gs", v)
	case summary.Data:
		units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
		i := 0
		for a >= 1024 && i < len(units)-1 {
			a /= 1024
			v /= 1024
			i++
		}
		return fmt.Sprintf("%.4g%s", v, units[i])
	}
	return fmt.Sprintf("%.4g", v)
}

// estimateText is "centre ± spread%" (benchstat's form), "centre" for a point.
func estimateText(e Estimate, contains summary.ValueType, method string) string {
	c, lo, hi := float64(e.Center), float64(e.Lo), float64(e.Hi)
	s := FormatValue(c, contains)
	switch method {
	case MethodNone, MethodExact:
		return s
	case MethodBounds:
		return boundText(e, contains)
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		return s + " ± ∞"
	}
	if c == 0 {
		if lo == 0 && hi == 0 {
			return s + " ± 0%"
		}
		return s + " ± ?"
	}
	spread := math.Max(hi/c-1, 1-lo/c)
	return fmt.Sprintf("%s ± %.0f%%", s, 100*math.Abs(spread))
}

// testText is "(p=0.002 n=5)", "(exact)", "(n=1)".
func testText(r Row) string {
	switch r.Method {
	case MethodExact:
		return "(exact)"
	case MethodNone:
		return fmt.Sprintf("(n=%d+%d, no test)", r.Base.N, r.New.N)
	case MethodBounds:
		if !r.Significant && strings.Contains(r.Note, "intervals overlap") {
			return fmt.Sprintf("(bucket bounds, n=%d+%d, CIs overlap)", r.Base.N, r.New.N)
		}
		return fmt.Sprintf("(bucket bounds, n=%d+%d)", r.Base.N, r.New.N)
	}
	n := fmt.Sprintf("n=%d", r.Base.N)
	if r.Base.N != r.New.N {
		n = fmt.Sprintf("n=%d+%d", r.Base.N, r.New.N)
	}
	if r.byShift || r.Method == MethodHistogram && r.Significant && strings.Contains(r.Note, "judged by the shift") {
		return fmt.Sprintf("(p=%.3f %s, distribution shift)", float64(r.P), n)
	}
	if r.Inconclusive && r.Method == MethodHistogram {
		return fmt.Sprintf("(p=%.3f %s, CI unbounded)", float64(r.P), n)
	}
	if r.Method == MethodHistogram && float64(r.P) < r.alphaOr() && !r.Significant {
		// The distributions differ, but not at this percentile.
		return fmt.Sprintf("(p=%.3f %s, CIs overlap)", float64(r.P), n)
	}
	return fmt.Sprintf("(p=%.3f %s)", float64(r.P), n)
}

func verdictText(r Row) string {
	switch {
	case r.Regression:
		return fmt.Sprintf("REGRESSION (>%s)", pctText(r.Threshold))
	case r.Note == "regressed, but not gated (--gate)":
		return "worse (not gated)"
	case r.Improvement:
		return "improved"
	case r.Inconclusive:
		return "INCONCLUSIVE"
	}
	return ""
}

func pctText(f float64) string { return fmt.Sprintf("%g%%", math.Round(f*1e4)/1e2) }

func sideText(s SideInfo) string {
	t := fmt.Sprintf("%s (%d run", s.Path, s.Runs)
	if s.Runs != 1 {
		t += "s"
	}
	if s.Seed != nil {
		t += fmt.Sprintf(", seed %d", *s.Seed)
	}
	return t + ")"
}

func writeText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "base: %s\nnew:  %s\n", sideText(r.Base), sideText(r.New))
	fmt.Fprintf(w, "medians with %g%% intervals; ~ = no significant change (U test, alpha %g); threshold %s\n\n",
		100*r.Confidence, r.Alpha, pctText(r.Threshold))
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tbase\tnew\tvs base\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Name(),
			estimateText(row.Base, row.Contains, row.Method), estimateText(row.New, row.Contains, row.Method),
			row.FormatDelta(), testText(row), verdictText(row))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := w.Write(report.TrimTrailingSpace(table.Bytes())); err != nil {
		return err
	}
	writeFooter(w, r, "")
	return nil
}

func writeFooter(w io.Writer, r *Report, bullet string) {
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "%snote: %s\n", bullet, n)
	}
	if len(r.OnlyBase) > 0 {
		fmt.Fprintf(w, "%sonly in base (not compared): %s\n", bullet, strings.Join(r.OnlyBase, ", "))
	}
	if len(r.OnlyNew) > 0 {
		fmt.Fprintf(w, "%sonly in new (not compared): %s\n", bullet, strings.Join(r.OnlyNew, ", "))
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "%sMISSING: %d gated metric(s) measured in base were not measured in new (nothing measured is not \"no change\"; --gate the figures you mean): %s\n",
			bullet, len(r.Missing), strings.Join(r.Missing, ", "))
	}
	if r.Regressed() {
		fmt.Fprintf(w, "%s%d regression(s) beyond threshold:\n", bullet, r.Regressions)
		for _, row := range r.Rows {
			if row.Regression {
				b, n := FormatValue(float64(row.Base.Center), row.Contains), FormatValue(float64(row.New.Center), row.Contains)
				if row.Method == MethodBounds {
					b, n = boundText(row.Base, row.Contains), boundText(row.New, row.Contains)
				}
				fmt.Fprintf(w, "%s  %s: %s → %s (%s, worse when %s, threshold %s)\n", bullet, row.Name(),
					b, n, row.FormatDelta(), row.Direction, pctText(row.Threshold))
			}
		}
	}
	if r.Inconclusive > 0 {
		verb := "fails"
		if r.AllowInconclusive {
			verb = "accepted (--allow-inconclusive)"
		}
		lead := "no significant regression found, but "
		if r.Regressed() || len(r.Missing) > 0 {
			lead = "also: "
		}
		fmt.Fprintf(w, "%sINCONCLUSIVE: %s%d gated row(s) could not have detected a regression of any size with these runs (%s):\n",
			bullet, lead, r.Inconclusive, verb)
		shown := 0
		for _, row := range r.Rows {
			if !row.Inconclusive {
				continue
			}
			if shown == 8 {
				fmt.Fprintf(w, "%s  … and %d more (--format json lists them all)\n", bullet, r.Inconclusive-shown)
				break
			}
			fmt.Fprintf(w, "%s  %s: %s\n", bullet, row.Name(), row.Note)
			shown++
		}
		fmt.Fprintf(w, "%s  repeat the runs (xdslab run --repeat K, K >= %d a side at alpha %g) or run longer; --gate the figures you mean; --allow-inconclusive accepts this\n",
			bullet, MinRuns(r.Alpha), r.Alpha)
		return
	}
	if r.Regressed() || len(r.Missing) > 0 {
		return
	}
	fmt.Fprintf(w, "%sno significant regression beyond threshold\n", bullet)
}

func writeMarkdown(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "**base:** `%s`  \n**new:** `%s`\n\n", sideText(r.Base), sideText(r.New))
	fmt.Fprintln(w, "| metric | base | new | vs base | test | |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---|")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, row := range r.Rows {
		v := verdictText(row)
		if row.Regression {
			v = "**" + v + "**"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s |\n", esc(row.Name()),
			esc(estimateText(row.Base, row.Contains, row.Method)), esc(estimateText(row.New, row.Contains, row.Method)),
			row.FormatDelta(), testText(row), v)
	}
	fmt.Fprintf(w, "\nMedians with %g%% intervals; `~` = no significant change (Mann-Whitney U, alpha %g); threshold %s.\n",
		100*r.Confidence, r.Alpha, pctText(r.Threshold))
	writeFooter(w, r, "- ")
	return nil
}

// writeJUnit writes one testcase per row; rows of neutral metrics are skipped (they
// never gate), regressions fail.
func writeJUnit(w io.Writer, r *Report) error {
	s := junit.Suite{Name: "xdslab compare " + r.Base.Path + " " + r.New.Path}
	for _, row := range r.Rows {
		c := junit.Case{Name: row.Name(), Classname: "xdslab.compare",
			SystemOut: fmt.Sprintf("base %s, new %s, %s %s", estimateText(row.Base, row.Contains, row.Method),
				estimateText(row.New, row.Contains, row.Method), row.FormatDelta(), testText(row))}
		switch {
		case row.Regression:
			c.Failure = &junit.Message{Message: fmt.Sprintf("%s regressed %s (threshold %s)", row.Name(), row.FormatDelta(), pctText(row.Threshold)),
				Body: c.SystemOut}
		case row.Inconclusive && !r.AllowInconclusive:
			c.Failure = &junit.Message{Message: fmt.Sprintf("%s inconclusive: %s", row.Name(), row.Note), Body: c.SystemOut}
		case row.Inconclusive:
			c.Skipped = &junit.Message{Message: "inconclusive (accepted by --allow-inconclusive): " + row.Note}
		case row.Direction == Neutral:
			c.Skipped = &junit.Message{Message: "neutral metric: never gates"}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, k := range r.Missing {
		s.Cases = append(s.Cases, junit.Case{Name: k, Classname: "xdslab.compare",
			Failure: &junit.Message{Message: k + " was measured in base and not in new"}})
	}
	// JUnit has no place for a report's notes but its cases: each is a skipped case, so a CI
	// test report shows it (the sides ran different scenarios, too few runs for a test, …).
	for i, n := range r.Notes {
		s.Cases = append(s.Cases, junit.Case{Name: fmt.Sprintf("note %d", i+1), Classname: "xdslab.compare.notes",
			Skipped: &junit.Message{Message: "note: " + n}})
	}
	return junit.Write(w, s)
}
