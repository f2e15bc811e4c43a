package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/compare"
	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/threshold"
)

// RunFunc runs one repeat of one grid point and returns its summary. run.Run wrapped by
// the CLI is the real one; tests inject fakes.
type RunFunc func(ctx context.Context, sc *scenarios.Scenario, info RunInfo) (*summary.Summary, error)

// RunInfo says which run a RunFunc call is.
type RunInfo struct {
	Point  int // 0-based grid index
	Repeat int // 1-based
	Label  string
}

// paramAliases are the short names of the usual tuning knobs.
var paramAliases = map[string]string{
	"minQuiet":     "controlPlane.debounce.minQuiet",
	"maxDelay":     "controlPlane.debounce.maxDelay",
	"endpoints":    "controlPlane.debounce.endpoints",
	"pushThrottle": "controlPlane.pushThrottle",
	"policy":       pathPolicy,
	"maxQuiet":     "controlPlane.debounce.adaptive.maxQuiet",
	"costFactor":   "controlPlane.debounce.adaptive.costFactor",
	"weight":       "controlPlane.debounce.adaptive.weight",
}

// pathPolicy is the scenario path of the debounce policy; pathAdaptive prefixes the adaptive
// policy's parameters, which the fixed policy ignores.
const (
	pathPolicy   = "controlPlane.debounce.policy"
	pathAdaptive = "controlPlane.debounce.adaptive."
)

// Param is one swept scenario field: --param NAME=V1,V2,… where NAME is a short name
// (minQuiet, maxDelay, endpoints, pushThrottle; policy and the adaptive policy's maxQuiet,
// costFactor, weight) or any scenario path (scenarios.Set).
type Param struct {
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	Values []string `json:"values"`
}

// ParseParam parses NAME=V1,V2,….
func ParseParam(s string) (Param, error) {
	name, vals, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return Param{}, fmt.Errorf("--param %q: write NAME=V1,V2,… e.g. minQuiet=50ms,100ms,200ms", s)
	}
	p := Param{Name: name, Path: name}
	if full, ok := paramAliases[name]; ok {
		p.Path = full
	} else if !strings.ContainsAny(name, ".[") && !slices.Contains(topLevelKeys(), name) {
		// A typo of a short name would otherwise be reported as an unknown top-level field,
		// with the top-level keys as the choices.
		aliases := slices.Sorted(maps.Keys(paramAliases))
		fix := "use a short name (" + strings.Join(aliases, ", ") + ") or a scenario path such as controlPlane.flowControl.enabled or clients[0].count"
		if near := suggest.Nearest(name, aliases); near != "" {
			fix = "did you mean " + strconv.Quote(near) + "? (or " + fix + ")"
		}
		return Param{}, fmt.Errorf("--param %q: unknown parameter %q; %s", s, name, fix)
	}
	for _, v := range splitValues(vals) {
		v = strings.TrimSpace(v)
		if v == "" {
			return Param{}, fmt.Errorf("--param %q: empty value: write NAME=V1,V2,… with no empty entries", s)
		}
		if slices.Contains(p.Values, v) {
			return Param{}, fmt.Errorf("--param %q: value %q is listed twice", s, v)
		}
		p.Values = append(p.Values, v)
	}
	return p, nil
}

// topLevelKeys are the keys of a scenario file's top level, each a parameter too.
func topLevelKeys() []string {
	t := reflect.TypeFor[scenarios.Scenario]()
	var out []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			if k, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); k != "" && k != "-" {
				out = append(out, k)
			}
		}
	}
	return out
}

// splitValues splits V1,V2,… at the commas outside brackets and quotes, so that a value
// written as in a scenario file may hold a flow mapping or list ("{dist: exp, mean: 4}",
// "['p(99)<1s', 'avg<500ms']").
//
// A quote opens only where YAML reads one, at the start of a scalar (after a comma, a bracket,
// a colon or only blanks): the apostrophe in "it's a,b" is a letter, and the comma splits.
func splitValues(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	var prev byte // the last character before this one that is not a blank; 0 at a value's start
	for i := 0; i < len(s); i++ {
		c := s[i]
		opens := prev == 0 || prev == ',' || prev == '{' || prev == '[' || prev == ':'
		switch {
		case quote != 0:
			switch {
			case c == '\\' && quote == '"' && i+1 < len(s):
				i++ // an escape inside double quotes: the next character is the value's
			case c == '\'' && quote == '\'' && i+1 < len(s) && s[i+1] == '\'':
				i++ // '' inside single quotes is one apostrophe
			case c == quote:
				quote = 0
			}
		case (c == '\'' || c == '"') && opens:
			quote = c
		case c == '{' || c == '[':
			depth++
		case (c == '}' || c == ']') && depth > 0:
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
			prev = 0
			continue
		}
		if c != ' ' && c != '\t' {
			prev = c
		}
	}
	return append(out, s[start:])
}

// Cost is what the Pareto frontier trades latency against.
type Cost string

// The costs.
const (
	CostPushCycles Cost = "push-cycles"
	CostCPU        Cost = "cpu"
)

// Options configures Tune.
type Options struct {
	Params []Param
	// Repeats runs each point this many times (default 1); figures are medians over repeats.
	Repeats int
	// Run runs one repeat; required unless EstimateOnly.
	Run RunFunc
	// Cost is the frontier's cost axis (default push cycles).
	Cost Cost
	// EstimateOnly skips the real runs: the table and the frontier use the fast estimate
	// (predicted push cycles against predicted debounce delay p99).
	EstimateOnly bool
	// Progress receives a line per run; nil writes nothing.
	Progress io.Writer
	// MaxPoints bounds the grid (default 200) so a typo cannot start days of runs.
	MaxPoints int
	// Search adds one point found by a gonum/optimize search of the fast estimate between
	// the grid's minQuiet and maxDelay values (see Search), and runs it like the others.
	Search bool
	// Interleave runs the grid repeat by repeat (every point's run 1, then every point's
	// run 2, …) instead of point by point, so a change in the machine's load during the tune
	// spreads over every point instead of biasing the ones that ran then.
	Interleave bool
	// Alpha is the significance level of the policy comparison's U tests (default 0.05).
	Alpha float64
}

// Setting is one parameter's value at a grid point.
type Setting struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// PointFigures are a point's measured figures, medians over its repeats (NaN when the runs
// do not report one). The debounce delay comes from the control plane's Prometheus buckets:
// its mean is exact, its p99 only a bound (bound), and neither ranks points.
type PointFigures struct {
	PushLatencyP50    compare.Float `json:"pushLatencyP50Seconds"`
	PushLatencyP99    compare.Float `json:"pushLatencyP99Seconds"`
	ConvergenceP99    compare.Float `json:"convergenceP99Seconds"`
	PushCycles        compare.Float `json:"pushCycles"`
	EventsPerPush     compare.Float `json:"eventsPerPush"`
	CPUSeconds        compare.Float `json:"controlPlaneCPUSeconds"`
	BytesSent         compare.Float `json:"bytesSent"`
	DebounceDelayMean compare.Float `json:"debounceDelayMeanSeconds"`
	// DebounceDelayP99 bounds the median p99 debounce delay: nil when no run bounds it.
	DebounceDelayP99 *summary.Bound `json:"debounceDelayP99BoundSeconds,omitempty"`
}

// Point is one grid point.
type Point struct {
	Index    int       `json:"index"`
	Settings []Setting `json:"settings"`
	Label    string    `json:"label"`
	// Policy is the point's debounce policy (fixed or adaptive).
	Policy string `json:"policy"`
	Runs   int    `json:"runs"`
	// Measured is nil for an estimate-only tune or a point whose runs failed.
	Measured *PointFigures `json:"measured,omitempty"`
	Estimate Estimate      `json:"estimate"`
	// MeetsThresholds: every latency threshold of the scenario holds on the medians.
	MeetsThresholds  bool     `json:"meetsThresholds"`
	FailedThresholds []string `json:"failedThresholds,omitempty"`
	Pareto           bool     `json:"pareto"`
	Knee             bool     `json:"knee"`
	Recommended      bool     `json:"recommended"`
	Error            string   `json:"error,omitempty"`

	// perRun are the figures of each run, for the policy comparison's U tests.
	perRun []PointFigures
}

// Latency is the point's latency axis: measured p99 push latency, or the estimated
// debounce delay p99 for an estimate-only tune.
func (p Point) Latency() float64 {
	if p.Measured != nil {
		return float64(p.Measured.PushLatencyP99)
	}
	return float64(p.Estimate.DebounceDelayP99)
}

// CostValue is the point's cost axis.
func (p Point) CostValue(c Cost) float64 {
	if p.Measured == nil {
		return float64(p.Estimate.PushCycles)
	}
	if c == CostCPU {
		return float64(p.Measured.CPUSeconds)
	}
	return float64(p.Measured.PushCycles)
}

func (p Point) usable(c Cost) bool {
	x, y := p.CostValue(c), p.Latency()
	return p.Error == "" && !math.IsNaN(x) && !math.IsNaN(y)
}

// EstimateCheck is how far the fast estimate was from the real run at one point.
type EstimateCheck struct {
	Point                  int           `json:"point"`
	PushCyclesPredicted    compare.Float `json:"pushCyclesPredicted"`
	PushCyclesMeasured     compare.Float `json:"pushCyclesMeasured"`
	PushCyclesError        compare.Float `json:"pushCyclesRelativeError"`
	DebounceDelayPredicted compare.Float `json:"debounceDelayMeanPredictedSeconds"`
	DebounceDelayMeasured  compare.Float `json:"debounceDelayMeanMeasuredSeconds"`
	DebounceDelayError     compare.Float `json:"debounceDelayRelativeError"`
}

// Result is the outcome of a tune.
type Result struct {
	Scenario     string   `json:"scenario"`
	Params       []Param  `json:"params"`
	Repeats      int      `json:"repeats"`
	Cost         Cost     `json:"cost"`
	EstimateOnly bool     `json:"estimateOnly"`
	Thresholds   []string `json:"latencyThresholds"`
	// Budget is the bound of the scenario's p(99) push latency threshold (seconds), drawn
	// on the plot; nil when the scenario has none.
	Budget *float64 `json:"pushLatencyP99Budget,omitempty"`
	Points []Point  `json:"points"`
	// Frontier lists the Pareto points' indices by increasing cost.
	Frontier []int `json:"frontier"`
	// Knee and Recommended are point indices, -1 for none.
	Knee        int    `json:"knee"`
	Recommended int    `json:"recommended"`
	Why         string `json:"why"`
	// Check compares the estimate with the real run at the recommended point.
	Check *EstimateCheck `json:"estimateCheck,omitempty"`
	// Search is the searched point (Options.Search); SearchNote says why there is none.
	Search     *Search `json:"search,omitempty"`
	SearchNote string  `json:"searchNote,omitempty"`
	// Policies compares the best adaptive point with the best fixed one when the tune ran
	// both policies (see PolicyComparison).
	Policies *PolicyComparison `json:"policyComparison,omitempty"`
	// Duplicates lists the grid points left out because an earlier point runs the same
	// scenario (the fixed policy ignores the adaptive policy's parameters).
	Duplicates []string `json:"duplicates,omitempty"`
	// Interleaved: the runs went repeat by repeat over the grid.
	Interleaved bool `json:"interleaved,omitempty"`
	// Interrupted says what a tune stopped early (Ctrl-C, a deadline) had run: its table,
	// frontier and recommendation cover only the runs that finished. Empty for a whole tune.
	Interrupted string `json:"interrupted,omitempty"`
}

// notRun marks a point an interrupted tune never ran.
const notRun = "not run: the tune was interrupted"

// grid expands the parameters into points (the first parameter varies slowest).
func grid(params []Param) [][]Setting {
	out := [][]Setting{nil}
	for _, p := range params {
		var next [][]Setting
		for _, prefix := range out {
			for _, v := range p.Values {
				next = append(next, append(slices.Clone(prefix), Setting{Name: p.Name, Path: p.Path, Value: v}))
			}
		}
		out = next
	}
	return out
}

// policyOf is the debounce policy sc runs with.
func policyOf(sc *scenarios.Scenario) string {
	if p := sc.ControlPlane.Debounce.Policy; p != "" {
		return p
	}
	return "fixed"
}

// dedupe drops the grid points that run the same scenario as an earlier one: with the
// fixed policy, points that differ only in the adaptive policy's parameters. It returns the
// points kept and a note for each one dropped.
func dedupe(sc *scenarios.Scenario, points [][]Setting) ([][]Setting, []string) {
	var kept [][]Setting
	var notes []string
	seen := map[string]string{}
	for _, settings := range points {
		psc := sc.Clone()
		fixed := true
		for _, s := range settings {
			if err := psc.Set(s.Path, s.Value); err != nil {
				fixed = false // an invalid point is kept: it reports its own error
				break
			}
		}
		if !fixed || policyOf(psc) != "fixed" {
			kept = append(kept, settings)
			continue
		}
		key := pointLabel(withoutAdaptive(settings))
		if first, ok := seen[key]; ok {
			notes = append(notes, fmt.Sprintf("%s (the same run as %s: the fixed policy ignores the adaptive parameters)", pointLabel(settings), first))
			continue
		}
		seen[key] = key
		kept = append(kept, settings)
	}
	return kept, notes
}

// onlyAdaptive reports whether every swept parameter is one of the adaptive policy's.
func onlyAdaptive(params []Param) bool {
	for _, p := range params {
		if !strings.HasPrefix(p.Path, pathAdaptive) {
			return false
		}
	}
	return len(params) > 0
}

// paramNames names the swept parameters, for messages: "--param weight, --param maxQuiet".
func paramNames(params []Param) string {
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = "--param " + p.Name
	}
	return strings.Join(names, ", ")
}

// withoutAdaptive is settings without the adaptive policy's parameters.
func withoutAdaptive(settings []Setting) []Setting {
	var out []Setting
	for _, s := range settings {
		if !strings.HasPrefix(s.Path, pathAdaptive) {
			out = append(out, s)
		}
	}
	return out
}

func pointLabel(s []Setting) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = x.Name + "=" + x.Value
	}
	return strings.Join(parts, " ")
}

// Tune runs the grid of opts.Params over sc, each point opts.Repeats times, then finds the
// frontier, the knee and the recommendation. A point whose settings are invalid (maxDelay
// below minQuiet, …) or whose runs fail is kept with its Error. A cancelled ctx stops the tune
// at the run in progress: Tune then returns the result of the runs that finished (marked
// Interrupted, the points never run kept with their Error) together with the context's error.
func Tune(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Result, error) {
	if sc == nil {
		return nil, errors.New("tune: no scenario")
	}
	if len(opts.Params) == 0 {
		return nil, errors.New("tune: no --param: give at least one, e.g. --param minQuiet=50ms,100ms,200ms")
	}
	if opts.Repeats <= 0 {
		opts.Repeats = 1
	}
	if opts.Cost == "" {
		opts.Cost = CostPushCycles
	}
	if opts.Cost != CostPushCycles && opts.Cost != CostCPU {
		return nil, fmt.Errorf("tune: cost %q: use %s or %s", opts.Cost, CostPushCycles, CostCPU)
	}
	if opts.EstimateOnly && opts.Cost == CostCPU {
		return nil, errors.New("tune: the estimate predicts push cycles, not CPU: use --cost push-cycles with --estimate-only")
	}
	if opts.Run == nil && !opts.EstimateOnly {
		return nil, errors.New("tune: no run function")
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = 200
	}
	seen := map[string]bool{}
	for _, p := range opts.Params {
		if seen[p.Path] {
			return nil, fmt.Errorf("tune: %s is swept twice: give each parameter once", p.Path)
		}
		seen[p.Path] = true
		// Every value is checked here, before anything runs or is written: an unknown
		// parameter or a bad value would otherwise fail every point in turn.
		for _, v := range p.Values {
			if err := sc.Clone().Set(p.Path, v); err != nil {
				return nil, fmt.Errorf("tune: --param %s=%s: %w", p.Name, v, err)
			}
		}
	}
	if onlyAdaptive(opts.Params) && policyOf(sc) == "fixed" {
		// Every point would run the same fixed-policy scenario: a sweep of nothing.
		verb, it := "applies", "it"
		if len(opts.Params) > 1 {
			verb, it = "apply", "them"
		}
		return nil, fmt.Errorf("tune: %s %s only to the adaptive debounce policy, and %s runs the fixed one, which ignores %s: add --param policy=adaptive (or policy=fixed,adaptive to compare), or set controlPlane.debounce.policy: adaptive",
			paramNames(opts.Params), verb, sc.Name, it)
	}
	points := grid(opts.Params)
	if len(points) > opts.MaxPoints {
		return nil, fmt.Errorf("tune: the grid has %d points, more than %d: sweep fewer values", len(points), opts.MaxPoints)
	}
	points, dups := dedupe(sc, points)
	res := &Result{Scenario: sc.Name, Params: opts.Params, Repeats: opts.Repeats, Cost: opts.Cost,
		EstimateOnly: opts.EstimateOnly, Knee: -1, Recommended: -1, Duplicates: dups}
	ths := latencyThresholds(sc)
	for _, th := range ths {
		res.Thresholds = append(res.Thresholds, th.selector+": "+th.t.Source)
		if th.selector == "xdslab_push_latency_seconds" && th.t.Key() == "p(99)" && (th.t.Op == "<" || th.t.Op == "<=") {
			b := th.t.Value
			res.Budget = &b
		}
	}
	est := newEstimator(ctx)
	total := len(points)
	if opts.Search {
		total++
	}
	// The ETA counts the runs left at the mean duration of the runs so far.
	var runTime time.Duration
	runsDone := 0
	// prepare sets up one point: its scenario and its estimate. A point it cannot set up
	// comes back with its Error and a nil scenario.
	prepare := func(i int, settings []Setting, label string) (Point, *scenarios.Scenario) {
		pt := Point{Index: i, Settings: settings, Label: label}
		psc := sc.Clone()
		for _, s := range settings {
			if err := psc.Set(s.Path, s.Value); err != nil {
				pt.Error = "invalid settings: " + err.Error()
				return pt, nil
			}
		}
		pt.Policy = policyOf(psc)
		if pt.Policy == "fixed" && label == pointLabel(settings) {
			// The adaptive parameters do not apply: leave them out of the label.
			pt.Label = pointLabel(withoutAdaptive(settings))
		}
		e, err := est.estimate(psc)
		if err != nil {
			pt.Error = "estimate: " + err.Error()
			return pt, nil
		}
		pt.Estimate = e
		if opts.EstimateOnly {
			pt.MeetsThresholds, pt.FailedThresholds = estimateMeets(ths, pt.Estimate)
		}
		return pt, psc
	}
	// runOnce runs repeat k of a prepared point; a failed run sets the point's Error.
	runOnce := func(pt *Point, psc *scenarios.Scenario, k int, eta string) (*summary.Summary, error) {
		if opts.Progress != nil {
			// Points are numbered as in the table and the point-N directories: from 0.
			fmt.Fprintf(opts.Progress, "tune: point %d (of 0..%d) %s, run %d/%d, %s\n", pt.Index, total-1, pt.Label, k, opts.Repeats, eta)
		}
		began := time.Now()
		s, err := opts.Run(ctx, psc, RunInfo{Point: pt.Index, Repeat: k, Label: pt.Label})
		runTime += time.Since(began)
		runsDone++
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("tune: %w", ctxErr)
		}
		if err != nil {
			pt.Error = fmt.Sprintf("run %d: %v", k, err)
			return nil, nil
		}
		return s, nil
	}
	// finish sets a point's figures from its runs.
	finish := func(pt *Point, runs []*summary.Summary) {
		pt.Runs = len(runs)
		f := pointFigures(runs)
		pt.Measured = &f
		for _, r := range runs {
			pt.perRun = append(pt.perRun, pointFigures([]*summary.Summary{r}))
		}
		pt.MeetsThresholds, pt.FailedThresholds = evalThresholds(ths, runs)
	}
	// point evaluates (estimates and, unless estimate-only, runs) one point, its repeats in a row.
	point := func(i int, settings []Setting, label string) (Point, error) {
		pt, psc := prepare(i, settings, label)
		if psc == nil || opts.EstimateOnly {
			return pt, nil
		}
		var runs []*summary.Summary
		for k := 1; k <= opts.Repeats; k++ {
			eta := "ETA after the first run"
			if runsDone > 0 {
				runsLeft := (total-i)*opts.Repeats - (k - 1)
				eta = fmt.Sprintf("ETA %s", (runTime / time.Duration(runsDone) * time.Duration(runsLeft)).Round(time.Second))
			}
			s, err := runOnce(&pt, psc, k, eta)
			if err != nil {
				if len(runs) > 0 {
					finish(&pt, runs) // the finished runs of an interrupted point still count
				} else {
					pt.Error = notRun
				}
				return pt, err
			}
			if s == nil {
				return pt, nil
			}
			runs = append(runs, s)
		}
		finish(&pt, runs)
		return pt, nil
	}
	// stopErr is the context's error once a run was interrupted: the tune stops there and
	// returns what it measured with it.
	var stopErr error
	if opts.Interleave && !opts.EstimateOnly {
		res.Interleaved = true
		pscs := make([]*scenarios.Scenario, len(points))
		runs := make([][]*summary.Summary, len(points))
		for i, settings := range points {
			pt, psc := prepare(i, settings, pointLabel(settings))
			res.Points = append(res.Points, pt)
			pscs[i] = psc
		}
		totalRuns := len(points) * opts.Repeats
		for k := 1; k <= opts.Repeats; k++ {
			for i := range res.Points {
				pt := &res.Points[i]
				if pscs[i] == nil || pt.Error != "" {
					continue
				}
				eta := "ETA after the first run"
				if runsDone > 0 {
					eta = fmt.Sprintf("ETA %s", (runTime / time.Duration(runsDone) * time.Duration(totalRuns-runsDone)).Round(time.Second))
				}
				s, err := runOnce(pt, pscs[i], k, eta)
				if err != nil {
					stopErr = err
					res.Interrupted = fmt.Sprintf("interrupted in repeat %d of %d at point %d, after %d of %d runs", k, opts.Repeats, i, runsDone-1, totalRuns)
					break
				}
				if s != nil {
					runs[i] = append(runs[i], s)
				}
			}
			if stopErr != nil {
				break
			}
		}
		for i := range res.Points {
			if pscs[i] == nil || res.Points[i].Error != "" {
				continue
			}
			if len(runs[i]) == 0 {
				res.Points[i].Error = notRun
				continue
			}
			finish(&res.Points[i], runs[i])
		}
	} else {
		for i, settings := range points {
			if stopErr != nil {
				res.Points = append(res.Points, Point{Index: i, Settings: settings, Label: pointLabel(settings), Error: notRun})
				continue
			}
			pt, err := point(i, settings, pointLabel(settings))
			if err != nil {
				stopErr = err
				res.Interrupted = fmt.Sprintf("interrupted at point %d (%d of %d runs of it finished), after %d of %d points", i, pt.Runs, opts.Repeats, i, len(points))
			}
			res.Points = append(res.Points, pt)
		}
	}
	if opts.Search && stopErr == nil {
		if err := addSearch(sc, res, est, point); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				stopErr = err
				res.Interrupted = "interrupted while running the searched point: the grid is complete"
			}
			res.SearchNote = err.Error()
		}
	}
	res.Frontier = paretoFrontier(res.Points, opts.Cost)
	for _, i := range res.Frontier {
		res.Points[i].Pareto = true
	}
	res.Knee = knee(res.Points, res.Frontier, opts.Cost)
	if res.Knee >= 0 {
		res.Points[res.Knee].Knee = true
	}
	res.Recommended, res.Why = recommend(res, len(ths) > 0)
	if res.Recommended >= 0 {
		res.Points[res.Recommended].Recommended = true
		res.Check = estimateCheck(res.Points[res.Recommended])
	}
	res.Policies = comparePolicies(res, len(ths) > 0, opts.Alpha)
	return res, stopErr
}

// figure reads one value of the untagged (or tagged) metric of every run; NaN when absent.
func figure(runs []*summary.Summary, name string, tags map[string]string, stat string) compare.Float {
	var vs []float64
	for _, r := range runs {
		if m, ok := r.Results.Find(name, tags); ok {
			if v, ok := m.Values[stat]; ok {
				vs = append(vs, v)
			}
		}
	}
	return compare.Float(compare.Median(vs))
}

// bound bounds the median over runs of a value that some run knows only as a bucket bound
// (a trend read from the control plane's Prometheus histogram): each run's value lies in
// (gt, le], so their median lies above the median of the gts and at most the median of the
// les (order statistics are monotone). A run with a point value v counts as the bound
// (v⁻, v]. ok is false when no run bounds the value.
func bound(runs []*summary.Summary, name string, tags map[string]string, stat string) (summary.Bound, bool) {
	var los, his []float64
	bounded := false
	for _, r := range runs {
		m, ok := r.Results.Find(name, tags)
		if !ok {
			continue
		}
		if b, ok := m.Bounded(stat); ok {
			los, his, bounded = append(los, b.Lower()), append(his, b.Upper()), true
		} else if v, ok := m.Values[stat]; ok {
			los, his = append(los, math.Nextafter(v, math.Inf(-1))), append(his, v)
		}
	}
	if !bounded {
		return summary.Bound{}, false
	}
	var out summary.Bound
	if lo := compare.Median(los); !math.IsInf(lo, -1) {
		out.Gt = &lo
	}
	if hi := compare.Median(his); !math.IsInf(hi, 1) {
		out.Le = &hi
	}
	return out, true
}

// pointFigures are the medians of the tune's figures over a point's runs.
func pointFigures(runs []*summary.Summary) PointFigures {
	f := PointFigures{
		PushLatencyP50:    figure(runs, "xdslab_push_latency_seconds", nil, "p(50)"),
		PushLatencyP99:    figure(runs, "xdslab_push_latency_seconds", nil, "p(99)"),
		ConvergenceP99:    figure(runs, "xdslab_convergence_seconds", nil, "p(99)"),
		PushCycles:        figure(runs, "xdslab_cp_push_cycles_total", nil, "count"),
		EventsPerPush:     figure(runs, "xdslab_debounce_events_per_push", nil, "value"),
		CPUSeconds:        figure(runs, "xdslab_cpu_seconds", map[string]string{"side": "controlplane"}, "value"),
		BytesSent:         figure(runs, "xdslab_fleet_bytes_received_total", nil, "count"),
		DebounceDelayMean: figure(runs, collect.MetricDebounceDelay, nil, "avg"),
	}
	if b, ok := bound(runs, collect.MetricDebounceDelay, nil, "p(99)"); ok {
		f.DebounceDelayP99 = &b
	}
	if math.IsNaN(float64(f.CPUSeconds)) {
		// Without a per-side profile the run reports the whole process.
		f.CPUSeconds = figure(runs, "xdslab_cpu_seconds", map[string]string{"side": "process"}, "value")
	}
	return f
}

// latencyThreshold is one of the scenario's thresholds on a time metric.
type latencyThreshold struct {
	selector string
	name     string
	tags     map[string]string
	t        threshold.Threshold
}

// latencyThresholds are the scenario's thresholds on latency: metrics whose names end in
// _seconds (push latency, convergence, debounce delay …).
func latencyThresholds(sc *scenarios.Scenario) []latencyThreshold {
	var out []latencyThreshold
	sels := make([]string, 0, len(sc.Thresholds))
	for sel := range sc.Thresholds {
		sels = append(sels, sel)
	}
	slices.Sort(sels)
	for _, sel := range sels {
		name := threshold.MetricName(sel)
		if !strings.HasSuffix(name, "_seconds") || strings.Contains(name, "cpu") {
			continue
		}
		for _, t := range sc.Thresholds[sel] {
			out = append(out, latencyThreshold{selector: sel, name: name, tags: threshold.MetricTags(sel), t: t})
		}
	}
	return out
}

// evalLatencyThresholds evaluates each threshold on the median over runs of the value it
// reads; a metric no run reports fails (a latency that was not measured is not met). A value
// the runs know only as bucket bounds (the control plane's Prometheus histograms) is met only
// when the bound of its median (bound) proves the threshold: an inconclusive bound is not
// met, and the failure says so — a bucket is never read as a point.
func evalThresholds(ths []latencyThreshold, runs []*summary.Summary) (bool, []string) {
	var failed []string
	for _, th := range ths {
		if b, ok := bound(runs, th.name, th.tags, th.t.Key()); ok {
			verdict, err := th.t.EvalBound(b.Lower(), b.Upper())
			if err != nil || verdict != threshold.Pass {
				why := "disproved"
				if verdict == threshold.Inconclusive {
					why = "inconclusive, counted as not met"
				}
				failed = append(failed, fmt.Sprintf("%s: %s (median %s %s, bucket bound: %s)", th.selector, th.t.Source,
					th.t.Key(), summary.FormatBound(summary.Time, b), why))
			}
			continue
		}
		v := figure(runs, th.name, th.tags, th.t.Key())
		if math.IsNaN(float64(v)) {
			failed = append(failed, th.selector+": "+th.t.Source+" (not measured)")
			continue
		}
		ok, err := th.t.Eval(map[string]float64{th.t.Key(): float64(v)})
		if err != nil || !ok {
			failed = append(failed, fmt.Sprintf("%s: %s (%s)", th.selector, th.t.Source, compare.FormatValue(float64(v), summary.Time)))
		}
	}
	return len(failed) == 0, failed
}

// estimateMeets checks the latency thresholds against the estimate: the debounce delay
// is a lower bound of push latency (the push and the network come on top), so a point whose
// predicted delay already breaks a threshold cannot meet it; one that passes may still fail
// in a real run. A p(N) threshold with N >= 90 reads the predicted delay p99, max reads the
// maximum, anything else the mean.
func estimateMeets(ths []latencyThreshold, e Estimate) (bool, []string) {
	var failed []string
	for _, th := range ths {
		v := float64(e.DebounceDelayMean)
		switch {
		case th.t.Agg == "max":
			v = float64(e.DebounceDelayMax)
		case th.t.Agg == "p" && th.t.Percentile >= 90:
			v = float64(e.DebounceDelayP99)
		}
		if math.IsNaN(v) {
			v = 0 // no push predicted: nothing delayed
		}
		if ok, err := th.t.Eval(map[string]float64{th.t.Key(): v}); err != nil || !ok {
			failed = append(failed, fmt.Sprintf("%s: %s (predicted debounce delay alone %s)", th.selector, th.t.Source, compare.FormatValue(v, summary.Time)))
		}
	}
	return len(failed) == 0, failed
}
