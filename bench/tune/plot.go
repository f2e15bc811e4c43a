package tune

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot colours: the frontier stands out, dominated points are greyed.
var (
	frontierColor    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	dominatedColor   = color.RGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0xff}
	kneeColor        = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	recommendedColor = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// plotSeries is one drawn series of the tune plot.
type plotSeries struct {
	Legend string // empty: not in the legend
	Line   bool   // a line through the points (else glyphs only)
	Glyphs bool   // glyphs at the points (with Line: a line with points)
	Color  color.RGBA
	Shape  string // circle, triangle, ring, square
	Radius float64
	Dashed bool
	XYs    plotter.XYs
}

// plotModel is everything Plot draws, decided without drawing (and golden-tested).
type plotModel struct {
	Title, XLabel, YLabel string
	Series                []plotSeries
	// Labels are the point labels, merged where they would overprint.
	Labels    plotter.XYs
	LabelText []string
}

// plotShapes are the glyph shapes of the debounce policies when a tune compares them.
var plotShapes = map[string]string{"fixed": "circle", "adaptive": "triangle"}

// plotPolicies returns the policies of the usable points, in order of first appearance,
// when there is more than one (nil otherwise: the plot then looks as before policies).
func plotPolicies(r *Result) []string {
	var out []string
	for _, pt := range r.Points {
		if pt.usable(r.Cost) && pt.Policy != "" && !slices.Contains(out, pt.Policy) {
			out = append(out, pt.Policy)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// ErrNothingToPlot: no point has both figures of the plot (every run failed, or an estimate
// of a scenario without churn predicts no delay).
var ErrNothingToPlot = errors.New("no point has figures to plot")

// buildPlot decides the plot: every usable point labelled with its settings, dominated
// points grey, the frontier joined by a line, the knee and the recommendation marked; when
// the tune ran more than one debounce policy, each policy has its own glyph shape (fixed
// circles, adaptive triangles) and the compared pair is named in the title.
func buildPlot(r *Result) (*plotModel, error) {
	m := &plotModel{Title: fmt.Sprintf("xdslab tune %s: latency vs cost", r.Scenario)}
	switch {
	case r.EstimateOnly:
		m.XLabel = "predicted push cycles"
		m.YLabel = "predicted debounce delay p99 (ms)"
	case r.Cost == CostCPU:
		m.XLabel = "control-plane CPU (s)"
		m.YLabel = "p99 push latency (ms, log scale)"
	default:
		m.XLabel = "push cycles"
		m.YLabel = "p99 push latency (ms, log scale)"
	}
	if r.EstimateOnly {
		m.YLabel += ", log scale"
	}
	ms := func(sec float64) float64 { return math.Max(1000*sec, 0.01) }
	var names0 []string
	for _, prm := range r.Params {
		names0 = append(names0, prm.Name)
	}
	m.Title += "\npoints labelled " + strings.Join(names0, "/")
	policies := plotPolicies(r)
	if c := r.Policies; c != nil && policies != nil {
		m.Title += fmt.Sprintf("; adaptive (%d) vs fixed (%d): %s", c.Adaptive, c.Fixed, c.Verdict)
	}
	shapeOf := func(pt Point) string {
		if policies == nil {
			return "circle"
		}
		return plotShapes[pt.Policy]
	}
	var labels, front plotter.XYs
	var names []string
	dom := map[string]plotter.XYs{}
	frontBy := map[string]plotter.XYs{}
	for _, pt := range r.Points {
		if !pt.usable(r.Cost) {
			continue
		}
		xy := plotter.XY{X: pt.CostValue(r.Cost), Y: ms(pt.Latency())}
		labels = append(labels, xy)
		var vals []string
		for _, st := range pt.Settings {
			if pt.Policy == "fixed" && strings.HasPrefix(st.Path, pathAdaptive) {
				vals = append(vals, "-") // the fixed policy ignores it
				continue
			}
			vals = append(vals, st.Value)
		}
		// The point's number, as in the table and its point-N directory.
		names = append(names, fmt.Sprintf("%d: %s", pt.Index, strings.Join(vals, "/")))
		if !pt.Pareto {
			dom[shapeOf(pt)] = append(dom[shapeOf(pt)], xy)
		}
	}
	if len(labels) == 0 {
		return nil, ErrNothingToPlot
	}
	for _, i := range r.Frontier {
		pt := r.Points[i]
		xy := plotter.XY{X: pt.CostValue(r.Cost), Y: ms(pt.Latency())}
		front = append(front, xy)
		frontBy[shapeOf(pt)] = append(frontBy[shapeOf(pt)], xy)
	}
	shapes := []string{"circle"}
	if policies != nil {
		shapes = nil
		for _, p := range policies {
			shapes = append(shapes, plotShapes[p])
		}
	}
	for _, sh := range shapes {
		if len(dom[sh]) == 0 {
			continue
		}
		legend := "dominated"
		if policies != nil {
			legend = "dominated, " + policyOfShape(sh)
		}
		m.Series = append(m.Series, plotSeries{Legend: legend, Glyphs: true, Color: dominatedColor, Shape: sh, Radius: 3.5, XYs: dom[sh]})
	}
	if len(front) > 0 {
		if policies == nil {
			m.Series = append(m.Series, plotSeries{Legend: "Pareto frontier", Line: true, Glyphs: true, Color: frontierColor, Shape: "circle", Radius: 4, XYs: front})
		} else {
			m.Series = append(m.Series, plotSeries{Legend: "Pareto frontier", Line: true, Color: frontierColor, XYs: front})
			for _, sh := range shapes {
				if len(frontBy[sh]) > 0 {
					m.Series = append(m.Series, plotSeries{Legend: "frontier, " + policyOfShape(sh), Glyphs: true,
						Color: frontierColor, Shape: sh, Radius: 4.5, XYs: frontBy[sh]})
				}
			}
		}
	}
	mark := func(i int, c color.RGBA, shape, name string) {
		if i < 0 || !r.Points[i].usable(r.Cost) {
			return
		}
		pt := r.Points[i]
		m.Series = append(m.Series, plotSeries{Legend: name, Glyphs: true, Color: c, Shape: shape, Radius: 7,
			XYs: plotter.XYs{{X: pt.CostValue(r.Cost), Y: ms(pt.Latency())}}})
	}
	mark(r.Knee, kneeColor, "ring", "knee")
	mark(r.Recommended, recommendedColor, "square", "recommended")
	if r.Budget != nil && !r.EstimateOnly {
		minX, maxX := math.Inf(1), math.Inf(-1)
		for _, xy := range labels {
			minX, maxX = math.Min(minX, xy.X), math.Max(maxX, xy.X)
		}
		b := ms(*r.Budget)
		m.Series = append(m.Series, plotSeries{Legend: "p99 latency threshold", Line: true, Dashed: true,
			Color: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, XYs: plotter.XYs{{X: minX, Y: b}, {X: maxX, Y: b}}})
	}
	m.Labels, m.LabelText = mergeLabels(labels, names)
	return m, nil
}

func policyOfShape(shape string) string {
	for p, s := range plotShapes {
		if s == shape {
			return p
		}
	}
	return shape
}

func glyph(shape string) draw.GlyphDrawer {
	switch shape {
	case "triangle":
		return draw.TriangleGlyph{}
	case "ring":
		return draw.RingGlyph{}
	case "square":
		return draw.SquareGlyph{}
	}
	return draw.CircleGlyph{}
}

// String writes the model as text, for the golden test.
func (m *plotModel) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "title: %s\nx: %s\ny: %s\n", strings.ReplaceAll(m.Title, "\n", " / "), m.XLabel, m.YLabel)
	for _, s := range m.Series {
		kind := "glyphs"
		switch {
		case s.Line && s.Glyphs:
			kind = "line+glyphs"
		case s.Line && s.Dashed:
			kind = "dashed line"
		case s.Line:
			kind = "line"
		}
		fmt.Fprintf(&b, "series %q: %s, #%02x%02x%02x", s.Legend, kind, s.Color.R, s.Color.G, s.Color.B)
		if s.Glyphs {
			fmt.Fprintf(&b, ", %s r=%g", s.Shape, s.Radius)
		}
		for _, xy := range s.XYs {
			fmt.Fprintf(&b, " (%g, %g)", xy.X, xy.Y)
		}
		b.WriteString("\n")
	}
	for i, xy := range m.Labels {
		fmt.Fprintf(&b, "label at (%g, %g): %s\n", xy.X, xy.Y, strings.ReplaceAll(m.LabelText[i], "\n", " | "))
	}
	return b.String()
}

// Plot draws latency against cost (see buildPlot). format is png or svg.
func Plot(w io.Writer, r *Result, format string) error {
	m, err := buildPlot(r)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = m.Title, m.XLabel, m.YLabel
	// Latencies span orders of magnitude across a debounce sweep: a log axis keeps the fast
	// points apart. Zero (no predicted delay) is drawn at 0.01 ms.
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Add(plotter.NewGrid())
	for _, s := range m.Series {
		var thumbs []plot.Thumbnailer
		if s.Line {
			l, err := plotter.NewLine(s.XYs)
			if err != nil {
				return err
			}
			l.Color = s.Color
			if s.Dashed {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			} else {
				l.Width = vg.Points(1.5)
			}
			p.Add(l)
			thumbs = append(thumbs, l)
		}
		if s.Glyphs {
			sc, err := plotter.NewScatter(s.XYs)
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: s.Color, Radius: vg.Points(s.Radius), Shape: glyph(s.Shape)}
			p.Add(sc)
			thumbs = append(thumbs, sc)
		}
		if s.Legend != "" {
			p.Legend.Add(s.Legend, thumbs...)
		}
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: m.Labels, Labels: m.LabelText})
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(7)
	}
	lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
	p.Add(lb)
	p.Legend.Top = true
	// Every point at one latency (a single point, or an estimate predicting no delay anywhere):
	// gonum widens an empty range by ±1, below zero for anything under 1 ms, where a log axis
	// panics. Widen it by a factor of 2 either way instead.
	if !(p.Y.Min < p.Y.Max) {
		p.Y.Min, p.Y.Max = p.Y.Min/2, p.Y.Max*2
	}
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

// logTicks labels a log axis at 1, 2 and 5 times each power of ten, so a range of less
// than two decades still gets several labels (gonum's LogTicks labels powers of ten only).
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
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

// mergeLabels merges the labels of points drawn so close together that their labels would
// overprint (within 4% of the x range and of the log y range of each other): the first point
// of each cluster carries every name, one per line.
func mergeLabels(xys plotter.XYs, names []string) (plotter.XYs, []string) {
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
