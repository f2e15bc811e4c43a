package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/catalog"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
)

// The HTML report: one self-contained page (inline CSS, plots as inline SVG made with
// gonum/plot) with the thresholds, the main figures, three plots — push latency CDF per event
// kind, latency over time (per event), events and push cycles over time — and every metric.

// reportData is what the template renders.
type reportData struct {
	Name, Description, Target string
	Started                   string
	Duration                  string
	Passed                    bool
	// Harness states the harness's figures; Saturated, when set, is why the run is marked
	// harness-saturated (the banner).
	Harness, Saturated string
	// Headline is the figures the run is read by (catalog.Headline), first on the page.
	Headline   []catalog.Line
	Thresholds []reportThreshold
	// ZeroMetrics names the metrics whose every series was zero (folded out of Metrics).
	ZeroMetrics string
	Notes       []reportNote
	Plots       []reportPlot
	Metrics     []reportMetric
	Config      string
}

type reportThreshold struct {
	Metric, Expression, Value, Reason string
	Passed, Inconclusive              bool
}

type reportNote struct{ Key, Text string }

type reportPlot struct {
	Title string
	SVG   template.HTML
}

type reportMetric struct{ Name, Type, Values string }

var reportTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>xdslab run {{.Name}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:90%}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.pass{color:#080;font-weight:bold}.fail{color:#c00;font-weight:bold}
.plot{margin:1em 0}pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:85%}
.banner{background:#fff1e0;border:2px solid #c60;padding:.6em 1em;margin:1em 0}
table.headline{font-size:110%}table.headline th{background:none;border:none;text-align:right;padding-right:1em;white-space:nowrap}
table.headline td{border:none;font-variant-numeric:tabular-nums}table.headline .src{color:#888;font-size:80%}
</style></head><body>
{{if .Saturated}}<div class="banner" id="harness-saturated"><strong>Harness saturated</strong> — {{.Saturated}}.</div>
{{end}}<h1>xdslab run: {{.Name}}</h1>
<p class="sub">{{.Description}}</p>
<p>Target: {{.Target}} · started {{.Started}} · took {{.Duration}} ·
{{if .Passed}}<span class="pass">thresholds passed</span>{{else}}<span class="fail">thresholds FAILED</span>{{end}}</p>
{{if .Headline}}<table class="headline" id="headline">
{{range .Headline}}<tr><th>{{.Label}}</th><td{{if .Bad}} class="fail"{{end}}>{{.Value}}</td><td class="src">{{.Metric}}</td></tr>
{{end}}</table>{{end}}
{{if .Harness}}<p>Harness: {{.Harness}}</p>{{end}}
{{if .Thresholds}}<h2>Thresholds</h2><table><tr><th></th><th>metric</th><th>expression</th><th>value</th><th>why</th></tr>
{{range .Thresholds}}<tr><td>{{if .Passed}}<span class="pass">✓</span>{{else if .Inconclusive}}<span class="fail">✗ inconclusive</span>{{else}}<span class="fail">✗</span>{{end}}</td><td>{{.Metric}}</td><td>{{.Expression}}</td><td>{{.Value}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
{{if .Notes}}<h2>Notes</h2><table>{{range .Notes}}<tr><th>{{.Key}}</th><td>{{.Text}}</td></tr>{{end}}</table>{{end}}
{{range .Plots}}<div class="plot"><h2>{{.Title}}</h2>{{.SVG}}</div>{{end}}
<h2>Metrics</h2><table><tr><th>metric</th><th>type</th><th>values</th></tr>
{{range .Metrics}}<tr><td>{{.Name}}</td><td>{{.Type}}</td><td>{{.Values}}</td></tr>
{{end}}{{if .ZeroMetrics}}<tr><td colspan="3">all zero: {{.ZeroMetrics}}</td></tr>{{end}}</table>
<h2>Scenario (resolved)</h2><pre>{{.Config}}</pre>
</body></html>
`))

// Point is one point of a run's timeline (measure and drain phases).
type Point struct {
	At         time.Duration // since the measure phase started
	Events     int64
	PushCycles float64
	HasCycles  bool
	Connected  int
}

// Run is a run's summary and what its report shows beyond it: the fleet's observations per
// event and the run's timeline.
type Run struct {
	Summary  *summary.Summary
	Scenario *scenarios.Scenario
	// Target names the control plane ("in-process (127.0.0.1:4321)").
	Target string
	// Matches are the fleet's matched observations (latency distributions, per-event records).
	Matches measure.MatchResults
	// MeasureStart is when the measure phase started; Timeline is sampled from then on, and
	// CyclesAtStart is the control plane's push cycles then.
	MeasureStart  time.Time
	Timeline      []Point
	CyclesAtStart float64
	// CPUProfile is the run's CPU profile, labelled by side (empty: none was taken).
	CPUProfile []byte
}

// WriteHTML renders the report of a run.
func WriteHTML(w io.Writer, r Run) error {
	s, sc, res := r.Summary, r.Scenario, r.Matches
	d := reportData{
		Name:     runName(r),
		Target:   r.Target,
		Started:  s.Metadata.Started.Format(time.RFC3339),
		Duration: time.Duration(s.Metadata.DurationSeconds * float64(time.Second)).Round(time.Millisecond).String(),
		Passed:   s.Results.Passed,
		Harness:  s.Metadata.Labels["note.harness"], Saturated: s.Metadata.Labels["note.saturated"],
		Headline: catalog.Headline(s),
	}
	var ths map[string][]threshold.Threshold
	if sc != nil {
		d.Description, ths = strings.TrimSpace(sc.Description), sc.Thresholds
	}
	for _, t := range s.Results.Thresholds {
		d.Thresholds = append(d.Thresholds, reportThresholdOf(s.Results, t))
	}
	keys := make([]string, 0, len(s.Metadata.Labels))
	for k := range s.Metadata.Labels {
		if strings.HasPrefix(k, "note.") && k != "note.harness" && k != "note.saturated" { // shown at the top
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.Notes = append(d.Notes, reportNote{Key: strings.TrimPrefix(k, "note."), Text: s.Metadata.Labels[k]})
	}
	plots := []struct {
		title string
		make  func() (*plot.Plot, error)
	}{
		{"Push latency (change → in effect) by percentile, per event kind", func() (*plot.Plot, error) {
			return latencyNines("push latency", res.PushLatencyAll, res.PushLatency, res.Kinds(), ths[fleet.MetricPushLatency])
		}},
		{"Convergence (per event, slowest client) by percentile", func() (*plot.Plot, error) {
			return latencyNines("convergence", res.Convergence, nil, nil, ths[fleet.MetricConvergence])
		}},
		{"Latency over time (per event)", func() (*plot.Plot, error) { return latencyOverTime(res, r.MeasureStart) }},
		{"Events and push cycles over time", func() (*plot.Plot, error) { return eventsOverTime(r.Timeline, r.CyclesAtStart) }},
	}
	for _, p := range plots {
		pl, err := p.make()
		if err != nil {
			return fmt.Errorf("plot %q: %w", p.title, err)
		}
		svg, err := PlotSVG(pl, 10*vg.Inch, 4*vg.Inch)
		if err != nil {
			return fmt.Errorf("plot %q: %w", p.title, err)
		}
		d.Plots = append(d.Plots, reportPlot{Title: p.title, SVG: template.HTML(svg)}) //nolint:gosec // our own SVG
	}
	ms := append([]summary.Metric(nil), s.Results.Metrics...)
	var zero []string
	for _, m := range ms {
		if metricIsZero(m) {
			if !slices.Contains(zero, m.Name) {
				zero = append(zero, m.Name)
			}
			continue
		}
		d.Metrics = append(d.Metrics, reportMetric{Name: m.Key(), Type: string(m.Type), Values: formatMetricValues(m)})
	}
	d.ZeroMetrics = strings.Join(zero, ", ")
	var cfg bytes.Buffer
	switch {
	case sc != nil:
		if b, err := sc.YAML(); err == nil {
			cfg.Write(b)
		}
	case len(s.Config) > 0:
		// No scenario to judge the run by: show the config the summary embeds, as recorded.
		if err := json.Indent(&cfg, s.Config, "", "  "); err != nil {
			cfg.Reset()
			cfg.Write(s.Config)
		}
	default:
		cfg.WriteString("(not recorded)")
	}
	d.Config = cfg.String()
	return reportTmpl.Execute(w, d)
}

// reportThresholdOf is a threshold's row: its value (or the bucket bound it rests on, in the
// metric's unit) and why it passed or failed when that is not a plain value.
func reportThresholdOf(res summary.Results, t summary.Threshold) reportThreshold {
	row := reportThreshold{Metric: t.Metric + summary.TagString(t.Tags), Expression: t.Expression, Value: "—",
		Reason: t.Reason, Passed: t.Passed, Inconclusive: t.Inconclusive}
	switch {
	case t.Value != nil:
		row.Value = fmt.Sprintf("%g", *t.Value)
	case t.Bound != nil:
		contains := summary.Default
		if m, ok := res.Find(t.Metric, t.Tags); ok {
			contains = m.Contains
		}
		row.Value = summary.FormatBound(contains, *t.Bound)
	}
	return row
}

// metricIsZero reports whether m says nothing: a counter that counted nothing, a gauge 0
// throughout (the report folds them into one row).
func metricIsZero(m summary.Metric) bool {
	v := m.Values
	switch m.Type {
	case summary.Counter:
		return v["count"] == 0
	case summary.Gauge:
		return v["value"] == 0 && v["min"] == 0 && v["max"] == 0
	}
	return false
}

// formatMetricValues lists a metric's values, then (a trend read from buckets) its count and
// the bucket bound of every other figure, e.g. "avg=100.7ms count=18 max in (100ms, 1s] …
// (pilot_debounce_time buckets)".
func formatMetricValues(m summary.Metric) string {
	keys := make([]string, 0, len(m.Values))
	v := m.Values
	// A gauge's min and max say something only when it did more than rise to its value.
	plainGauge := m.Type == summary.Gauge && (v["min"] == v["max"] && v["max"] == v["value"] || v["min"] == 0 && v["max"] == v["value"])
	for k := range m.Values {
		if plainGauge && k != "value" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := m.Values[k]
		if m.Type == summary.Rate && k == "rate" {
			parts = append(parts, fmt.Sprintf("%s=%.2f%%", k, 100*v))
			continue
		}
		c := m.Contains
		if m.Type == summary.Counter && k == "rate" && c == summary.Time {
			c = summary.Default
		}
		parts = append(parts, k+"="+summary.FormatValue(c, v))
	}
	if b := m.Buckets; b != nil {
		parts = append(parts, fmt.Sprintf("count=%d", b.Count))
		if b.Count == 0 {
			parts = append(parts, "no data")
		}
		bkeys := make([]string, 0, len(m.Bounds))
		for k := range m.Bounds {
			bkeys = append(bkeys, k)
		}
		sort.Strings(bkeys)
		for _, k := range bkeys {
			parts = append(parts, k+" "+summary.FormatBound(m.Contains, m.Bounds[k]))
		}
		src := "bucket bounds"
		if b.Source != "" {
			src = b.Source + " buckets"
		}
		parts = append(parts, "("+src+")")
	}
	return strings.Join(parts, " ")
}

// latencyNines plots a latency trend (and its per-kind series) against the nines axis, with
// each of the scenario's percentile thresholds on it drawn as a dashed line at its bound.
func latencyNines(what string, all *hdr.Histogram, byKind map[string]*hdr.Histogram, kinds []string, ths []threshold.Threshold) (*plot.Plot, error) {
	p := NinesPlot(what)
	series := []any{}
	if pts := NinesPoints(all, 1e-6); len(pts) > 0 {
		series = append(series, "all", pts)
	}
	for _, k := range kinds {
		if pts := NinesPoints(byKind[k], 1e-6); len(pts) > 0 {
			series = append(series, k, pts)
		}
	}
	if len(series) == 0 {
		p.Title.Text = "no observations"
		return p, nil
	}
	p.Y.Min = 0
	if err := plotutil.AddLines(p, series...); err != nil {
		return nil, err
	}
	for _, th := range ths {
		if th.Agg != "p" || th.Op != "<" && th.Op != "<=" {
			continue
		}
		y := th.Value * 1000
		line, err := plotter.NewLine(plotter.XYs{{X: nines(0.5), Y: y}, {X: ninesMax, Y: y}})
		if err != nil {
			return nil, err
		}
		line.Color = color.RGBA{R: 200, A: 255}
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(line)
		p.Legend.Add("threshold "+th.Source, line)
		p.Y.Max = math.Max(p.Y.Max, y*1.1)
	}
	return p, nil
}

func latencyOverTime(res measure.MatchResults, start time.Time) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "time since the measure phase started (s)"
	p.Y.Label.Text = "latency (ms)"
	var conv, mean plotter.XYs
	for _, e := range res.Events {
		if e.T0.IsZero() || e.Observed == 0 {
			continue
		}
		x := e.T0.Sub(start).Seconds()
		conv = append(conv, plotter.XY{X: x, Y: float64(e.Convergence) / 1e6})
		if e.MeanLatency > 0 {
			mean = append(mean, plotter.XY{X: x, Y: float64(e.MeanLatency) / 1e6})
		}
	}
	if len(conv) == 0 {
		p.Title.Text = "no observations"
		return p, nil
	}
	p.Y.Min = 0
	if len(mean) == 0 {
		// A summary's event records (a merged run's) hold no mean latency.
		return p, plotutil.AddScatters(p, "convergence (max over clients)", conv)
	}
	return p, plotutil.AddScatters(p, "convergence (max over clients)", conv, "mean push latency", mean)
}

func eventsOverTime(samples []Point, cyclesAtStart float64) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "time since the measure phase started (s)"
	p.Y.Label.Text = "count (cumulative)"
	p.Legend.Top = true
	var ev, pushes plotter.XYs
	for _, s := range samples {
		ev = append(ev, plotter.XY{X: s.At.Seconds(), Y: float64(s.Events)})
		if s.HasCycles {
			pushes = append(pushes, plotter.XY{X: s.At.Seconds(), Y: s.PushCycles - cyclesAtStart})
		}
	}
	if len(ev) == 0 {
		p.Title.Text = "no samples"
		return p, nil
	}
	p.Y.Min = 0
	series := []any{"simulator events", ev}
	if len(pushes) > 0 {
		series = append(series, "push cycles", pushes)
	} else {
		p.Title.Text = "push cycles: " + collect.NotAvailable
	}
	return p, plotutil.AddLines(p, series...)
}
