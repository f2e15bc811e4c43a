package report

import (
	"bytes"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plots shared by the run's report and compare's: latencies on HdrHistogram's "nines" axis,
// rendered as inline SVG.

// PlotSVG renders p as an SVG element (the XML prolog dropped, for inlining).
func PlotSVG(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	out := buf.String()
	if i := strings.Index(out, "<svg"); i > 0 {
		out = out[i:]
	}
	return out, nil
}

// ninesMax is the deepest percentile the nines axis shows: p99.99.
const ninesMax = 4

// nines maps a quantile to HdrHistogram's percentile axis: -log10(1-q), so p50, p90, p99,
// p99.9 and p99.99 are evenly spaced and the tail is not squashed against 100%.
func nines(q float64) float64 { return -math.Log10(1 - q) }

// NinesPoints samples h along the nines axis from p50 to p99.99, in milliseconds (scale converts
// h's values to seconds); none for a nil or empty h.
func NinesPoints(h *hdr.Histogram, scale float64) plotter.XYs {
	var pts plotter.XYs
	if h == nil || h.TotalCount() == 0 {
		return pts
	}
	const steps = 120
	lo := nines(0.5)
	for i := 0; i <= steps; i++ {
		n := lo + (ninesMax-lo)*float64(i)/steps
		q := 1 - math.Pow(10, -n)
		pts = append(pts, plotter.XY{X: n, Y: float64(h.ValueAtPercentile(100*q)) * scale * 1000})
	}
	return pts
}

// ninesTicks labels the nines axis with the percentiles HdrHistogram's plots show.
var ninesTicks = plot.ConstantTicks([]plot.Tick{
	{Value: nines(0.5), Label: "p50"}, {Value: nines(0.9), Label: "p90"}, {Value: nines(0.99), Label: "p99"},
	{Value: nines(0.999), Label: "p99.9"}, {Value: nines(0.9999), Label: "p99.99"},
})

// NinesPlot is an empty plot of a latency (ms) against HdrHistogram's nines axis, p50 to
// p99.99, its legend top left.
func NinesPlot(what string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "percentile (log \"nines\" axis)"
	p.Y.Label.Text = what + " (ms)"
	p.X.Min, p.X.Max = nines(0.5), ninesMax
	p.X.Tick.Marker = ninesTicks
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}
