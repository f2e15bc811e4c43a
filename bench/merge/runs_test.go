package merge

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/summary"
)

// runInput is a fleet shard (i of n) or, with n == 0, a simulator summary, of the run that
// started at start (zero: no --start-at) with run label id ("" none: an earlier version's).
func runInput(t *testing.T, source string, i, n int, start time.Time, id string) Input {
	t.Helper()
	var s *summary.Summary
	if n == 0 {
		s = simSummary(t, nil)
	} else {
		s = mergeShard(t, shardSpec{index: i, count: n, latencies: []int64{1000}, connected: 1})
	}
	s.Metadata.StartAt = nil
	if !start.IsZero() {
		s.Metadata.StartAt = &start
		s.Metadata.Started, s.Metadata.Ended = start, start.Add(10*time.Second)
	}
	if id != "" {
		s.Metadata.Labels[LabelRun] = id
	}
	return Input{Source: source, Summary: s}
}

func sources(in []Input) []string {
	var out []string
	for _, x := range in {
		out = append(out, x.Source)
	}
	return out
}

// TestSelectRun: on a reused volume merge picks one run's files — by default the newest
// complete run — and says which files it leaves out and why; a run asked for, an incomplete set
// or an ambiguous one is named with its files and the fix.
func TestSelectRun(t *testing.T) {
	old := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 6, 7, 45, 0, 0, time.UTC)
	oldID, nowID := RunIDFromStart(old), RunIDFromStart(now)
	if nowID != "20261206T074500Z" || RunIDFromStart(now.Add(500*time.Millisecond)) != "20261206T074500.5Z" {
		t.Fatalf("run ids %s, %s", nowID, RunIDFromStart(now.Add(500*time.Millisecond)))
	}
	for _, tc := range []struct {
		name    string
		inputs  []Input
		want    string
		merged  []string
		ignored []string // "sources: why" fragments
		notes   []string
		err     []string // fragments of the error
	}{
		{
			name: "newest complete run, the earlier one's files named",
			inputs: []Input{
				runInput(t, "old/shard-0.json", 0, 2, old, oldID), runInput(t, "old/shard-1.json", 1, 2, old, oldID), runInput(t, "old/sim.json", 0, 0, old, oldID),
				runInput(t, "shard-0.json", 0, 2, now, nowID), runInput(t, "shard-1.json", 1, 2, now, nowID), runInput(t, "sim.json", 0, 0, now, nowID),
			},
			merged:  []string{"shard-0.json", "shard-1.json", "sim.json"},
			ignored: []string{"old/shard-0.json, old/shard-1.json, old/sim.json: run 20261205T100000Z (started 2026-12-05T10:00:00Z) is older than run 20261206T074500Z"},
		},
		{
			name: "shards of an earlier version (no run label) are told apart by their start time",
			inputs: []Input{
				runInput(t, "a.json", 0, 2, old, ""), runInput(t, "b.json", 1, 2, old, ""),
				runInput(t, "shard-0.json", 0, 2, now, ""), runInput(t, "shard-1.json", 1, 2, now, nowID),
			},
			merged:  []string{"shard-0.json", "shard-1.json"},
			ignored: []string{"a.json, b.json: run 20261205T100000Z"},
		},
		{
			name: "a newer run still incomplete: the complete one is merged, the newer one named",
			inputs: []Input{
				runInput(t, "old-0.json", 0, 2, old, oldID), runInput(t, "old-1.json", 1, 2, old, oldID),
				runInput(t, "new-1.json", 1, 2, now, nowID),
			},
			merged:  []string{"old-0.json", "old-1.json"},
			ignored: []string{"new-1.json: run 20261206T074500Z (started 2026-12-06T07:45:00Z) is incomplete: shard(s) 0/2 missing"},
			notes:   []string{"run 20261206T074500Z started after run 20261205T100000Z but is incomplete", "--run 20261206T074500Z"},
		},
		{
			name: "a run split in more shards, same start: its leftover shards are another run",
			inputs: []Input{
				runInput(t, "shard-0.json", 0, 2, now, nowID), runInput(t, "shard-1.json", 1, 2, now, nowID),
				runInput(t, "shard-2.json", 2, 4, now, nowID), runInput(t, "shard-3.json", 3, 4, now, nowID),
			},
			merged:  []string{"shard-0.json", "shard-1.json"},
			ignored: []string{"shard-2.json, shard-3.json: run 20261206T074500Z (started 2026-12-06T07:45:00Z) is incomplete: shard(s) 0/4, 1/4 missing"},
		},
		{
			name: "a run split in more shards, same start, with its simulator: the simulator is the complete run's only",
			inputs: []Input{
				runInput(t, "shard-2.json", 2, 4, now, nowID), runInput(t, "shard-3.json", 3, 4, now, nowID),
				runInput(t, "shard-0.json", 0, 2, now, nowID), runInput(t, "shard-1.json", 1, 2, now, nowID),
				runInput(t, "sim.json", 0, 0, now, nowID),
			},
			merged:  []string{"shard-0.json", "shard-1.json", "sim.json"},
			ignored: []string{"shard-2.json, shard-3.json: run 20261206T074500Z (started 2026-12-06T07:45:00Z) is incomplete: shard(s) 0/4, 1/4 missing"},
		},
		{
			name: "a stale simulator summary of another run",
			inputs: []Input{
				runInput(t, "shard-0.json", 0, 1, now, nowID), runInput(t, "sim.json", 0, 0, old, oldID),
			},
			merged:  []string{"shard-0.json"},
			ignored: []string{"sim.json: the simulator summary of run 20261205T100000Z, of which no shard summary is here"},
		},
		{
			name:   "a simulator without a run id joins the run",
			inputs: []Input{runInput(t, "shard-0.json", 0, 1, now, nowID), runInput(t, "sim.json", 0, 0, time.Time{}, "")},
			merged: []string{"shard-0.json", "sim.json"},
			notes:  []string{"sim.json carries no run id", "taken as run 20261206T074500Z's simulator"},
		},
		{
			name: "the run asked for",
			inputs: []Input{
				runInput(t, "old-0.json", 0, 1, old, oldID), runInput(t, "new-0.json", 0, 1, now, nowID),
			},
			want:    oldID,
			merged:  []string{"old-0.json"},
			ignored: []string{"new-0.json: run 20261206T074500Z (started 2026-12-06T07:45:00Z), not the run asked for"},
		},
		{
			name:   "the run asked for is not there",
			inputs: []Input{runInput(t, "new-0.json", 0, 1, now, nowID)},
			want:   "nightly-7",
			err:    []string{"--run nightly-7: no fleet shard summary of that run", "run 20261206T074500Z (1-shard fleet, started 2026-12-06T07:45:00Z: new-0.json)", "pass --run with one of these ids"},
		},
		{
			name: "the run asked for is incomplete",
			inputs: []Input{
				runInput(t, "old-0.json", 0, 1, old, oldID), runInput(t, "new-1.json", 1, 2, now, nowID),
			},
			want: nowID,
			err:  []string{"run 20261206T074500Z (2-shard fleet, started 2026-12-06T07:45:00Z: new-1.json) is incomplete: shard(s) 0/2 missing", "the other runs here:\n  run 20261205T100000Z", "--wait N"},
		},
		{
			name: "no run complete",
			inputs: []Input{
				runInput(t, "old-0.json", 0, 2, old, oldID), runInput(t, "new-1.json", 1, 2, now, nowID),
			},
			err: []string{"2 runs and none is complete", "old-0.json), incomplete: shard(s) 1/2 missing", "new-1.json), incomplete: shard(s) 0/2 missing", "pass --run ID"},
		},
		{
			name: "two complete runs of one start (explicit ids): ambiguous",
			inputs: []Input{
				runInput(t, "a-0.json", 0, 1, now, "blue"), runInput(t, "b-0.json", 0, 1, now, "green"),
			},
			err: []string{"both complete and started at the same time", "--run blue or --run green"},
		},
		{
			name: "files without any run id beside a run: their shard repeated",
			inputs: []Input{
				runInput(t, "x-0.json", 0, 1, time.Time{}, ""), runInput(t, "y-0.json", 0, 1, time.Time{}, ""),
				runInput(t, "new-0.json", 0, 1, now, nowID),
			},
			merged:  []string{"new-0.json"},
			ignored: []string{"x-0.json, y-0.json: run (no run id) (started 2026-12-03T15:59:58Z) is incomplete: the same shard in two files (shard 0/1: x-0.json, y-0.json)"},
		},
		{
			name:   "one run without ids: merged as before",
			inputs: []Input{runInput(t, "x-0.json", 0, 2, time.Time{}, ""), runInput(t, "x-1.json", 1, 2, time.Time{}, "")},
			merged: []string{"x-0.json", "x-1.json"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select(tc.inputs, tc.want)
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("selected %v, want an error", sources(sel.Inputs))
				}
				for _, f := range tc.err {
					if !strings.Contains(err.Error(), f) {
						t.Errorf("error %q\nlacks %q", err, f)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sources(sel.Inputs); !slices.Equal(got, tc.merged) {
				t.Errorf("merged %v, want %v", got, tc.merged)
			}
			var ignored []string
			for _, ig := range sel.Ignored {
				ignored = append(ignored, strings.Join(ig.Sources, ", ")+": "+ig.Why)
			}
			if len(ignored) != len(tc.ignored) {
				t.Errorf("ignored %q, want %d entries like %q", ignored, len(tc.ignored), tc.ignored)
			}
			for i, f := range tc.ignored {
				if i < len(ignored) && !strings.Contains(ignored[i], f) {
					t.Errorf("ignored %q\nlacks %q", ignored[i], f)
				}
			}
			all := strings.Join(sel.Notes, "\n")
			for _, f := range tc.notes {
				if !strings.Contains(all, f) {
					t.Errorf("notes %q lack %q", sel.Notes, f)
				}
			}
			if len(tc.notes) == 0 && len(sel.Notes) > 0 {
				t.Errorf("notes %q, want none", sel.Notes)
			}
			// What is selected merges (the sims of the tests hold no events of their own).
			if _, err := Merge(sel.Inputs, Options{}); err != nil {
				t.Errorf("merge of the selection: %v", err)
			}
		})
	}
}

// TestMergeRefusesOtherRunIDs: inputs given straight to Merge that carry different run ids are
// not one run, whatever their start times.
func TestMergeRefusesOtherRunIDs(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 45, 0, 0, time.UTC)
	_, err := Merge([]Input{runInput(t, "a.json", 0, 2, now, "blue"), runInput(t, "b.json", 1, 2, now, "green")}, Options{})
	if err == nil || !strings.Contains(err.Error(), "b.json: run green differs from a.json's run blue") {
		t.Errorf("got %v, want the two runs named", err)
	}
	m, err := Merge([]Input{runInput(t, "a.json", 0, 2, now, "blue"), runInput(t, "b.json", 1, 2, now, "blue")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Metadata.Labels[LabelRun]; got != "blue" {
		t.Errorf("merged run label %q, want blue", got)
	}
	if err := ValidRunID("nightly-2026.12.06_1"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "-x", "a b", "a/b", strings.Repeat("x", 64)} {
		if ValidRunID(bad) == nil {
			t.Errorf("run id %q accepted", bad)
		}
	}
}
