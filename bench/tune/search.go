package tune

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/optimize"

	"github.com/xdslab/xdslab/bench/compare"
	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/scenarios"
)

// The scenario paths the search varies.
const (
	pathMinQuiet = "controlPlane.debounce.minQuiet"
	pathMaxDelay = "controlPlane.debounce.maxDelay"
)

// Search is the outcome of the optional search (Options.Search): a Nelder-Mead
// minimisation (gonum/optimize) over log(minQuiet) and log(maxDelay), within the ranges the
// grid swept, of the fast estimate's push cycles, subject to predicted p99 push latency —
// the predicted debounce delay p99 plus the overhead the real runs added to it — staying
// within the scenario's p(99) push latency threshold. Between grid values it finds settings
// the grid did not try; the real run of the found point says whether it holds.
type Search struct {
	MinQuiet string `json:"minQuiet"`
	MaxDelay string `json:"maxDelay"`
	// Predicted is the estimate at the found settings.
	Predicted Estimate `json:"predicted"`
	// Overhead is what the real runs added to the predicted debounce delay p99 (the median
	// over the grid's measured points of p99 push latency minus predicted delay p99); zero
	// without runs.
	Overhead    compare.Float `json:"overheadSeconds"`
	Evaluations int           `json:"evaluations"`
	// Point is the index of the found settings' real run in Points, -1 when not run.
	Point int `json:"point"`
	// OnGrid: the search found settings of a grid point (Point), which is not run again.
	OnGrid bool `json:"onGrid,omitempty"`
}

// searchSpace is one searched dimension: a range in seconds, or a fixed value.
type searchSpace struct{ lo, hi float64 }

func (s searchSpace) clamp(x float64) float64 { return math.Min(s.hi, math.Max(s.lo, x)) }

// searchRange is the range of a swept duration parameter, or the scenario's value.
func searchRange(params []Param, path string, current time.Duration) (searchSpace, error) {
	for _, p := range params {
		if p.Path != path {
			continue
		}
		sp := searchSpace{lo: math.Inf(1), hi: math.Inf(-1)}
		for _, v := range p.Values {
			d, err := time.ParseDuration(v)
			if err != nil {
				return sp, fmt.Errorf("search: %s value %q is not a duration", p.Name, v)
			}
			sp.lo, sp.hi = math.Min(sp.lo, d.Seconds()), math.Max(sp.hi, d.Seconds())
		}
		return sp, nil
	}
	return searchSpace{lo: current.Seconds(), hi: current.Seconds()}, nil
}

// runSearch finds the settings (see Search); it does not run them.
func runSearch(sc *scenarios.Scenario, res *Result, est *estimator) (*Search, error) {
	if res.Budget == nil {
		return nil, errors.New("search: the scenario has no p(99) push latency threshold (xdslab_push_latency_seconds: ['p(99)<…']) to search against")
	}
	d := sc.ControlPlane.Debounce
	mq, err := searchRange(res.Params, pathMinQuiet, d.MinQuiet.D())
	if err != nil {
		return nil, err
	}
	md, err := searchRange(res.Params, pathMaxDelay, d.MaxDelay.D())
	if err != nil {
		return nil, err
	}
	if md.lo == md.hi {
		mq.hi = math.Min(mq.hi, md.hi)
		mq.lo = math.Min(mq.lo, mq.hi)
	}
	if mq.lo == mq.hi && md.lo == md.hi {
		return nil, errors.New("search: sweep minQuiet or maxDelay over at least two values to give the search a range")
	}
	tl, err := est.timeline(sc)
	if err != nil {
		return nil, err
	}
	var over []float64
	for _, p := range res.Points {
		if p.Measured != nil && p.Error == "" {
			if v := float64(p.Measured.PushLatencyP99) - float64(p.Estimate.DebounceDelayP99); !math.IsNaN(v) {
				over = append(over, math.Max(v, 0))
			}
		}
	}
	overhead := 0.0
	if len(over) > 0 {
		overhead = compare.Median(over)
	}
	budget := *res.Budget
	// Searching in log space treats 10ms→20ms like 1s→2s; zero maps to a microsecond.
	toX := func(sec float64) float64 { return math.Log(math.Max(sec, 1e-6)) }
	settings := func(x []float64) (time.Duration, time.Duration) {
		q := mq.clamp(math.Exp(x[0]))
		m := math.Max(md.clamp(math.Exp(x[1])), q)
		round := func(s float64) time.Duration {
			return time.Duration(s * 1e3 * float64(time.Millisecond)).Round(time.Millisecond)
		}
		return round(q), round(m)
	}
	evals := 0
	objective := func(x []float64) float64 {
		evals++
		q, m := settings(x)
		e, err := replay(tl, debounce.Options{MinQuiet: q, MaxDelay: m, DebounceEDS: d.Endpoints})
		if err != nil {
			return math.Inf(1)
		}
		lat := float64(e.DebounceDelayP99)
		if math.IsNaN(lat) {
			lat = 0
		}
		lat += overhead
		// Cost first; the latency term (below 1) breaks ties between equal push counts
		// towards lower latency; a broken budget costs more than any push count.
		f := float64(e.PushCycles) + lat/budget
		if lat >= budget {
			f += 1e6 * (1 + lat/budget)
		}
		return f
	}
	// Start from the best grid point under the same objective.
	start := []float64{toX(d.MinQuiet.D().Seconds()), toX(d.MaxDelay.D().Seconds())}
	best := math.Inf(1)
	for _, p := range res.Points {
		if p.Error != "" {
			continue
		}
		x := []float64{toX(d.MinQuiet.D().Seconds()), toX(d.MaxDelay.D().Seconds())}
		for _, s := range p.Settings {
			if v, err := time.ParseDuration(s.Value); err == nil {
				switch s.Path {
				case pathMinQuiet:
					x[0] = toX(v.Seconds())
				case pathMaxDelay:
					x[1] = toX(v.Seconds())
				}
			}
		}
		if f := objective(x); f < best {
			best, start = f, x
		}
	}
	r, err := optimize.Minimize(optimize.Problem{Func: objective}, start,
		&optimize.Settings{FuncEvaluations: 300, Concurrent: 1}, &optimize.NelderMead{})
	if err != nil && r == nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	x := start
	if r != nil && r.F <= best {
		x = r.X
	}
	q, m := settings(x)
	e, err := replay(tl, debounce.Options{MinQuiet: q, MaxDelay: m, DebounceEDS: d.Endpoints})
	if err != nil {
		return nil, err
	}
	return &Search{MinQuiet: q.String(), MaxDelay: m.String(), Predicted: e, Overhead: compare.Float(overhead),
		Evaluations: evals, Point: -1}, nil
}

// addSearch searches (runSearch) and evaluates the found settings as one more point.
func addSearch(sc *scenarios.Scenario, res *Result, est *estimator,
	point func(int, []Setting, string) (Point, error)) error {
	for _, p := range res.Params {
		if p.Path != pathMinQuiet && p.Path != pathMaxDelay {
			return fmt.Errorf("search: it varies minQuiet and maxDelay only, and --param %s is swept too", p.Name)
		}
	}
	found, err := runSearch(sc, res, est)
	if err != nil {
		return err
	}
	var settings []Setting
	for _, p := range res.Params {
		v := found.MinQuiet
		if p.Path == pathMaxDelay {
			v = found.MaxDelay
		}
		settings = append(settings, Setting{Name: p.Name, Path: p.Path, Value: v})
	}
	for i, pt := range res.Points {
		if pt.Error == "" && sameSettings(pt.Settings, settings) {
			// A grid corner (the search is clamped to the grid's range): its runs are there.
			found.Point, found.OnGrid = i, true
			res.Search = found
			return nil
		}
	}
	pt, err := point(len(res.Points), settings, "search: "+pointLabel(settings))
	if err != nil {
		return err
	}
	found.Point = pt.Index
	res.Points = append(res.Points, pt)
	res.Search = found
	return nil
}

// sameSettings reports whether a and b set the same paths to the same values (durations
// compared as durations: 1s and 1000ms are one setting).
func sameSettings(a, b []Setting) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path {
			return false
		}
		if a[i].Value == b[i].Value {
			continue
		}
		da, errA := time.ParseDuration(a[i].Value)
		db, errB := time.ParseDuration(b[i].Value)
		if errA != nil || errB != nil || da != db {
			return false
		}
	}
	return true
}
