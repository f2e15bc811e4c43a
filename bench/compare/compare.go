package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/internal/summary"
)

// Side is one side of a comparison: the summaries of one or more runs of one configuration.
type Side struct {
	// Path is what the user named: a summary.json or a directory of runs.
	Path string
	// Files are the summary files read, in run order.
	Files []string
	Runs  []*summary.Summary
}

// maxSideRuns bounds how many summaries one side may hold (a guard against pointing compare
// at a huge tree by mistake).
const maxSideRuns = 1000

// LoadSide reads one side. path is a summary.json, or a directory: DIR/*/summary.json (what
// `xdslab run --repeat K` writes as DIR/run-1 … DIR/run-K), taken in natural order (run-2
// before run-10), or else DIR/summary.json (one run's output directory).
func LoadSide(path string) (*Side, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("compare: %w: give a summary.json or a directory of runs", err)
	}
	side := &Side{Path: path}
	if !st.IsDir() {
		side.Files = []string{path}
	} else {
		files, err := sideFiles(path)
		if err != nil {
			return nil, err
		}
		side.Files = files
	}
	for _, f := range side.Files {
		s, err := summary.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		side.Runs = append(side.Runs, s)
	}
	return side, nil
}

// NewSide builds a side from summaries already in memory (labelled path).
func NewSide(path string, runs ...*summary.Summary) *Side {
	s := &Side{Path: path, Runs: runs}
	for i := range runs {
		s.Files = append(s.Files, fmt.Sprintf("%s#%d", path, i+1))
	}
	return s
}

// file names the side's run i: its file, or PATH#i+1 for a side built without file names.
func (s *Side) file(i int) string {
	if i < len(s.Files) {
		return s.Files[i]
	}
	return fmt.Sprintf("%s#%d", s.Path, i+1)
}

func sideFiles(dir string) ([]string, error) {
	var files []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var subs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		f := filepath.Join(dir, e.Name(), "summary.json")
		if _, err := os.Stat(f); err == nil {
			subs = append(subs, e.Name())
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("compare: %w", err)
		}
	}
	slices.SortFunc(subs, naturalOrder)
	for _, s := range subs {
		files = append(files, filepath.Join(dir, s, "summary.json"))
	}
	if len(files) == 0 {
		// A single run's output directory.
		top := filepath.Join(dir, "summary.json")
		if _, err := os.Stat(top); err == nil {
			files = append(files, top)
		}
	}
	if len(files) == 0 {
		if deeper, _ := filepath.Glob(filepath.Join(dir, "*", "*", "summary.json")); len(deeper) > 0 {
			// A tune's --out: point-N/run-K/summary.json, a side per point.
			return nil, fmt.Errorf("compare: %s holds runs two levels down (%s): compare two of its directories, e.g. %s %s",
				dir, deeper[0], filepath.Dir(filepath.Dir(deeper[0])), filepath.Join(dir, "point-1"))
		}
		return nil, fmt.Errorf("compare: %s holds no summary.json (nor */summary.json): run 'xdslab run --repeat K --out %s' first, or give a summary file", dir, dir)
	}
	if len(files) > maxSideRuns {
		return nil, fmt.Errorf("compare: %s holds %d summaries, more than %d: point compare at one run directory", dir, len(files), maxSideRuns)
	}
	return files, nil
}

// naturalOrder orders strings with their digit runs compared as numbers.
func naturalOrder(a, b string) int {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(a[:da], 10, 64)
			nb, _ := strconv.ParseUint(b[:db], 10, 64)
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitPrefix(s string) int {
	i := 0
	for i < len(s) && i < 18 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// seed returns the seed every run of the side was made with, and false when the runs do not
// record one or disagree.
func (s *Side) seed() (uint64, bool) {
	var seed uint64
	for i, r := range s.Runs {
		var cfg struct {
			Seed *uint64 `json:"seed"`
		}
		if len(r.Config) == 0 || json.Unmarshal(r.Config, &cfg) != nil || cfg.Seed == nil {
			return 0, false
		}
		if i > 0 && *cfg.Seed != seed {
			return 0, false
		}
		seed = *cfg.Seed
	}
	return seed, len(s.Runs) > 0
}

// summaryKind says what wrote a summary, as compare tells them apart: a whole run (xdslab run,
// or xdslab merge of a distributed run's shards), a standalone fleet, one shard of a
// distributed run, or a distributed run's simulator. Each holds other metrics (a shard a part
// of the clients, the simulator none of the clients'), so only summaries of one kind compare.
func summaryKind(r *summary.Summary) string {
	switch {
	case r.Metadata.Command == "sim":
		return "a distributed run's simulator summary (xdslab sim --publish)"
	case r.Metadata.Segment != nil && len(r.Metadata.Shards) == 0:
		return "one shard of a distributed run (xdslab fleet --segment)"
	case r.Metadata.Command == "fleet":
		return "a standalone fleet's summary (xdslab fleet)"
	}
	return "a whole run's summary (xdslab run, or xdslab merge of a distributed run)"
}

// checkKinds refuses sides whose summaries are of different kinds (summaryKind): their
// figures differ by construction, and every difference would read as a regression.
func checkKinds(base, nw *Side) error {
	want := summaryKind(base.Runs[0])
	for _, side := range []*Side{base, nw} {
		for i, r := range side.Runs {
			if k := summaryKind(r); k != want {
				return fmt.Errorf("compare: %s is %s, but %s is %s: compare summaries of one kind (the merged summary of a distributed run, not its shards or its simulator's)",
					side.file(i), k, base.file(0), want)
			}
		}
	}
	return nil
}

// scenarioOf is the name of the scenario a run ran: its config's name, else its "scenario"
// label (a merged summary's), else "".
func scenarioOf(r *summary.Summary) string {
	var cfg struct {
		Name string `json:"name"`
	}
	if len(r.Config) > 0 && json.Unmarshal(r.Config, &cfg) == nil && cfg.Name != "" {
		return cfg.Name
	}
	return r.Metadata.Labels["scenario"]
}

// scenarios lists the distinct scenario names of the side's runs, in run order ("" for runs
// that do not say), and per name the first file that ran it.
func (s *Side) scenarios() (names []string, first map[string]string) {
	first = map[string]string{}
	for i, r := range s.Runs {
		n := scenarioOf(r)
		if _, ok := first[n]; !ok {
			first[n] = s.file(i)
			names = append(names, n)
		}
	}
	return names, first
}

// scenarioNotes say when the runs compared are not all of one scenario: a side that pools runs
// of different scenarios, or two sides that ran different ones.
func scenarioNotes(base, nw *Side) []string {
	var notes []string
	bNames, bFirst := base.scenarios()
	nNames, nFirst := nw.scenarios()
	for _, side := range []struct {
		label string
		names []string
		first map[string]string
	}{{"base", bNames, bFirst}, {"new", nNames, nFirst}} {
		if len(side.names) < 2 {
			continue
		}
		var parts []string
		for _, n := range side.names {
			parts = append(parts, fmt.Sprintf("%q (%s)", n, side.first[n]))
		}
		notes = append(notes, fmt.Sprintf("%s pools runs of different scenarios: %s; its figures mix them and may not be comparable: give compare the runs of one scenario a side",
			side.label, strings.Join(parts, ", ")))
	}
	bSet, nSet := slices.Sorted(maps.Keys(bFirst)), slices.Sorted(maps.Keys(nFirst))
	if !slices.Equal(bSet, nSet) {
		quote := func(ns []string) string {
			q := make([]string, len(ns))
			for i, n := range ns {
				q[i] = strconv.Quote(n)
			}
			return strings.Join(q, ", ")
		}
		notes = append(notes, fmt.Sprintf("the sides ran different scenarios (base %s, new %s): their figures may not be comparable",
			quote(bNames), quote(nNames)))
	}
	return notes
}

// directionOf is which way m is worse: its class, unless opts.Directions names it.
func directionOf(m summary.Metric, opts Options) Direction {
	dir, _ := classify(m)
	for _, d := range opts.Directions {
		if d.Name == m.Name {
			dir = d.Dir
		}
	}
	return dir
}

// eventMetrics name the count of independent events a run saw, in order of preference.
var eventMetrics = []string{"xdslab_probe_events_total", "xdslab_sim_events_total"}

// events is the number of events all runs of the side saw (0 when they do not say).
func (s *Side) events() float64 {
	total := 0.0
	for _, r := range s.Runs {
		found := false
		for _, name := range eventMetrics {
			if m, ok := r.Results.Find(name, nil); ok && m.Type == summary.Counter {
				total += m.Values["count"]
				found = true
				break
			}
		}
		if !found {
			return 0
		}
	}
	return total
}

// Options configures Compare. Start from DefaultOptions.
type Options struct {
	// Threshold is the smallest change, as a fraction, that counts as a regression
	// (DefaultThreshold, 5%). Zero flags every significant change for the worse.
	Threshold float64
	// MetricThresholds override Threshold per metric or stat; the last match wins.
	MetricThresholds []MetricThreshold
	// Directions override the direction compare infers from a metric's name.
	Directions []DirectionOverride
	// Alpha is the significance level of the U test (default 0.05).
	Alpha float64
	// Confidence is the level of the printed intervals (default 0.95).
	Confidence float64
	// Gate, when set, limits the regressions that count to metrics whose name it matches;
	// the other rows are still shown and tested. CI gates usually name the few figures that
	// matter, because every extra gated row is one more chance of a false alarm.
	Gate *regexp.Regexp
	// AllowInconclusive accepts a comparison some gated rows of which cannot detect a change
	// (too few runs or events for their test): Failed then reports regressions only.
	AllowInconclusive bool
}

// DefaultThreshold is --threshold's default.
const DefaultThreshold = 0.05

// DefaultOptions returns the defaults: threshold 5%, alpha 0.05, 95% intervals.
func DefaultOptions() Options {
	return Options{Threshold: DefaultThreshold, Alpha: benchAlpha, Confidence: defaultConfidence}
}

func (o Options) withDefaults() Options {
	if o.Threshold < 0 || math.IsNaN(o.Threshold) {
		o.Threshold = 0
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		o.Alpha = benchAlpha
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		o.Confidence = defaultConfidence
	}
	return o
}

// benchAlpha is benchstat's default significance level.
const benchAlpha = 0.05

// Float is a float64 that encodes NaN as null and ±Inf as "+Inf"/"-Inf" in JSON.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte("null"), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// Estimate is one side's figure for a row: the centre (median of runs, or the histogram's
// stat) and its confidence interval.
type Estimate struct {
	Center Float `json:"center"`
	Lo     Float `json:"lo"`
	Hi     Float `json:"hi"`
	// N is the number of runs, or of histogram values drawn, the estimate rests on.
	N int `json:"n"`
	// Bounded (rows of MethodBounds): the figure is known only to lie between Lo and Hi — the
	// bucket (Lo, Hi] that holds it, widened over runs; Center is null, N counts the
	// observations. -Inf and +Inf are the open ends of the first and the +Inf bucket.
	Bounded bool `json:"bounded,omitempty"`
}

// The test methods a row may use.
const (
	// MethodRuns: U test over the per-run values (repeated runs on both sides).
	MethodRuns = "u-test/runs"
	// MethodHistogram: U test over values drawn from the HDR histograms (one run per side).
	MethodHistogram = "u-test/histogram"
	// MethodExact: a figure deterministic under the shared seed, compared for equality.
	MethodExact = "exact"
	// MethodNone: one run per side and no distribution: shown, never significant.
	MethodNone = "none"
	// MethodBounds: a quantile known only as a bucket bound on a side (a trend read from a
	// control plane's Prometheus histogram): a change is claimed only when the buckets that
	// hold the sides' confidence intervals do not overlap, and Delta is the smallest change
	// they prove, never a difference of invented points.
	MethodBounds = "bounds"
)

// Row is one compared figure: one stat of one metric entry.
type Row struct {
	Metric    string            `json:"metric"`
	Tags      map[string]string `json:"tags,omitempty"`
	Stat      string            `json:"stat"`
	Contains  summary.ValueType `json:"contains"`
	Direction Direction         `json:"worse"`
	Method    string            `json:"method"`
	Base      Estimate          `json:"base"`
	New       Estimate          `json:"new"`
	// Delta is the change of the centres, new/base − 1 (±Inf when base is 0). For MethodBounds
	// it is the smallest change the buckets prove (the true change is beyond it), null when
	// they overlap.
	Delta Float `json:"delta"`
	// P is the U test's p value (0 for a differing exact figure, 1 for no test).
	P           Float   `json:"p"`
	Significant bool    `json:"significant"`
	Threshold   float64 `json:"threshold"`
	// Regression: significant, worse, and beyond the threshold. Improvement: significant,
	// better, beyond the threshold.
	Regression  bool `json:"regression"`
	Improvement bool `json:"improvement"`
	// Inconclusive: a gated row, not significant, whose test could not have detected a change
	// however large (too few runs for the U test at alpha, one run and no distribution, a
	// percentile whose interval is unbounded): "~" there is no evidence of "no change".
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Note         string `json:"note,omitempty"`

	alpha float64
	// noPower: the row's test could not reject whatever the values (set by the method).
	noPower bool
	// byShift: a percentile row judged by the shift of the whole distribution.
	byShift bool
}

func (r Row) alphaOr() float64 {
	if r.alpha > 0 {
		return r.alpha
	}
	return benchAlpha
}

// Name is the row's label: metric{tags} stat.
func (r Row) Name() string { return r.Metric + summary.TagString(r.Tags) + " " + r.Stat }

// SideInfo describes a side in a report.
type SideInfo struct {
	Path  string   `json:"path"`
	Runs  int      `json:"runs"`
	Files []string `json:"files"`
	Seed  *uint64  `json:"seed,omitempty"`
}

// Report is the result of Compare.
type Report struct {
	Base       SideInfo `json:"base"`
	New        SideInfo `json:"new"`
	Alpha      float64  `json:"alpha"`
	Confidence float64  `json:"confidence"`
	Threshold  float64  `json:"threshold"`
	Rows       []Row    `json:"rows"`
	// OnlyBase and OnlyNew list metric entries present on one side only.
	OnlyBase []string `json:"onlyBase,omitempty"`
	OnlyNew  []string `json:"onlyNew,omitempty"`
	// Missing are the gated entries of OnlyBase whose direction says which way is worse: base
	// measured them and new did not (a run that crashed, stopped early or observed nothing).
	// Nothing measured is not "no change": each fails the comparison.
	Missing     []string `json:"missing,omitempty"`
	Regressions int      `json:"regressions"`
	// Inconclusive counts the gated rows that could not have detected a change (Row.Inconclusive).
	Inconclusive int `json:"inconclusive"`
	// AllowInconclusive: inconclusive rows do not fail the comparison (--allow-inconclusive).
	AllowInconclusive bool `json:"allowInconclusive,omitempty"`
	// Notes explain choices that apply to the whole report (seeds differ, …).
	Notes []string `json:"notes,omitempty"`

	// base and nw are the sides compared (for the html format's overlaid distributions).
	base, nw *Side
}

// Regressed reports whether any row is a regression (compare's exit status 1).
func (r *Report) Regressed() bool { return r.Regressions > 0 }

// Failed reports whether the comparison fails: a regression, or gated rows that could not
// detect one unless AllowInconclusive (compare exits 1 either way).
func (r *Report) Failed() bool {
	return r.Regressed() || len(r.Missing) > 0 || r.Inconclusive > 0 && !r.AllowInconclusive
}

// sideMetrics indexes one side: per metric key, the entry of each run (nil where absent).
type sideMetrics struct {
	byKey map[string][]*summary.Metric
	order []string
}

// indexSide leaves out trends that observed nothing (NoData): their zeros are not
// measurements, so a run that measured nothing is not "0s, improved by 100%", and a gated
// metric base measured and new did not is MISSING.
func indexSide(s *Side) sideMetrics {
	idx := sideMetrics{byKey: map[string][]*summary.Metric{}}
	for i, run := range s.Runs {
		for j := range run.Results.Metrics {
			m := &run.Results.Metrics[j]
			if m.NoData() {
				continue
			}
			k := m.Key()
			if _, ok := idx.byKey[k]; !ok {
				idx.byKey[k] = make([]*summary.Metric, len(s.Runs))
				idx.order = append(idx.order, k)
			}
			idx.byKey[k][i] = m
		}
	}
	return idx
}

// Compare compares every metric the two sides share, stat by stat.
func Compare(base, nw *Side, opts Options) (*Report, error) {
	if base == nil || nw == nil || len(base.Runs) == 0 || len(nw.Runs) == 0 {
		return nil, errors.New("compare: each side needs at least one summary")
	}
	opts = opts.withDefaults()
	if err := checkKinds(base, nw); err != nil {
		return nil, err
	}
	if err := checkInputs(base, opts); err != nil {
		return nil, err
	}
	rep := &Report{
		Base:  SideInfo{Path: base.Path, Runs: len(base.Runs), Files: base.Files},
		New:   SideInfo{Path: nw.Path, Runs: len(nw.Runs), Files: nw.Files},
		Alpha: opts.Alpha, Confidence: opts.Confidence, Threshold: opts.Threshold,
		AllowInconclusive: opts.AllowInconclusive,
		base:              base, nw: nw,
	}
	bSeed, bOK := base.seed()
	nSeed, nOK := nw.seed()
	if bOK {
		rep.Base.Seed = &bSeed
	}
	if nOK {
		rep.New.Seed = &nSeed
	}
	sameSeed := bOK && nOK && bSeed == nSeed
	if !sameSeed {
		rep.Notes = append(rep.Notes, "the sides do not share one recorded seed: deterministic figures are tested like measurements")
	}
	rep.Notes = append(rep.Notes, scenarioNotes(base, nw)...)
	for i, r := range nw.Runs {
		if len(r.Results.Metrics) == 0 && len(nw.Runs) > 1 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("new %s holds no metrics (that run measured nothing): new's figures rest on its other runs", nw.file(i)))
		}
	}
	if nb, nn := len(base.Runs), len(nw.Runs); !RunsCanReject(nb, nn, opts.Alpha) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d+%d runs: the U test over runs cannot reach p < %g with fewer than %d a side, so trends are tested on their HDR histograms (merged over each side's runs) and other figures are INCONCLUSIVE unless deterministic under one seed",
			nb, nn, opts.Alpha, MinRuns(opts.Alpha)))
	}
	bi, ni := indexSide(base), indexSide(nw)
	bEvents, nEvents := base.events(), nw.events()
	keys := slices.Clone(bi.order)
	slices.Sort(keys)
	for _, k := range keys {
		bm := bi.byKey[k]
		proto := firstMetric(bm)
		nm, ok := ni.byKey[k]
		if !ok {
			rep.OnlyBase = append(rep.OnlyBase, k)
			if dir := directionOf(*proto, opts); dir != Neutral && (opts.Gate == nil || opts.Gate.MatchString(proto.Name)) {
				rep.Missing = append(rep.Missing, k)
			}
			continue
		}
		if other := firstMetric(nm); other.Type != proto.Type {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s is a %s in base and a %s in new: not compared", k, proto.Type, other.Type))
			continue
		}
		_, exact := classify(*proto)
		dir := directionOf(*proto, opts)
		cache := &histPair{}
		for _, stat := range statsOf(proto.Type) {
			row := compareStat(proto, stat, bm, nm, bEvents, nEvents, exact && sameSeed, opts, cache)
			row.Direction = dir
			row.alpha = opts.Alpha
			row.Threshold = opts.Threshold
			for _, mt := range opts.MetricThresholds {
				if mt.matches(*proto, stat) {
					row.Threshold = mt.Fraction
				}
			}
			judge(&row)
			gated := opts.Gate == nil || opts.Gate.MatchString(row.Metric)
			if row.Regression && !gated {
				row.Regression = false
				row.Note = "regressed, but not gated (--gate)"
			}
			if row.Regression {
				rep.Regressions++
			}
			if row.noPower && !row.Significant && row.Direction != Neutral && gated {
				row.Inconclusive = true
				rep.Inconclusive++
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	for _, row := range rep.Rows {
		if row.Method == MethodBounds {
			rep.Notes = append(rep.Notes, "(bucket bounds) rows are quantiles read from a control plane's Prometheus buckets, known only as the bucket that holds them: they differ only when the buckets that hold their confidence intervals do not overlap, and by at least the change shown")
			break
		}
	}
	for _, k := range ni.order {
		if _, ok := bi.byKey[k]; !ok {
			rep.OnlyNew = append(rep.OnlyNew, k)
		}
	}
	slices.Sort(rep.OnlyNew)
	return rep, nil
}

func firstMetric(ms []*summary.Metric) *summary.Metric {
	for _, m := range ms {
		if m != nil {
			return m
		}
	}
	return nil
}

// values returns the stat of every run that has the metric.
func values(ms []*summary.Metric, stat string) []float64 {
	var out []float64
	for _, m := range ms {
		if m == nil {
			continue
		}
		if v, ok := m.Values[stat]; ok {
			out = append(out, v)
		} else if stat == "p(50)" {
			if v, ok := m.Values["med"]; ok {
				out = append(out, v)
			}
		}
	}
	return out
}

func allEqual(v []float64) bool {
	for _, x := range v[1:] {
		if x != v[0] {
			return false
		}
	}
	return true
}

// compareStat fills a row's estimates, p value and significance.
func compareStat(proto *summary.Metric, stat string, bm, nm []*summary.Metric, bEvents, nEvents float64, exactOK bool, opts Options, cache *histPair) Row {
	row := Row{Metric: proto.Name, Tags: proto.Tags, Stat: stat, Contains: proto.Contains}
	if anyBounded(bm, stat) || anyBounded(nm, stat) {
		testBounds(&row, bm, nm, stat, opts.Confidence)
		return row
	}
	bv, nv := values(bm, stat), values(nm, stat)
	if len(bv) == 0 || len(nv) == 0 {
		row.Method = MethodNone
		row.Base, row.New = pointEstimate(bv), pointEstimate(nv)
		row.P = 1
		row.Note = "stat missing on one side"
		return row
	}
	switch {
	case exactOK && allEqual(bv) && allEqual(nv):
		row.Method = MethodExact
		row.Base, row.New = pointEstimate(bv), pointEstimate(nv)
		row.Significant = bv[0] != nv[0]
		row.P = 1
		if row.Significant {
			row.P = 0
		}
	case RunsCanReject(len(bv), len(nv), opts.Alpha):
		row.Method = MethodRuns
		row.Base = runsEstimate(bv, opts.Confidence)
		row.New = runsEstimate(nv, opts.Confidence)
		row.P = Float(UTest(bv, nv, opts.Alpha))
		row.Significant = float64(row.P) < opts.Alpha
		if exactOK {
			row.Note = "not deterministic across runs"
		}
	default:
		// Too few runs for the U test over runs to reject at alpha (one run, or 2-3 a side at
		// 0.05): a trend is tested on its histograms, merged over each side's runs.
		hp := cache.get(bm, nm, bEvents, nEvents, opts.Alpha)
		bh, nh, bErr, nErr := hp.b, hp.n, hp.bErr, hp.nErr
		if proto.Type == summary.Trend && bh != nil && nh != nil && bErr == nil && nErr == nil {
			testHistograms(&row, hp, opts)
			if len(bv) > 1 || len(nv) > 1 {
				row.Note = joinNote(fmt.Sprintf("%d+%d runs are too few for the U test over runs at alpha %g (it needs %d a side): tested on the histograms merged over each side's runs",
					len(bv), len(nv), opts.Alpha, MinRuns(opts.Alpha)), row.Note)
			}
			return row
		}
		row.Method = MethodNone
		row.Base, row.New = pointEstimate(bv), pointEstimate(nv)
		row.P = 1
		row.noPower = true
		row.Note = fmt.Sprintf("%d+%d runs and no distribution: the U test over runs needs %d a side at alpha %g; repeat runs (xdslab run --repeat K) to test it",
			len(bv), len(nv), MinRuns(opts.Alpha), opts.Alpha)
		if bErr != nil || nErr != nil {
			row.Note = "histogram unreadable: " + errors.Join(bErr, nErr).Error()
		}
	}
	return row
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// RunsCanReject reports whether the U test over n1 and n2 per-run values can reach
// p < alpha at all: its smallest p, with the two samples wholly apart, is 2/C(n1+n2, n1)
// (0.33 for 2+2, 0.10 for 3+3, 0.029 for 4+4). With fewer runs "~" would say nothing.
func RunsCanReject(n1, n2 int, alpha float64) bool {
	if n1 < 2 || n2 < 2 {
		return false
	}
	a, b := make([]float64, n1), make([]float64, n2)
	for i := range a {
		a[i] = float64(i)
	}
	for i := range b {
		b[i] = float64(n1 + i)
	}
	return UTest(a, b, alpha) < alpha
}

// MinRuns is the fewest runs a side (equal sides) with which the U test can reject at alpha.
func MinRuns(alpha float64) int {
	for n := 2; n < 50; n++ {
		if RunsCanReject(n, n, alpha) {
			return n
		}
	}
	return 50
}

func pointEstimate(v []float64) Estimate {
	c := Float(Median(v))
	return Estimate{Center: c, Lo: c, Hi: c, N: len(v)}
}

func runsEstimate(v []float64, conf float64) Estimate {
	s := summarize(v, conf)
	return Estimate{Center: Float(s.Center), Lo: Float(s.Lo), Hi: Float(s.Hi), N: s.N}
}

// scaledHist is a side's histograms merged, with the scale that converts their values to
// seconds (the first one's).
type scaledHist struct {
	h     *hdr.Histogram
	scale float64
	// events is the number of independent events the runs saw (0: unknown).
	events float64
}

// mergedHistogram merges the histograms of every run of a side (nil when a run has none or
// the scales differ).
func mergedHistogram(ms []*summary.Metric) (*scaledHist, error) {
	var out *scaledHist
	for _, m := range ms {
		if m == nil {
			continue
		}
		if m.Histogram == nil {
			return nil, nil
		}
		h, err := m.Histogram.Decode()
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = &scaledHist{h: h, scale: m.Histogram.Scale}
			continue
		}
		if m.Histogram.Scale != out.scale {
			return nil, nil
		}
		out.h.Merge(h)
	}
	if out == nil || out.h.TotalCount() == 0 {
		return nil, nil
	}
	return out, nil
}

// testHistograms tests two distributions: the U test over values drawn from each says
// whether they differ; for a percentile row the percentile's own intervals must also be
// disjoint, so a shift in the bulk is not reported as a change of the tail (and the reverse).
// Each side contributes as many values as it has independent observations (effectiveN).
func testHistograms(row *Row, hp *histPair, opts Options) {
	row.Method = MethodHistogram
	row.Base = histEstimate(hp.b, row.Stat, opts.Confidence, len(hp.bs))
	row.New = histEstimate(hp.n, row.Stat, opts.Confidence, len(hp.ns))
	row.P = Float(hp.p)
	row.Significant = hp.p < opts.Alpha &&
		(row.Base.Hi < row.New.Lo || row.New.Hi < row.Base.Lo)
	if row.Significant {
		return
	}
	b, n := row.Base, row.New
	unbounded := math.IsInf(float64(b.Lo), 0) || math.IsInf(float64(b.Hi), 0) ||
		math.IsInf(float64(n.Lo), 0) || math.IsInf(float64(n.Hi), 0)
	if !unbounded {
		return // the intervals are finite and overlap: no change at this percentile
	}
	// Too few events to bound this percentile (11 events cannot place a p(99)): its own
	// intervals can never be disjoint. When the whole distribution moved (the U test) the same
	// way as the percentile, the percentile is judged by that shift; otherwise the row cannot
	// tell, and says so (inconclusive), rather than "~".
	d := float64(n.Center) - float64(b.Center)
	if hp.p < opts.Alpha && hp.shift != 0 && d != 0 && (d > 0) == (hp.shift > 0) {
		row.Significant, row.byShift = true, true
		row.Note = "this percentile's interval is unbounded (too few events to place it); judged by the shift of the whole distribution (U test over the histograms)"
		return
	}
	row.noPower = true
	row.Note = "this percentile's interval is unbounded (too few events to place it) and the whole distribution moved the other way: cannot tell; run longer or repeat runs"
	if hp.p >= opts.Alpha {
		row.Note = "this percentile's interval is unbounded (too few events to place it): the distributions do not differ as a whole, but a change of this tail alone could not be seen; run longer or repeat runs"
	}
}

// histPair is the decoded histograms of one metric on both sides, the values drawn from
// them and the U test's p: computed once and shared by the metric's stat rows.
type histPair struct {
	done       bool
	b, n       *scaledHist
	bErr, nErr error
	bs, ns     []float64
	p          float64
	// shift is the sign of the distribution's move, new against base (median of the drawn
	// values, then their mean): +1 up, -1 down, 0 none.
	shift int
}

func (hp *histPair) get(bm, nm []*summary.Metric, bEvents, nEvents, alpha float64) *histPair {
	if hp.done {
		return hp
	}
	hp.done = true
	hp.b, hp.bErr = mergedHistogram(bm)
	hp.n, hp.nErr = mergedHistogram(nm)
	if hp.b == nil || hp.n == nil || hp.bErr != nil || hp.nErr != nil {
		return hp
	}
	hp.b.events, hp.n.events = bEvents, nEvents
	hp.bs = histSamples(hp.b.h, hp.b.scale, effectiveN(hp.b.h.TotalCount(), bEvents))
	hp.ns = histSamples(hp.n.h, hp.n.scale, effectiveN(hp.n.h.TotalCount(), nEvents))
	hp.p = UTest(hp.bs, hp.ns, alpha)
	hp.shift = sign(Median(hp.ns) - Median(hp.bs))
	if hp.shift == 0 {
		hp.shift = sign(mean(hp.ns) - mean(hp.bs))
	}
	return hp
}

func histEstimate(sh *scaledHist, stat string, conf float64, n int) Estimate {
	h, scale := sh.h, sh.scale
	if q, ok := trendQuantile(stat); ok {
		lo, hi := quantileCI(h, scale, q, conf, n)
		return Estimate{Center: Float(float64(h.ValueAtPercentile(100*q)) * scale), Lo: Float(lo), Hi: Float(hi), N: n}
	}
	// avg: the mean with its normal-approximation interval.
	mean := h.Mean() * scale
	half := normalQuantile(0.5+conf/2) * h.StdDev() * scale / math.Sqrt(float64(max(n, 1)))
	return Estimate{Center: Float(mean), Lo: Float(mean - half), Hi: Float(mean + half), N: n}
}

// judge sets the row's delta, regression and improvement. A bounds row's delta is already the
// smallest change its buckets prove, so reaching the threshold is enough.
func judge(r *Row) {
	b, n := float64(r.Base.Center), float64(r.New.Center)
	switch {
	case r.Method == MethodBounds:
	case math.IsNaN(b) || math.IsNaN(n):
		r.Delta = Float(math.NaN())
	case b == n:
		r.Delta = 0
	case b == 0:
		r.Delta = Float(math.Inf(int(math.Copysign(1, n))))
	default:
		r.Delta = Float(n/b - 1)
	}
	d := float64(r.Delta)
	if !r.Significant || math.IsNaN(d) || r.Direction == Neutral {
		return
	}
	beyond := math.Abs(d) > r.Threshold || r.Method == MethodBounds && math.Abs(d) >= r.Threshold
	worse := (r.Direction == HigherIsWorse && d > 0) || (r.Direction == LowerIsWorse && d < 0)
	r.Regression = beyond && worse
	r.Improvement = beyond && !worse
}

// FormatDelta renders a row's change the way benchstat does: "~" when not significant; a
// bounds row's proven change as "> +12.00%" or "< -50.00%".
func (r Row) FormatDelta() string {
	d := float64(r.Delta)
	switch {
	case !r.Significant:
		return "~"
	case r.Method == MethodBounds && math.IsNaN(d):
		return "changed"
	case r.Method == MethodBounds && d >= 0:
		return fmt.Sprintf("> %+.2f%%", 100*d)
	case r.Method == MethodBounds:
		return fmt.Sprintf("< %+.2f%%", 100*d)
	case math.IsNaN(d):
		return "?"
	case math.IsInf(d, 1):
		return "+∞"
	case math.IsInf(d, -1):
		return "-∞"
	}
	return fmt.Sprintf("%+.2f%%", 100*d)
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(max(len(v), 1))
}
