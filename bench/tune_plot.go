package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"

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
		p.Y.Label.Text = "p99 push latency (ms)"
	default:
		p.X.Label.Text = "push cycles"
		p.Y.Label.Text = "p99 push latency (ms)"
	}
	p.Add(plotter.NewGrid())
	var dom, front, labels plotter.XYs
	var names []string
	for _, pt := range r.Points {
		if !pt.usable(r.Cost) {
			continue
		}
		xy := plotter.XY{X: pt.CostValue(r.Cost), Y: 1000 * pt.Latency()}
		labels = append(labels, xy)
		names = append(names, pt.Label)
		if !pt.Pareto {
			dom = append(dom, xy)
		}
	}
	for _, i := range r.Frontier {
		pt := r.Points[i]
		front = append(front, plotter.XY{X: pt.CostValue(r.Cost), Y: 1000 * pt.Latency()})
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
		s, err := plotter.NewScatter(plotter.XYs{{X: pt.CostValue(r.Cost), Y: 1000 * pt.Latency()}})
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
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: labels, Labels: names})
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
	p.Y.Min = math.Min(p.Y.Min, 0)
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
