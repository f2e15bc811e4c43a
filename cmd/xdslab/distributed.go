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
	Probes      string
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
	"generator", "node-first-only", "initial-fetch-timeout", "listener-drain", "churn", "churn-jitter", "agent-issue-delay",
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
	fmt.Fprintf(out, "\nfleet %s: scenario %s against %s\n\n", segLabel(seg), sc.Name, f.Target)
	if werr := writeFleetSummary(out, s, f.SummaryFile); werr != nil {
		return werr
	}
	if interrupted {
		return withCode(exitInterrupted, fmt.Errorf("fleet %s: %w (summary written)", segLabel(seg), err))
	}
	return err
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
}

func newMergeCmd() *cobra.Command {
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "merge SUMMARY... | --dir DIR [--wait N] [--out DIR] [--scenario S]",
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
merges; with --wait N it first waits (up to --timeout) until N fleet shard summaries are
there. The scenario is --scenario, or else the one embedded in the shards' summaries; a
--scenario may change the thresholds, nothing else of the scenario the inputs ran.

Exit codes: 0 merged and every threshold passed, 2 bad input (unreadable summaries, missing or
repeated shards, inputs of different runs), 99 a threshold failed, 130 interrupted while
waiting.`,
		Example: `  xdslab merge shard-0.json shard-1.json shard-2.json shard-3.json sim.json --out merged
  xdslab merge --dir /results --wait 4 --timeout 30m --out /results/merged`,
		RunE: func(cmd *cobra.Command, args []string) error { return runMerge(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "read every *.json summary in this directory")
	fl.IntVar(&f.wait, "wait", 0, "with --dir: wait until this many fleet shard summaries are present")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "with --wait: give up after this long")
	fl.StringVar(&f.out, "out", "", "write summary.json, report.html and junit.xml into this directory, as xdslab run does (a FILE.json: the summary there, the others beside it; default: print only)")
	fl.StringVar(&f.scenario, "scenario", "", "scenario file or built-in name whose thresholds are evaluated (default: the one in the summaries)")
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
	summaryPath, err := mergeOutPath(f.out)
	if err != nil {
		return usageErr(err)
	}
	files := args
	if f.dir != "" {
		var err error
		if files, err = waitSummaries(cmd.Context(), f.dir, summaryPath, f.wait, f.timeout); err != nil {
			if errors.Is(err, context.Canceled) {
				return withCode(exitInterrupted, fmt.Errorf("merge: %w; nothing merged", err))
			}
			return usageErr(fmt.Errorf("merge: %w", err))
		}
	}
	var in []merge.Input
	var errs []error
	for _, p := range files {
		s, err := summary.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f.dir != "" && s.Metadata.Command == "merge" {
			// An earlier merge's output written into the same volume (another --out, or a
			// rerun): not an input of the run.
			fmt.Fprintf(cmd.ErrOrStderr(), "merge: skipping %s: the output of an earlier merge, not a shard's or the simulator's summary\n", p)
			continue
		}
		in = append(in, merge.Input{Source: p, Summary: s})
	}
	if len(in) == 0 && len(errs) == 0 {
		return usageErr(fmt.Errorf("merge: no shard or simulator summaries in %s, only earlier merges' outputs", f.dir))
	}
	if len(errs) > 0 {
		return usageErr(fmt.Errorf("merge: %w", errors.Join(errs...)))
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
	fmt.Fprintf(out, "\nmerge: %d summaries (%s shards) merged in %v\n", len(in), merged.Metadata.Labels["shards"], took.Round(time.Microsecond))
	if summaryPath == "" {
		fmt.Fprintln(out, "no --out given: nothing written; add --out DIR to keep summary.json, report.html and junit.xml")
	} else {
		// The outputs of 'xdslab run --out', from the merged summary, so that a CI job reads
		// a sharded run's report and JUnit file where it reads a single run's.
		r, err := report.FromSummary(merged, sc, mergedTarget(in))
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

// mergedTarget names what a merged run measured, for its report: the shards and the ADS
// address(es) they dialled.
func mergedTarget(in []merge.Input) string {
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

// waitSummaries lists the *.json files in dir (except skip), waiting until want of them are
// fleet shard summaries when want > 0.
func waitSummaries(ctx context.Context, dir, skip string, want int, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	skipAbs, _ := filepath.Abs(skip)
	if want == 0 {
		// Without --wait the directory must be there now (with it, a volume may be mounted late).
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("--dir %s: %w", dir, errors.Unwrap(err))
		} else if !st.IsDir() {
			return nil, fmt.Errorf("--dir %s: not a directory: give the directory the shards write their summaries to", dir)
		}
	}
	for {
		paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, err
		}
		var files []string
		shards := 0
		for _, p := range paths {
			if abs, _ := filepath.Abs(p); skip != "" && abs == skipAbs {
				continue
			}
			files = append(files, p)
			if want > 0 {
				if s, err := summary.ReadFile(p); err == nil && s.Metadata.Command == "fleet" {
					shards++
				}
			}
		}
		sort.Strings(files)
		if want == 0 || shards >= want {
			if len(files) == 0 {
				return nil, fmt.Errorf("no *.json summaries in %s", dir)
			}
			return files, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d fleet shard summaries in %s after %s", shards, want, dir, timeout)
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("interrupted with %d of %d fleet shard summaries in %s: %w", shards, want, dir, ctx.Err())
		case <-t.C:
		}
	}
}
