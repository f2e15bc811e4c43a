package merge

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/xdslab/xdslab/internal/summary"
)

// LabelRun is the metadata label holding a distributed run's identity: every process of one
// run (its fleet shards and its simulator) writes the same value, and a merged summary the
// value of the run it merged.
const LabelRun = "run"

// RunIDFromStart is the identity of the run that starts at t (--start-at): every process
// given the same start derives the same id without talking to the others, e.g.
// 20261206T074500Z.
func RunIDFromStart(t time.Time) string {
	return t.UTC().Format("20060102T150405.999999999Z")
}

var runIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidRunID checks an explicit run id (--run-id): a Kubernetes label value, so that it can
// name objects and files too.
func ValidRunID(id string) error {
	if !runIDRe.MatchString(id) {
		return fmt.Errorf("run id %q: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// RunOf is the run a summary belongs to: its run label; for a summary written without one
// (by an earlier version) the id derived from its start time, as a process of today derives
// it; "" when neither is known (a process started without --start-at or --run-id).
func RunOf(s *summary.Summary) string {
	if id := s.Metadata.Labels[LabelRun]; id != "" {
		return id
	}
	if s.Metadata.StartAt != nil {
		return RunIDFromStart(*s.Metadata.StartAt)
	}
	return ""
}

// Run is the inputs of one distributed run found among merge's inputs: fleet shards of one
// run id and one shard count, and the simulator summaries of that id.
type Run struct {
	ID     string // "" for inputs that carry no run id
	Shards int    // the shard count (0: only simulator summaries)
	Fleet  []Input
	Sims   []Input
	// Start is the run's start (--start-at), or its earliest process start when none was given.
	Start time.Time
}

// Name is how messages name the run.
func (r Run) Name() string {
	if r.ID == "" {
		return "(no run id)"
	}
	return r.ID
}

// Missing lists the shards the run lacks ("2/4").
func (r Run) Missing() []string {
	have := map[int]bool{}
	for _, in := range r.Fleet {
		have[segmentOf(in.Summary).Index] = true
	}
	var out []string
	for i := range r.Shards {
		if !have[i] {
			out = append(out, fmt.Sprintf("%d/%d", i, r.Shards))
		}
	}
	return out
}

// Repeated lists the shards two or more inputs claim ("shard 1/4: a.json, b.json").
func (r Run) Repeated() []string {
	by := map[int][]string{}
	for _, in := range r.Fleet {
		i := segmentOf(in.Summary).Index
		by[i] = append(by[i], in.Source)
	}
	var out []string
	for _, i := range slices.Sorted(maps.Keys(by)) {
		if len(by[i]) > 1 {
			out = append(out, fmt.Sprintf("shard %d/%d: %s", i, r.Shards, strings.Join(by[i], ", ")))
		}
	}
	return out
}

// Complete reports whether the run has every shard once and at most one simulator summary.
func (r Run) Complete() bool {
	return r.Shards > 0 && len(r.Missing()) == 0 && len(r.Repeated()) == 0 && len(r.Sims) <= 1
}

// Sources lists the run's files, shards first.
func (r Run) Sources() []string {
	var out []string
	for _, in := range append(slices.Clone(r.Fleet), r.Sims...) {
		out = append(out, in.Source)
	}
	return out
}

// describe is "run X (4 shards, started T: a.json, b.json)".
func (r Run) describe() string {
	what := fmt.Sprintf("%d-shard fleet", r.Shards)
	if r.Shards == 0 {
		what = "simulator only"
	}
	return fmt.Sprintf("run %s (%s, started %s: %s)", r.Name(), what, r.Start.UTC().Format(time.RFC3339), strings.Join(r.Sources(), ", "))
}

// problem says why an incomplete run cannot be merged.
func (r Run) problem() string {
	var p []string
	if m := r.Missing(); len(m) > 0 {
		p = append(p, "shard(s) "+strings.Join(m, ", ")+" missing")
	}
	if rep := r.Repeated(); len(rep) > 0 {
		p = append(p, "the same shard in two files ("+strings.Join(rep, "; ")+")")
	}
	if len(r.Sims) > 1 {
		var s []string
		for _, in := range r.Sims {
			s = append(s, in.Source)
		}
		p = append(p, "two simulator summaries ("+strings.Join(s, ", ")+")")
	}
	if r.Shards == 0 {
		p = append(p, "no fleet shard summary")
	}
	return strings.Join(p, "; ")
}

// Runs groups fleet shard and simulator summaries by run (RunOf) and, for shards, shard count;
// other inputs are left out. The runs are sorted newest first.
func Runs(inputs []Input) []Run {
	type key struct {
		id    string
		count int
	}
	byKey := map[key]*Run{}
	var order []key
	get := func(k key) *Run {
		r := byKey[k]
		if r == nil {
			r = &Run{ID: k.id, Shards: k.count}
			byKey[k] = r
			order = append(order, k)
		}
		return r
	}
	var sims []Input
	for _, in := range inputs {
		if in.Summary == nil {
			continue
		}
		switch in.Summary.Metadata.Command {
		case "fleet":
			r := get(key{RunOf(in.Summary), segmentOf(in.Summary).Count})
			r.Fleet = append(r.Fleet, in)
		case "sim":
			sims = append(sims, in)
		}
	}
	for _, in := range sims {
		// A simulator summary belongs to one run: of the fleets of its run id (one, unless a
		// fleet of another shard count reused the id), the first whose shards are all there.
		id := RunOf(in.Summary)
		var home *Run
		for _, k := range order {
			if k.id != id || k.count == 0 {
				continue
			}
			r := byKey[k]
			if home == nil || (len(home.Missing()) > 0 && len(r.Missing()) == 0) {
				home = r
			}
		}
		if home == nil {
			home = get(key{id, 0})
		}
		home.Sims = append(home.Sims, in)
	}
	out := make([]Run, 0, len(order))
	for _, k := range order {
		r := byKey[k]
		for _, in := range append(slices.Clone(r.Fleet), r.Sims...) {
			m := in.Summary.Metadata
			t := m.Started
			if m.StartAt != nil {
				t = *m.StartAt
			}
			if r.Start.IsZero() || t.Before(r.Start) {
				r.Start = t
			}
		}
		sort.SliceStable(r.Fleet, func(i, j int) bool { return segIndex(r.Fleet[i].Summary) < segIndex(r.Fleet[j].Summary) })
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.After(out[j].Start) })
	return out
}

// Ignored is inputs left out of a merge, and why.
type Ignored struct {
	Sources []string
	Why     string
}

// Selection is what merge merges: the inputs of one run (and any input that is neither a
// fleet shard nor a simulator summary, which Merge then refuses by name), what it leaves out,
// and notes for the user.
type Selection struct {
	Run     Run
	Inputs  []Input
	Ignored []Ignored
	Notes   []string
}

// Select picks the inputs of one distributed run: the run want when given, else the only run,
// else the newest complete run (every shard once). The files of other runs are left out, each
// run's with why. A simulator summary that carries no run id joins the selected run when it
// has none of its own. It is an error (naming the files and the fix) when want is not among
// the inputs or is two fleets, when the only run or the run wanted is incomplete, when no run
// is complete, and when the newest complete runs started at the same time.
func Select(inputs []Input, want string) (Selection, error) {
	runs := Runs(inputs)
	var sel Selection
	for _, in := range inputs {
		if c := in.Summary; c == nil || (c.Metadata.Command != "fleet" && c.Metadata.Command != "sim") {
			sel.Inputs = append(sel.Inputs, in)
		}
	}
	var fleets []Run
	for _, r := range runs {
		if r.Shards > 0 {
			fleets = append(fleets, r)
		}
	}
	list := func(rs []Run) string {
		var s []string
		for _, r := range rs {
			d := r.describe()
			if !r.Complete() {
				d += ", incomplete: " + r.problem()
			}
			s = append(s, "\n  "+d)
		}
		return strings.Join(s, "")
	}
	var chosen []Run
	switch {
	case want != "":
		for _, r := range fleets {
			if r.ID == want {
				chosen = append(chosen, r)
			}
		}
		if len(chosen) == 0 {
			if len(fleets) == 0 {
				return sel, fmt.Errorf("merge: --run %s: no fleet shard summary among the inputs", want)
			}
			return sel, fmt.Errorf("merge: --run %s: no fleet shard summary of that run among the inputs; they hold:%s\npass --run with one of these ids", want, list(fleets))
		}
		if len(chosen) > 1 {
			return sel, fmt.Errorf("merge: run %s has shards of fleets split in different numbers:%s\nremove the files of the run that is not this one, or pass the files to merge", want, list(chosen))
		}
	case len(fleets) == 0:
		return sel, errors.New("merge: no fleet shard summary among the inputs")
	case len(fleets) == 1:
		chosen = fleets
	default:
		var complete []Run
		for _, r := range fleets {
			if r.Complete() {
				complete = append(complete, r)
			}
		}
		if len(complete) == 0 {
			return sel, fmt.Errorf("merge: the inputs hold %d runs and none is complete:%s\nmerge one run: wait until its shards are all written (--dir with --wait N), pass --run ID, or remove the other runs' files", len(fleets), list(fleets))
		}
		if len(complete) > 1 && complete[0].Start.Equal(complete[1].Start) {
			return sel, fmt.Errorf("merge: %s and %s are both complete and started at the same time: pass --run %s or --run %s (a run id tells runs apart when it is set: fleet and sim --run-id, or a new --start-at for each run)",
				complete[0].describe(), complete[1].describe(), complete[0].Name(), complete[1].Name())
		}
		chosen = complete[:1]
	}
	run := chosen[0]
	if !run.Complete() && len(fleets) > 1 {
		// Alone, the run's gaps are named by Merge; with other runs around, say which they are.
		others := slices.DeleteFunc(slices.Clone(fleets), func(r Run) bool { return r.ID == run.ID && r.Shards == run.Shards })
		return sel, fmt.Errorf("merge: %s is incomplete: %s; the other runs here:%s\nwait until its shards are all written (--dir with --wait N), or pass --run with another id",
			run.describe(), run.problem(), list(others))
	}
	// A simulator summary that carries no run id (its process had no --start-at or --run-id,
	// or was of an earlier version that wrote none) is this run's if the run has no other.
	var orphanSims []Run
	for _, r := range runs {
		if r.Shards == 0 && r.ID == "" {
			orphanSims = append(orphanSims, r)
		}
	}
	if len(run.Sims) == 0 && len(orphanSims) == 1 && len(orphanSims[0].Sims) == 1 && run.ID != "" {
		sim := orphanSims[0].Sims[0]
		run.Sims = append(run.Sims, sim)
		sel.Notes = append(sel.Notes, fmt.Sprintf("%s carries no run id (its simulator had no --start-at or --run-id, or is of an earlier version): taken as run %s's simulator", sim.Source, run.Name()))
		runs = slices.DeleteFunc(runs, func(r Run) bool { return r.Shards == 0 && r.ID == "" })
	}
	sel.Run = run
	sel.Inputs = append(append(append([]Input{}, run.Fleet...), run.Sims...), sel.Inputs...)
	for _, r := range runs {
		if r.ID == run.ID && r.Shards == run.Shards {
			continue
		}
		why := ""
		switch {
		case r.Shards == 0:
			why = fmt.Sprintf("the simulator summary of run %s, of which no shard summary is here", r.Name())
		case !r.Complete() && r.Start.After(run.Start):
			why = fmt.Sprintf("run %s (started %s) is incomplete: %s", r.Name(), r.Start.UTC().Format(time.RFC3339), r.problem())
			sel.Notes = append(sel.Notes, fmt.Sprintf("run %s started after run %s but is incomplete, so it is not merged; once its shards are all written, merge it with --run %s", r.Name(), run.Name(), r.Name()))
		case !r.Complete():
			why = fmt.Sprintf("run %s (started %s) is incomplete: %s", r.Name(), r.Start.UTC().Format(time.RFC3339), r.problem())
		case want != "":
			why = fmt.Sprintf("run %s (started %s), not the run asked for", r.Name(), r.Start.UTC().Format(time.RFC3339))
		default:
			why = fmt.Sprintf("run %s (started %s) is older than run %s (started %s), the newest complete run", r.Name(), r.Start.UTC().Format(time.RFC3339), run.Name(), run.Start.UTC().Format(time.RFC3339))
		}
		sel.Ignored = append(sel.Ignored, Ignored{Sources: r.Sources(), Why: why})
	}
	return sel, nil
}
