package compare

import (
	"bytes"
	"fmt"
	"html"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/xdslab/xdslab/bench/report"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
)

// overlaid are the trends compare's HTML report draws, both sides on one nines axis.
var overlaid = []struct{ metric, what string }{
	{fleet.MetricPushLatency, "push latency"},
	{fleet.MetricConvergence, "convergence"},
}

// WriteHTML writes a self-contained HTML page: the verdict, the table (as the text
// format prints it) and, for push latency and convergence, both sides' distributions overlaid
// on HdrHistogram's log "nines" axis (each side's histograms merged over its runs).
func WriteHTML(w io.Writer, r *Report, base, nw *Side) error {
	var table bytes.Buffer
	if err := writeText(&table, r); err != nil {
		return err
	}
	verdict := "no significant regression"
	switch {
	case r.Regressed():
		verdict = fmt.Sprintf("%d regression(s)", r.Regressions)
	case len(r.Missing) > 0:
		verdict = fmt.Sprintf("MISSING: %d gated metric(s) measured in base were not measured in new", len(r.Missing))
	case r.Failed():
		verdict = fmt.Sprintf("INCONCLUSIVE: %d gated row(s) could not have detected a regression", r.Inconclusive)
	case r.Inconclusive > 0:
		verdict = fmt.Sprintf("no regression among the rows that could show one (%d inconclusive, allowed)", r.Inconclusive)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>xdslab compare</title>\n")
	fmt.Fprintf(&b, "<style>body{font-family:sans-serif;margin:2em}pre{font-size:12px;overflow-x:auto}.bad{color:#b00}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>xdslab compare</h1>\n<p>base: %s (%d run(s))<br>new: %s (%d run(s))</p>\n",
		html.EscapeString(base.Path), len(base.Runs), html.EscapeString(nw.Path), len(nw.Runs))
	class := ""
	if r.Failed() {
		class = ` class="bad"`
	}
	fmt.Fprintf(&b, "<h2%s>%s</h2>\n", class, html.EscapeString(verdict))
	for _, o := range overlaid {
		p, err := ninesPlot(o.what, mergedTrend(base, o.metric), mergedTrend(nw, o.metric))
		if err != nil {
			return fmt.Errorf("compare: plot %s: %w", o.what, err)
		}
		svg, err := report.PlotSVG(p, 7*vg.Inch, 3.5*vg.Inch)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "<h3>%s, base vs new</h3>\n%s\n", html.EscapeString(o.what), svg)
	}
	fmt.Fprintf(&b, "<h3>every row</h3>\n<pre>%s</pre>\n</body></html>\n", html.EscapeString(table.String()))
	_, err := w.Write(b.Bytes())
	return err
}

// mergedTrend merges the untagged trend metric's histograms over a side's runs (nil when no run
// carries one, or their scales differ: nothing is drawn rather than something wrong).
func mergedTrend(s *Side, metric string) *scaledHist {
	var out *scaledHist
	for _, run := range s.Runs {
		for _, m := range run.Results.Metrics {
			if m.Name != metric || len(m.Tags) != 0 || m.Type != summary.Trend || m.Histogram == nil {
				continue
			}
			h, err := m.Histogram.Decode()
			if err != nil || h == nil {
				return nil
			}
			if out == nil {
				out = &scaledHist{h: h, scale: m.Histogram.Scale}
				continue
			}
			if out.scale != m.Histogram.Scale {
				return nil
			}
			out.h.Merge(h)
		}
	}
	return out
}

// ninesPlot draws base and new on one nines axis.
func ninesPlot(what string, base, nw *scaledHist) (*plot.Plot, error) {
	p := report.NinesPlot(what)
	var series []any
	if pts := base.ninesPoints(); len(pts) > 0 {
		series = append(series, fmt.Sprintf("base (%d observations)", base.h.TotalCount()), pts)
	}
	if pts := nw.ninesPoints(); len(pts) > 0 {
		series = append(series, fmt.Sprintf("new (%d observations)", nw.h.TotalCount()), pts)
	}
	if len(series) == 0 {
		p.Title.Text = "no observations on either side"
		return p, nil
	}
	if len(series) == 2 {
		p.Title.Text = "only one side observed anything"
	}
	p.Y.Min = 0
	return p, plotutil.AddLines(p, series...)
}

// ninesPoints samples h along the nines axis (none for a nil h).
func (h *scaledHist) ninesPoints() plotter.XYs {
	if h == nil {
		return nil
	}
	return report.NinesPoints(h.h, h.scale)
}
