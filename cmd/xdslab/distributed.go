package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/merge"
	"github.com/xdslab/xdslab/bench/report"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/probe/stream"
	"github.com/xdslab/xdslab/scenarios"
)

// distFlags are the distributed-run flags of 'xdslab fleet' (docs/distributed.md).
type distFlags struct {
	Scenario    string
	Segment     string
	Segments    int
	StartAt     string
	StartAtFile string
	// RunID is the run's identity (--run-id; default: derived from the start).
	RunID  string
	Probes string
	// TargetMetrics is the control plane's Prometheus endpoint, for its CPU.
	TargetMetrics string
}

// parseSegment resolves --segment and --segments: "I/N", or "auto" (or empty with --segments
// N) to take I from jobIndex (JOB_COMPLETION_INDEX of a Kubernetes Indexed Job).
func parseSegment(seg string, segments int, jobIndex string) (fleet.Segment, error) {
	if segments < 0 {
		return fleet.Segment{}, fmt.Errorf("--segments %d must be >= 1", segments)
	}
	if seg == "" && segments == 0 {
		return fleet.Segment{}, nil
	}
	if seg == "" || seg == "auto" {
		if segments == 0 {
			return fleet.Segment{}, errors.New("--segment auto needs --segments N (the shard count)")
		}
		if jobIndex == "" {
			return fleet.Segment{}, fmt.Errorf("--segments %d without --segment I/N: JOB_COMPLETION_INDEX is not set (it is in a Kubernetes Indexed Job); pass --segment I/%d", segments, segments)
		}
		i, err := strconv.Atoi(jobIndex)
		if err != nil || i < 0 || i >= segments {
			return fleet.Segment{}, fmt.Errorf("JOB_COMPLETION_INDEX %q is not a shard index in [0,%d)", jobIndex, segments)
		}
		return fleet.Segment{Index: i, Count: segments}, nil
	}
	a, b, ok := strings.Cut(seg, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return fleet.Segment{}, fmt.Errorf("--segment %q: want I/N (shard I of N, from 0), e.g. 0/4, or auto", seg)
	}
	if n < 1 {
		return fleet.Segment{}, fmt.Errorf("--segment %q: the shard count N must be at least 1 (0/1 is the whole fleet)", seg)
	}
	if segments != 0 && segments != n {
		return fleet.Segment{}, fmt.Errorf("--segment %s and --segments %d disagree on the shard count", seg, segments)
	}
	s := fleet.Segment{Index: i, Count: n}
	if err := s.Validate(); err != nil {
		return fleet.Segment{}, fmt.Errorf("--segment %q: want 0 <= I < N", seg)
	}
	return s, nil
}

// parseStartAt resolves --start-at (RFC 3339, or +DURATION from now) or --start-at-file (a
// file holding one such value: a mounted ConfigMap key).
func parseStartAt(value, file string, now time.Time) (time.Time, error) {
	if value != "" && file != "" {
		return time.Time{}, errors.New("--start-at and --start-at-file: give one")
	}
	src := "--start-at"
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return time.Time{}, fmt.Errorf("--start-at-file: %w", err)
		}
		value, src = strings.TrimSpace(string(b)), file
	}
	if value == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutPrefix(value, "+"); ok {
		dd, err := time.ParseDuration(d)
		if err != nil || dd < 0 {
			return time.Time{}, fmt.Errorf("%s %q: +DURATION needs a duration >= 0, e.g. +30s", src, value)
		}
		return now.Add(dd), nil
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-12-03T16:30:00Z, or +30s", src, value)
	}
	return t, nil
}

// scenarioClientFlags are the fleet flags a scenario's clients section (and its duration and
// seed) replaces with --scenario.
var scenarioClientFlags = []string{"clients", "duration", "ramp", "delta", "nack", "ack-delay", "never-ack",
	"disconnect-after", "group", "proxy-type", "labels", "namespace", "namespaces", "cluster-id", "istio-version",
	"generator", "bootstrap", "node-first-only", "initial-fetch-timeout", "listener-drain", "churn", "churn-jitter", "agent-issue-delay",
	"streams-per-conn", "seed", "auth", "ca-dir", "jwt-key", "jwt-issuer", "jwt-audience", "server-name"}

// runScenarioFleet is 'xdslab fleet --scenario S': one shard of a distributed run.
func runScenarioFleet(cmd *cobra.Command, f fleetFlags) error {
	if f.Target == "" {
		return usageErr(errors.New("fleet: --target is required, e.g. --target 127.0.0.1:15010"))
	}
	if _, _, err := net.SplitHostPort(f.Target); err != nil {
		return usageErr(fmt.Errorf("fleet: --target %q must be HOST:PORT: %v", f.Target, err))
	}
	// The scenario sets the clients: a client flag beside it would be ignored.
	var ignored []string
	for _, name := range scenarioClientFlags {
		if cmd.Flags().Changed(name) {
			ignored = append(ignored, "--"+name)
		}
	}
	if len(ignored) > 0 {
		return usageErr(fmt.Errorf("fleet: %s: with --scenario the scenario sets the clients (its clients section, duration and seed): drop them, or edit the scenario", strings.Join(ignored, ", ")))
	}
	sc, err := scenarios.Resolve(f.dist.Scenario)
	if err != nil {
		return usageErr(err)
	}
	seg, err := parseSegment(f.dist.Segment, f.dist.Segments, f.jobIndex)
	if err != nil {
		return usageErr(fmt.Errorf("fleet: %w", err))
	}
	start, err := parseStartAt(f.dist.StartAt, f.dist.StartAtFile, time.Now())
	if err != nil {
		return usageErr(fmt.Errorf("fleet: %w", err))
	}
	runID, warning, err := runIdentity("fleet", f.dist.RunID, f.dist.StartAt, start, seg.Count, time.Now())
	if err != nil {
		return usageErr(err)
	}
	if warning != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", warning)
	}
	if f.dist.Probes != "" {
		if _, err := stream.ParseBase(f.dist.Probes); err != nil {
			return usageErr(fmt.Errorf("fleet: --probes %w", err))
		}
	}
	if err := checkOutFile("fleet: --summary", f.SummaryFile); err != nil {
		return usageErr(err)
	}
	progress, _, err := progressMode("fleet", f.Progress, cmd.ErrOrStderr())
	if err != nil {
		return usageErr(err)
	}
	// Live metrics, as without --scenario (the fleet Job's pods are scraped on them).
	var stopMetrics func()
	defer func() {
		if stopMetrics != nil {
			stopMetrics()
		}
	}()
	var metricsErr error
	onFleet := func(fl *fleet.Fleet) error {
		if f.MetricsAddr == "" {
			return nil
		}
		stopMetrics, metricsErr = serveFleetMetrics(f.MetricsAddr, fl, cmd.ErrOrStderr())
		return metricsErr
	}
	out := cmd.OutOrStdout()
	// The first SIGINT or SIGTERM ends the shard early through Stop, which still writes what
	// it measured (a stopped pod must not lose the whole distributed run); a second exits.
	s, err := run.RunShard(context.WithoutCancel(cmd.Context()), sc, run.ShardOptions{Target: f.Target, Segment: seg, StartAt: start,
		Probes: f.dist.Probes, TargetMetrics: f.dist.TargetMetrics, Progress: progress, Stop: cmd.Context().Done(), OnFleet: onFleet})
	if metricsErr != nil {
		return usageErr(fmt.Errorf("fleet: %w", metricsErr))
	}
	interrupted := errors.Is(err, run.ErrInterrupted)
	if s == nil {
		if interrupted {
			return withCode(exitInterrupted, fmt.Errorf("fleet %s: %w", segLabel(seg), err))
		}
		return err
	}
	setRunLabel(s, runID)
	fmt.Fprintf(out, "\nfleet %s: scenario %s against %s%s\n\n", segLabel(seg), sc.Name, f.Target, runSuffix(runID))
	if werr := writeFleetSummary(out, s, f.SummaryFile); werr != nil {
		return werr
	}
	if interrupted {
		return withCode(exitInterrupted, fmt.Errorf("fleet %s: %w (summary written)", segLabel(seg), err))
	}
	return err
}

// staleStart is how long ago a start time may have passed before a process warns that runs
// reusing it share their run id.
const staleStart = 10 * time.Minute

// runIdentity is the identity a process of a distributed run (a fleet shard, the simulator)
// writes into its summary as metadata.labels.run: --run-id, else the id derived from the
// shared start (merge.RunIDFromStart), which every process given the same --start-at derives
// alike; "" without either. The warning, when set, says when merge will not be able to tell
// this run's summaries from another's in the same directory.
func runIdentity(cmd, explicit, startFlag string, start time.Time, shards int, now time.Time) (id, warning string, err error) {
	if explicit != "" {
		if err := merge.ValidRunID(explicit); err != nil {
			return "", "", fmt.Errorf("%s: --run-id: %w", cmd, err)
		}
		return explicit, "", nil
	}
	switch {
	case start.IsZero():
		return "", fmt.Sprintf("%s: no --start-at or --run-id: the summary carries no run id, and xdslab merge cannot tell it from another run's summaries in the same directory", cmd), nil
	case strings.HasPrefix(startFlag, "+") && shards > 1:
		warning = fmt.Sprintf("%s: --start-at %s is relative to when each process starts: the shards get different start times and run ids; give them one time (RFC 3339) or one --run-id", cmd, startFlag)
	case now.Sub(start) > staleStart:
		warning = fmt.Sprintf("%s: the start time %s passed %s ago: every run started with it has run id %s, and xdslab merge cannot tell this run's summaries from an earlier one's in the same directory; set a new start time for each run, or pass --run-id",
			cmd, start.UTC().Format(time.RFC3339), roughly(now.Sub(start)), merge.RunIDFromStart(start))
	}
	return merge.RunIDFromStart(start), warning, nil
}

// roughly says a long duration the way a person would: 25m, 5h, 339 days.
func roughly(d time.Duration) string {
	switch {
	case d < time.Hour:
		return d.Round(time.Minute).String()
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Round(time.Hour).Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// setRunLabel writes the run id into a summary (nothing when id is "").
func setRunLabel(s *summary.Summary, id string) {
	if id == "" {
		return
	}
	if s.Metadata.Labels == nil {
		s.Metadata.Labels = map[string]string{}
	}
	s.Metadata.Labels[merge.LabelRun] = id
}

func runSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " (run " + id + ")"
}

func segLabel(s fleet.Segment) string {
	if s.Count <= 1 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// publishFlags are the flags of 'xdslab sim --publish'.
type publishFlags struct {
	addr        string
	shards      int
	ackTimeout  time.Duration
	shardWait   time.Duration
	summary     string
	startAt     string
	startAtFile string
	runID       string
}

// servePublisher serves p on addr until stop; it prints the URL.
func servePublisher(addr string, p *stream.Publisher, log io.Writer) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: --publish: %w", err)
	}
	// Shards under load may take long to send a request's headers: a short timeout would
	// close their connections and cost acks.
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	fmt.Fprintf(log, "sim: probes published on http://%s\n", lis.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// mergeFlags are the flags of 'xdslab merge'.
type mergeFlags struct {
	dir      string
	wait     int
	timeout  time.Duration
	out      string
	scenario string
	quiet    bool
	// run, or the id derived from startAt or startAtFile, picks the run to merge.
	run, startAt, startAtFile string
}

func newMergeCmd() *cobra.Command {
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "merge SUMMARY... | --dir DIR [--wait N] [--run ID | --start-at T | --start-at-file F] [--out DIR] [--scenario S]",
		Short: "Merge the summaries of a distributed run's fleet shards (and its simulator) and gate once",
		Long: `merge combines the summary.json of every fleet shard of a distributed run ('xdslab fleet
--segment I/N --summary F') and of its simulator ('xdslab sim --publish --summary F') into the
summary of the whole run: HDR histograms are added (so percentiles are exact to the
histogram's precision), counters summed, phases aligned on the simulator's clock, and each
event's convergence taken over every shard's clients; an event a shard never received counts
as missed. The scenario's thresholds are then evaluated once on the merged figures (exit 99 if
one fails, as for 'xdslab run'). compare reads merged summaries like any other.

--out DIR writes what 'xdslab run --out DIR' writes, from the merged summary: summary.json,
report.html (plots drawn from the merged histograms and events), junit.xml (one test case per
threshold) and one .hgrm per trend, also when a threshold fails. --out FILE.json writes the
summary to FILE.json and the others beside it.

--dir DIR reads every *.json in DIR (a volume the shards write to) but the outputs of earlier
merges. The inputs may hold several runs (a volume reused by the Job): each shard and the
simulator write their run's id (metadata.labels.run: fleet/sim --run-id, or derived from the
shared --start-at), and merge merges one run — --run ID, or the run of --start-at or
--start-at-file (the value the shards were given), else the newest complete run — naming each
file it leaves out and why. With --wait N it first waits (up to --timeout) until N fleet shard
summaries of that run are there (without --run or --start-at: of the newest run), saying what
it waits for every 30s. The scenario is --scenario, or else the one embedded in the shards'
summaries; a --scenario may change the thresholds, nothing else of the scenario the inputs ran.

Exit codes: 0 merged and every threshold passed, 2 bad input (unreadable summaries, missing or
repeated shards, inputs of different runs with none complete or two equally new, a --run that
is not there), 99 a threshold failed, 130 interrupted while waiting.`,
		Example: `  xdslab merge shard-0.json shard-1.json shard-2.json shard-3.json sim.json --out merged
  xdslab merge --dir /results --wait 4 --timeout 30m --start-at-file /etc/xdslab/start/startAt --out /results/merged
  xdslab merge --dir /results --run 20261206T074500Z --out /results/merged-earlier`,
		RunE: func(cmd *cobra.Command, args []string) error { return runMerge(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "read every *.json summary in this directory")
	fl.IntVar(&f.wait, "wait", 0, "with --dir: wait until this many fleet shard summaries of the run are present (the run of --run or --start-at, else the newest)")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "with --wait: give up after this long")
	fl.StringVar(&f.out, "out", "", "write summary.json, report.html and junit.xml into this directory, as xdslab run does (a FILE.json: the summary there, the others beside it; default: print only)")
	fl.StringVar(&f.scenario, "scenario", "", "scenario file or built-in name whose thresholds are evaluated (default: the one in the summaries)")
	fl.StringVar(&f.run, "run", "", "merge the summaries of this run (its id, as the shards print it and write as metadata.labels.run; default: the newest complete run)")
	fl.StringVar(&f.startAt, "start-at", "", "merge the run that started at this time (RFC 3339), as the shards were given it: the same as --run with the id derived from it")
	fl.StringVar(&f.startAtFile, "start-at-file", "", "like --start-at, read from this file (the ConfigMap key the shards read)")
	fl.BoolVar(&f.quiet, "quiet", false, "do not print the merged summary")
	return cmd
}

func runMerge(cmd *cobra.Command, args []string, f mergeFlags) error {
	if (f.dir == "") == (len(args) == 0) {
		return usageErr(errors.New("merge: give summary files or --dir DIR (not both)"))
	}
	if f.wait < 0 || (f.wait > 0 && f.dir == "") {
		return usageErr(errors.New("merge: --wait N needs --dir and N >= 1"))
	}
	runID, err := mergeRunID(f)
	if err != nil {
		return usageErr(err)
	}
	summaryPath, err := mergeOutPath(f.out)
	if err != nil {
		return usageErr(err)
	}
	stderr := cmd.ErrOrStderr()
	var read []merge.Input
	var errs []error
	if f.dir != "" {
		w := waitSpec{dir: f.dir, skip: summaryPath, want: f.wait, timeout: f.timeout, run: runID, simGrace: simGrace}
		if read, errs, err = waitSummaries(cmd.Context(), stderr, w); err != nil {
			if errors.Is(err, context.Canceled) {
				return withCode(exitInterrupted, fmt.Errorf("merge: %w; nothing merged", err))
			}
			return usageErr(fmt.Errorf("merge: %w", err))
		}
	} else {
		for _, p := range args {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				errs = append(errs, fmt.Errorf("%s is a directory: merge takes summary files, or a directory as --dir %s", p, p))
				continue
			}
			s, err := summary.ReadFile(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			read = append(read, merge.Input{Source: p, Summary: s})
		}
	}
	var in []merge.Input
	for _, x := range read {
		if f.dir != "" && x.Summary.Metadata.Command == "merge" {
			// An earlier merge's output written into the same volume (another --out, or a
			// rerun): not an input of the run.
			fmt.Fprintf(stderr, "merge: skipping %s: the output of an earlier merge, not a shard's or the simulator's summary\n", x.Source)
			continue
		}
		in = append(in, x)
	}
	if len(in) == 0 && len(errs) == 0 {
		return usageErr(fmt.Errorf("merge: no shard or simulator summaries in %s, only earlier merges' outputs", f.dir))
	}
	if len(errs) > 0 {
		return usageErr(fmt.Errorf("merge: %w", errors.Join(errs...)))
	}
	// The files of one run: a volume reused by the Job may hold an earlier run's.
	sel, err := merge.Select(in, runID)
	if err != nil {
		return usageErr(err)
	}
	for _, ig := range sel.Ignored {
		fmt.Fprintf(stderr, "merge: ignoring %s: %s\n", strings.Join(ig.Sources, ", "), ig.Why)
	}
	for _, n := range sel.Notes {
		fmt.Fprintf(stderr, "merge: note: %s\n", n)
	}
	in = sel.Inputs
	if len(sel.Ignored) > 0 || runID != "" {
		fmt.Fprintf(stderr, "merge: merging run %s: %s\n", sel.Run.Name(), strings.Join(sel.Run.Sources(), ", "))
	}
	var sc *scenarios.Scenario
	if f.scenario != "" {
		var err error
		if sc, err = scenarios.Resolve(f.scenario); err != nil {
			return usageErr(err)
		}
	} else {
		sc = embeddedScenario(in)
	}
	start := time.Now()
	merged, err := merge.Merge(in, merge.Options{Scenario: sc, Harness: collect.DefaultHarnessLimits()})
	if err != nil {
		return usageErr(err)
	}
	took := time.Since(start)
	out := cmd.OutOrStdout()
	if !f.quiet {
		if err := summary.WriteText(out, merged); err != nil {
			return err
		}
	}
	if lines := report.HarnessLines(merged); len(lines) > 0 {
		fmt.Fprintln(out)
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}
	for _, l := range report.NoteLines(merged) {
		fmt.Fprintf(out, "\n%s\n", l)
	}
	if sc == nil {
		fmt.Fprintln(out, "\nmerge: no scenario given or embedded: no thresholds evaluated")
	}
	ofRun := ""
	if id := merged.Metadata.Labels[merge.LabelRun]; id != "" {
		ofRun = " of run " + id
	}
	fmt.Fprintf(out, "\nmerge: %d summaries (%s shards)%s merged in %v\n", len(in), merged.Metadata.Labels["shards"], ofRun, took.Round(time.Microsecond))
	if summaryPath == "" {
		fmt.Fprintln(out, "no --out given: nothing written; add --out DIR to keep summary.json, report.html and junit.xml")
	} else {
		// The outputs of 'xdslab run --out', from the merged summary, so that a CI job reads
		// a sharded run's report and JUnit file where it reads a single run's.
		r, err := report.FromSummary(merged, sc, mergedTarget(in, merged.Metadata.Labels[merge.LabelRun]))
		if err != nil {
			return err
		}
		if err := report.WriteBeside(summaryPath, r); err != nil {
			return fmt.Errorf("merge: --out: %w", err)
		}
		if filepath.Base(summaryPath) == "summary.json" {
			fmt.Fprintf(out, "summary.json, report.html and junit.xml written to %s\n", filepath.Dir(summaryPath))
		} else {
			fmt.Fprintf(out, "merged summary written to %s; report.html and junit.xml beside it in %s\n", summaryPath, filepath.Dir(summaryPath))
		}
	}
	if !merged.Results.Passed {
		return withCode(exitThreshold, errors.New("merge: a threshold failed"))
	}
	return nil
}

// mergeRunID is the run merge is told to merge: --run, or the id derived from --start-at or
// --start-at-file (the value the run's processes were given); "" for the default.
func mergeRunID(f mergeFlags) (string, error) {
	if f.run != "" && (f.startAt != "" || f.startAtFile != "") {
		return "", errors.New("merge: --run and --start-at (or --start-at-file) both name the run: give one")
	}
	if f.run != "" {
		if err := merge.ValidRunID(f.run); err != nil {
			return "", fmt.Errorf("merge: --run: %w", err)
		}
		return f.run, nil
	}
	if strings.HasPrefix(f.startAt, "+") {
		return "", fmt.Errorf("merge: --start-at %s is relative to now, not the start the run was given: give that time (RFC 3339), --start-at-file, or --run ID", f.startAt)
	}
	start, err := parseStartAt(f.startAt, f.startAtFile, time.Now())
	if err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	if start.IsZero() {
		return "", nil
	}
	return merge.RunIDFromStart(start), nil
}

// mergeOutPath is where --out puts the merged summary: DIR/summary.json for a directory (as
// 'xdslab run --out DIR'), or the file itself for a path ending in .json (the other outputs
// then go beside it); "" without --out. The place is checked before anything is read or
// waited for: a merge must not wait for its shards and then fail to write.
func mergeOutPath(out string) (string, error) {
	if out == "" {
		return "", nil
	}
	if st, err := os.Stat(out); (err != nil || !st.IsDir()) && strings.EqualFold(filepath.Ext(out), ".json") {
		if err := checkOutFile("merge: --out", out); err != nil {
			return "", err
		}
		return out, nil
	}
	if err := run.CheckWritableDir(out); err != nil {
		return "", fmt.Errorf("merge: --out %s: %w (a directory, as for xdslab run; or a FILE.json for the summary, the other outputs beside it)", out, err)
	}
	return filepath.Join(out, "summary.json"), nil
}

// mergedTarget names what a merged run measured, for its report: the shards, the ADS
// address(es) they dialled and the run's id.
func mergedTarget(in []merge.Input, runID string) string {
	shards := 0
	var ads []string
	for _, x := range in {
		if x.Summary.Metadata.Command != "fleet" {
			continue
		}
		shards++
		if a := x.Summary.Metadata.Labels["ads"]; a != "" && !slices.Contains(ads, a) {
			ads = append(ads, a)
		}
	}
	t := fmt.Sprintf("%d fleet shard(s), merged", shards)
	if runID != "" {
		t += ", run " + runID
	}
	if len(ads) > 0 {
		t = strings.Join(ads, ", ") + " (" + t + ")"
	}
	return t
}

// embeddedScenario decodes the scenario the fleet shards embed as their config (nil if none
// does or it does not decode).
func embeddedScenario(in []merge.Input) *scenarios.Scenario {
	for _, x := range in {
		if x.Summary.Metadata.Command != "fleet" || len(x.Summary.Config) == 0 {
			continue
		}
		if sc, err := scenarios.LoadBytes(x.Source+" (config)", x.Summary.Config); err == nil {
			return sc
		}
	}
	return nil
}

// waitProgress is how often a waiting merge says what it waits for.
const waitProgress = 30 * time.Second

// simGrace is how long a merge waits, once the shards of its run are there, for the run's
// simulator summary when the directory holds another run's (sim.json of an earlier run, about
// to be replaced).
const simGrace = time.Minute

// waitSpec is what waitSummaries reads and waits for.
type waitSpec struct {
	dir, skip string // the directory, and the merge's own output in it
	want      int    // fleet shard summaries of the run to wait for (0: none)
	timeout   time.Duration
	run       string        // the run's id ("": the newest run)
	simGrace  time.Duration // see simGrace
}

// waitSummaries reads the *.json summaries in dir (except skip). With want > 0 it first waits
// (up to timeout) until want fleet shard summaries of the run are there — of run when given,
// else of the newest run among them — saying so every waitProgress on log; then, for at most
// simGrace, for that run's simulator summary if only another run's is there. Files that do not
// read are returned as errs.
func waitSummaries(ctx context.Context, log io.Writer, w waitSpec) (in []merge.Input, errs []error, err error) {
	dir, skip, want, timeout, run := w.dir, w.skip, w.want, w.timeout, w.run
	deadline := time.Now().Add(timeout)
	skipAbs, _ := filepath.Abs(skip)
	if want == 0 {
		// Without --wait the directory must be there now (with it, a volume may be mounted late).
		if st, err := os.Stat(dir); err != nil {
			return nil, nil, fmt.Errorf("--dir %s: %w", dir, errors.Unwrap(err))
		} else if !st.IsDir() {
			return nil, nil, fmt.Errorf("--dir %s: not a directory: give the directory the shards write their summaries to", dir)
		}
	}
	type cached struct {
		mod  time.Time
		size int64
		s    *summary.Summary
		err  error
	}
	cache := map[string]cached{}
	which := "the newest run"
	if run != "" {
		which = "run " + run
	}
	var lastSaid, shardsAt time.Time
	simWaitSaid := false
	for {
		paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(paths)
		in, errs = nil, nil
		for _, p := range paths {
			if abs, _ := filepath.Abs(p); skip != "" && abs == skipAbs {
				continue
			}
			st, err := os.Stat(p)
			if err != nil {
				continue // gone since the listing
			}
			c, ok := cache[p]
			if !ok || !c.mod.Equal(st.ModTime()) || c.size != st.Size() {
				s, err := summary.ReadFile(p)
				c = cached{mod: st.ModTime(), size: st.Size(), s: s, err: err}
				cache[p] = c
			}
			if c.err != nil {
				errs = append(errs, c.err)
				continue
			}
			in = append(in, merge.Input{Source: p, Summary: c.s})
		}
		if want == 0 {
			if len(in) == 0 && len(errs) == 0 {
				return nil, nil, fmt.Errorf("no *.json summaries in %s: the shards write them there ('xdslab fleet --scenario S --segment I/N --summary %s/shard-I.json'); add --wait N to wait for N shards", dir, dir)
			}
			return in, errs, nil
		}
		// The run waited for, and how many of its shards are there.
		var target *merge.Run
		var others []merge.Run
		for _, r := range merge.Runs(in) {
			switch {
			case r.Shards == 0:
				others = append(others, r)
			case target == nil && (run == "" || r.ID == run):
				target = &r
			default:
				others = append(others, r)
			}
		}
		have := 0
		if target != nil {
			idx := map[int]bool{}
			for _, x := range target.Fleet {
				if seg := x.Summary.Metadata.Segment; seg != nil {
					idx[seg.Index] = true
				} else {
					idx[0] = true
				}
			}
			have = len(idx)
		}
		now := time.Now()
		if have >= want {
			// The run's simulator writes its summary when it ends, like the shards: while only
			// another run's is there, give it a moment.
			staleSim := ""
			for _, r := range others {
				if r.Shards == 0 && r.ID != "" && (target.ID == "" || r.ID != target.ID) {
					staleSim = strings.Join(r.Sources(), ", ")
				}
			}
			if len(target.Sims) > 0 || staleSim == "" {
				return in, errs, nil
			}
			if shardsAt.IsZero() {
				shardsAt = now
			}
			if now.Sub(shardsAt) >= w.simGrace || now.After(deadline) {
				return in, errs, nil
			}
			if !simWaitSaid {
				fmt.Fprintf(log, "merge: the %d shard summaries of run %s are there; waiting up to %s for its simulator's summary (%s is another run's)\n", have, target.Name(), w.simGrace, staleSim)
				simWaitSaid = true
			}
		} else {
			if now.After(deadline) {
				msg := fmt.Sprintf("%d of %d fleet shard summaries of %s in %s after %s", have, want, which, dir, timeout)
				if target != nil {
					msg = fmt.Sprintf("%d of %d fleet shard summaries of run %s in %s after %s (%s; missing: %s)", have, want, target.Name(), dir, timeout,
						strings.Join(target.Sources(), ", "), strings.Join(target.Missing(), ", "))
				}
				for _, r := range others {
					msg += fmt.Sprintf("\n  another run's files there, left out: run %s: %s", r.Name(), strings.Join(r.Sources(), ", "))
				}
				msg += "\ncheck the shards that did not write theirs (their logs), or raise --timeout"
				if run == "" {
					msg += "; pass --start-at-file or --run so that the merge waits for the right run"
				}
				return nil, nil, errors.New(msg)
			}
			if lastSaid.IsZero() || now.Sub(lastSaid) >= waitProgress {
				name := which
				if target != nil && run == "" {
					name = "run " + target.Name()
				}
				fmt.Fprintf(log, "merge: waiting for %d fleet shard summaries of %s in %s: %d there, giving up in %s\n",
					want, name, dir, have, deadline.Sub(now).Round(time.Second))
				lastSaid = now
			}
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("interrupted with %d of %d fleet shard summaries of %s in %s: %w", have, want, which, dir, ctx.Err())
		case <-t.C:
		}
	}
}
