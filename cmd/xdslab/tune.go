package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/bench/tune"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
)

// tuneFlags are the flags of 'xdslab tune'.
type tuneFlags struct {
	params       []string
	repeats      int
	out          string
	cost         string
	estimateOnly bool
	logLevel     string
	cpuSplit     bool
	search       bool
	interleave   bool
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune SCENARIO|NAME --param minQuiet=50ms,100ms,200ms [--param maxDelay=1s,10s] [--repeats K] [--out DIR]",
		Short: "Sweep debounce (or any scenario) settings and recommend the cheapest that meets the latency thresholds",
		Long: `tune runs the scenario at every point of the grid its --param flags span (each point --repeats
times, in-process), and writes into --out:

  tune.csv, tune.json  every point: p99 push latency, convergence p99, push cycles, events per
                       push, control-plane CPU seconds, bytes sent (medians over repeats), the
                       fast estimate, and the verdicts below
  tune.txt             the table, the Pareto frontier, its knee and the recommendation
  tune.png, tune.svg   latency against cost, dominated points greyed, knee and recommendation
                       marked
  point-N/run-K/       each run's summary.json, report.html and junit.xml

The Pareto frontier trades p99 push latency against cost (--cost push-cycles or cpu); the
knee is its point of diminishing returns; the recommendation is the cheapest point that meets
every latency threshold of the scenario (thresholds on *_seconds metrics), or the knee when
the scenario has none.

--param NAME=V1,V2,… takes minQuiet, maxDelay, endpoints, pushThrottle, policy (fixed or
adaptive) and the adaptive policy's maxQuiet, costFactor and weight, or any scenario path
(controlPlane.debounce.minQuiet, clients[0].count, …), values written as in a scenario file.
Fixed-policy points that differ only in the adaptive parameters run once.

When the grid holds both debounce policies, the report compares the best adaptive point with
the best fixed one (each the cheapest meeting the latency thresholds, else the knee of its own
frontier): p50 and p99 push latency, push cycles and control-plane CPU, each with a
Mann-Whitney U test over the runs, and a verdict — better, worse, mixed, no significant
difference, or inconclusive when there are too few runs for the test (4 a side at alpha 0.05).
--interleave spreads the machine's load changes over every point.

The fast estimate replays the scenario's churn timeline (from its seed, no control plane, no
clients) through the debouncer in virtual time and predicts each point's push cycles and
debounce delay in a moment; --estimate-only prints just that, and the report says how far the
estimate was from the real run at the recommended point.

--search adds one point between the grid's values: a Nelder-Mead search (gonum/optimize) over
minQuiet and maxDelay of the fast estimate, for the fewest predicted push cycles whose
predicted p99 push latency (debounce delay p99 plus the overhead the grid's runs measured on
top of it) stays within the scenario's p(99) threshold; that point is then run like the
others, so the frontier and the recommendation include it (a grid point it lands on is named,
not run again).`,
		Example: `  xdslab tune quickstart --param minQuiet=50ms,100ms,200ms --param maxDelay=1s,10s --repeats 3 --out out/tune
  xdslab tune eds-churn-1k --param minQuiet=10ms,100ms,500ms,1s --estimate-only
  xdslab tune quickstart --param policy=fixed,adaptive --param minQuiet=20ms,100ms --repeats 5 --interleave`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(fmt.Errorf("tune: want one SCENARIO (a file or a built-in name: %s)", strings.Join(scenarios.BuiltinNames(), ", ")))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runTune(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.params, "param", nil, "swept setting NAME=V1,V2,… (repeatable; the grid is their product)")
	fl.IntVar(&f.repeats, "repeats", 1, "runs per grid point (figures are medians over them)")
	fl.StringVar(&f.out, "out", "", "directory for the table, the plot and every run's outputs (default tune-SCENARIO)")
	fl.StringVar(&f.cost, "cost", string(tune.CostPushCycles), "cost axis of the frontier: push-cycles or cpu")
	fl.BoolVar(&f.estimateOnly, "estimate-only", false, "only the fast estimate: no runs")
	fl.StringVar(&f.logLevel, "log-level", "error", "log level of the runs on stderr: debug, info, warn or error")
	fl.BoolVar(&f.cpuSplit, "cpu-split", true, "split CPU between control plane and harness (needed for --cost cpu)")
	fl.BoolVar(&f.interleave, "interleave", false, "run the grid repeat by repeat (every point's run 1, then every point's run 2, …) so a change in the machine's load spreads over every point")
	fl.BoolVar(&f.search, "search", false, "after the grid, search between its minQuiet/maxDelay values with gonum/optimize on the fast estimate and run the point found")
	return cmd
}

func runTune(cmd *cobra.Command, name string, f tuneFlags) error {
	sc, err := scenarios.Resolve(name)
	if err != nil {
		return usageErr(fmt.Errorf("tune: %w", err))
	}
	if len(f.params) == 0 {
		return usageErr(errors.New("tune: no --param: give at least one, e.g. --param minQuiet=50ms,100ms,200ms"))
	}
	sweepsSink := false
	for _, p := range f.params {
		sweepsSink = sweepsSink || strings.HasPrefix(p, "sink.")
	}
	if sc.Sink.Kind == scenarios.SinkKube && !sweepsSink && !f.estimateOnly {
		// Each run was made in-process with another sink, measuring another input path.
		return usageErr(fmt.Errorf("tune: %s: sink.kind is kube, but tune runs the in-process control plane, which does not read a Kubernetes API server: set sink.kind to dir or mcp (or --param sink.kind=dir), or --estimate-only", sc.Name))
	}
	if f.repeats < 1 {
		return usageErr(fmt.Errorf("tune: --repeats %d must be at least 1", f.repeats))
	}
	if tune.Cost(f.cost) == tune.CostCPU && !f.cpuSplit && !f.estimateOnly {
		// Without the profile a run reports only the whole process's CPU (control plane and
		// harness together), which the frontier would rank as the control plane's.
		return usageErr(errors.New("tune: --cost cpu needs the control plane's own CPU, which --cpu-split measures: drop --cpu-split=false, or use --cost push-cycles"))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usageErr(fmt.Errorf("tune: --log-level %q: use debug, info, warn or error", f.logLevel))
	}
	opts := tune.Options{Repeats: f.repeats, Cost: tune.Cost(f.cost), EstimateOnly: f.estimateOnly,
		Search: f.search, Interleave: f.interleave, Progress: cmd.ErrOrStderr()}
	for _, p := range f.params {
		pp, err := tune.ParseParam(p)
		if err != nil {
			return usageErr(fmt.Errorf("tune: %w", err))
		}
		opts.Params = append(opts.Params, pp)
	}
	out := f.out
	if out == "" {
		out = "tune-" + sc.Name
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	run := tuneRunner(out, logger, f.cpuSplit)
	// An earlier tune's point-N/run-K would sit beside this one's under the same numbers
	// (compare reads every run-K of a point directory): they are removed, but only as the first
	// run starts, once tune.Tune has checked the sweep: a rerun refused as a usage error keeps
	// the earlier tune's runs.
	var clean sync.Once
	var cleanErr error
	opts.Run = func(ctx context.Context, sc *scenarios.Scenario, info tune.RunInfo) (*summary.Summary, error) {
		clean.Do(func() {
			n, err := removePointDirs(out)
			if err != nil {
				cleanErr = fmt.Errorf("--out %s: removing an earlier tune's point directories: %w", out, err)
				return
			}
			if n > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "tune: removed %d point-N directories of an earlier tune in %s\n", n, out)
			}
		})
		if cleanErr != nil {
			return nil, cleanErr
		}
		return run(ctx, sc, info)
	}
	if !f.estimateOnly {
		abs, _ := filepath.Abs(out)
		fmt.Fprintf(cmd.ErrOrStderr(), "tune: every run's outputs go to %s/point-N/run-K, the table and plots to %s (--out to choose)\n", abs, abs)
	}
	// The table and plots are written at the end, after every run (or the estimate was
	// printed): an --out that cannot be written is refused before.
	if err := checkOutFile("--out", filepath.Join(out, tune.TextFile)); err != nil {
		return usageErr(fmt.Errorf("tune: %w", err))
	}
	res, err := tune.Tune(cmd.Context(), sc, opts)
	interrupted := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if err != nil && !(interrupted && res != nil) {
		if interrupted {
			return withCode(exitInterrupted, fmt.Errorf("tune: interrupted before any run finished; nothing written"))
		}
		return usageErr(err)
	}
	// An interrupted tune still writes the table of the runs that finished, marked as such.
	if err := tune.WriteText(cmd.OutOrStdout(), res); err != nil {
		return err
	}
	switch err := tune.WriteFiles(out, res); {
	case errors.Is(err, tune.ErrNothingToPlot):
		fmt.Fprintf(cmd.OutOrStdout(), "\n%s, %s and %s written to %s; no plot: %v\n", tune.CSVFile, tune.JSONFile, tune.TextFile, out, tune.ErrNothingToPlot)
	case err != nil:
		return err
	default:
		fmt.Fprintf(cmd.OutOrStdout(), "\n%s, %s, %s, %s and %s written to %s\n", tune.CSVFile, tune.JSONFile,
			tune.TextFile, tune.PNGFile, tune.SVGFile, out)
	}
	if interrupted {
		return withCode(exitInterrupted, fmt.Errorf("tune: %s: the table covers the runs that finished (exit %d)", res.Interrupted, exitInterrupted))
	}
	failed := 0
	for _, pt := range res.Points {
		if pt.Error != "" {
			failed++
		}
	}
	if failed > 0 && failed == len(res.Points) {
		return usageErr(fmt.Errorf("tune: every point failed (the table says why)"))
	}
	return nil
}

// tuneRunner runs one repeat in-process with run.Run, its outputs in out/point-N/run-K.
func tuneRunner(out string, logger *slog.Logger, cpuSplit bool) tune.RunFunc {
	return func(ctx context.Context, sc *scenarios.Scenario, info tune.RunInfo) (*summary.Summary, error) {
		if sc.Sink.Kind == scenarios.SinkKube {
			return nil, errors.New("sink.kind kube: the in-process control plane does not read a Kubernetes API server")
		}
		dir := filepath.Join(out, fmt.Sprintf("point-%d", info.Point), fmt.Sprintf("run-%d", info.Repeat))
		return run.Run(ctx, sc, run.Options{Out: dir, Logger: logger, CPUProfile: cpuSplit,
			Progress: io.Discard})
	}
}

// pointDirRe names the directories tune writes a point's runs into.
var pointDirRe = regexp.MustCompile(`^point-[0-9]+$`)

// removePointDirs removes the point-N directories under out (an earlier tune's runs) and says
// how many there were; a missing out is none.
func removePointDirs(out string) (int, error) {
	entries, err := os.ReadDir(out)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !pointDirRe.MatchString(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(out, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
