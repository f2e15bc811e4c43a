package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot colours: the frontier stands out, dominated points are greyed.
var (
	tuneFrontierColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	tuneDominated     = color.RGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0xff}
	tuneKneeColor     = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	tuneRecColor      = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// TunePlot draws latency against cost: every usable point labelled with its settings,
// dominated points grey, the frontier joined by a line, the knee and the recommendation
// marked. format is png or svg.
func TunePlot(w io.Writer, r *TuneResult, format string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("xdslab tune %s: latency vs cost", r.Scenario)
	switch {
	case r.EstimateOnly:
		p.X.Label.Text = "predicted push cycles"
		p.Y.Label.Text = "predicted debounce delay p99 (ms)"
	case r.Cost == CostCPU:
		p.X.Label.Text = "control-plane CPU (s)"
		p.Y.Label.Text = "p99 push latency (ms, log scale)"
	default:
		p.X.Label.Text = "push cycles"
		p.Y.Label.Text = "p99 push latency (ms, log scale)"
	}
	if r.EstimateOnly {
		p.Y.Label.Text += ", log scale"
	}
	// Latencies span orders of magnitude across a debounce sweep: a log axis keeps the fast
	// points apart. Zero (no predicted delay) is drawn at 0.01 ms.
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = tuneLogTicks{}
	ms := func(sec float64) float64 { return math.Max(1000*sec, 0.01) }
	var names0 []string
	for _, prm := range r.Params {
		names0 = append(names0, prm.Name)
	}
	p.Title.Text += "\npoints labelled " + strings.Join(names0, "/")
	p.Add(plotter.NewGrid())
	var dom, front, labels plotter.XYs
	var names []string
	for _, pt := range r.Points {
		if !pt.usable(r.Cost) {
			continue
		}
		xy := plotter.XY{X: pt.CostValue(r.Cost), Y: ms(pt.Latency())}
		labels = append(labels, xy)
		var vals []string
		for _, st := range pt.Settings {
			vals = append(vals, st.Value)
		}
		// The point's number, as in the table and its point-N directory.
		names = append(names, fmt.Sprintf("%d: %s", pt.Index, strings.Join(vals, "/")))
		if !pt.Pareto {
			dom = append(dom, xy)
		}
	}
	for _, i := range r.Frontier {
		pt := r.Points[i]
		front = append(front, plotter.XY{X: pt.CostValue(r.Cost), Y: ms(pt.Latency())})
	}
	if len(labels) == 0 {
		return fmt.Errorf("tune plot: no point ran successfully: nothing to plot")
	}
	if len(dom) > 0 {
		s, err := plotter.NewScatter(dom)
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: tuneDominated, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Add(s)
		p.Legend.Add("dominated", s)
	}
	if len(front) > 0 {
		l, s, err := plotter.NewLinePoints(front)
		if err != nil {
			return err
		}
		l.Color = tuneFrontierColor
		l.Width = vg.Points(1.5)
		s.GlyphStyle = draw.GlyphStyle{Color: tuneFrontierColor, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		p.Add(l, s)
		p.Legend.Add("Pareto frontier", l, s)
	}
	mark := func(i int, c color.Color, shape draw.GlyphDrawer, name string) error {
		if i < 0 || !r.Points[i].usable(r.Cost) {
			return nil
		}
		pt := r.Points[i]
		s, err := plotter.NewScatter(plotter.XYs{{X: pt.CostValue(r.Cost), Y: ms(pt.Latency())}})
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(7), Shape: shape}
		p.Add(s)
		p.Legend.Add(name, s)
		return nil
	}
	if err := mark(r.Knee, tuneKneeColor, draw.RingGlyph{}, "knee"); err != nil {
		return err
	}
	if err := mark(r.Recommended, tuneRecColor, draw.SquareGlyph{}, "recommended"); err != nil {
		return err
	}
	if r.Budget != nil && !r.EstimateOnly {
		minX, maxX := math.Inf(1), math.Inf(-1)
		for _, xy := range labels {
			minX, maxX = math.Min(minX, xy.X), math.Max(maxX, xy.X)
		}
		b := ms(*r.Budget)
		l, err := plotter.NewLine(plotter.XYs{{X: minX, Y: b}, {X: maxX, Y: b}})
		if err != nil {
			return err
		}
		l.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("p99 latency threshold", l)
	}
	lxy, lnames := tuneMergeLabels(labels, names)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: lnames})
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(7)
	}
	lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
	p.Add(lb)
	p.Legend.Top = true
	// Room on the right for the labels of the costliest points.
	p.X.Max += 0.15 * math.Max(p.X.Max-p.X.Min, 1)
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("tune plot: %w", err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("tune plot: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// tuneLogTicks labels a log axis at 1, 2 and 5 times each power of ten, so a range of less
// than two decades still gets several labels (gonum's LogTicks labels powers of ten only).
type tuneLogTicks struct{}

// Ticks implements plot.Ticker.
func (tuneLogTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	if !(lo > 0) || !(hi > lo) {
		return ticks
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ticks
}

// tuneMergeLabels merges the labels of points drawn so close together that their labels would
// overprint (within 4% of the x range and of the log y range of each other): the first point
// of each cluster carries every name, one per line.
func tuneMergeLabels(xys plotter.XYs, names []string) (plotter.XYs, []string) {
	if len(xys) == 0 {
		return xys, names
	}
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, xy := range xys {
		ly := math.Log10(xy.Y)
		minX, maxX, minY, maxY = math.Min(minX, xy.X), math.Max(maxX, xy.X), math.Min(minY, ly), math.Max(maxY, ly)
	}
	dx, dy := math.Max(maxX-minX, 1e-9), math.Max(maxY-minY, 1e-9)
	const near = 0.04
	var out plotter.XYs
	var outNames []string
	for i, xy := range xys {
		merged := false
		for j, o := range out {
			if math.Abs(xy.X-o.X)/dx < near && math.Abs(math.Log10(xy.Y)-math.Log10(o.Y))/dy < near {
				outNames[j] += "\n" + names[i]
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, xy)
			outNames = append(outNames, names[i])
		}
	}
	return out, outNames
}
