package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/report"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/internal/catalog"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// runFlags are the flags of 'xdslab run'.
type runFlags struct {
	out           string
	target        string
	sinkDir       string
	sink          string
	kube          kubeFlags
	clean         bool
	targetMetrics string
	repeat        int
	metricsAddr   string
	progress      string
	logLevel      string
	cpuProfile    bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [SCENARIO|NAME] [--out DIR] [--target HOST:PORT (--sink-dir DIR | --sink kube)]",
		Short: "Run a scenario against a control plane and report what it measured",
		Long: `run executes a scenario (a file, or a built-in name; default quickstart) in phases: the
initial topology is loaded into the control plane, the fake Envoy fleet connects and waits for
its first full config (connect), the simulator applies churn for the scenario's duration while
every client's observation of every event is timed (measure), and in-flight events are given
phases.drain.timeout to converge (drain). It prints a k6-like summary and writes summary.json,
report.html and junit.xml into --out.

By default the control plane is xdslab's own, started in this process with the scenario's
controlPlane settings. --target HOST:PORT drives any other ADS server instead (istiod, a
go-control-plane server, 'xdslab controlplane'): the simulator writes Istio YAML into
--sink-dir, which that control plane must watch; --target-metrics scrapes its /metrics for
debounce and cache figures when it exports Istio's pilot_* names. With the scenario key
sink: {kind: kube} (or --sink kube) the simulator writes to a Kubernetes API server instead,
which the control plane at --target reads (a stock istiod; see docs/kubernetes.md); the flags
--sink, --sink-dir, --kubeconfig, --kube-qps, --kube-burst and --kube-pods override the scenario's sink.

Built-in scenarios: ` + strings.Join(scenarios.BuiltinNames(), ", ") + `.
Every client group has an implicit threshold beside the scenario's: all its clients hold their
first full config when the connect phase ends (clients[].requireFullConfig: false drops it).

The first Ctrl-C (SIGINT or SIGTERM) stops the run: the simulator stops, in-flight events get
a brief drain, and what was measured is printed and written into --out, marked interrupted
(thresholds evaluated on it); a second Ctrl-C exits at once. A sink write error (the sink
directory gone for a moment) fails that event, counted in xdslab_sim_events_failed_total, and
the run goes on.

Exit codes: 0 ok, 2 bad usage or scenario, 99 a threshold failed (outputs are written first),
130 interrupted (outputs of what was measured are written first).`,
		Example: `  xdslab run                                   # quickstart, in-process
  xdslab run eds-churn-1k --out out/eds
  xdslab run my.yaml --repeat 5 --out out/base  # run-1..run-5 for 'xdslab compare'
  xdslab controlplane --config-dir /tmp/mesh --grpc-addr 127.0.0.1:15010 &
  xdslab run quickstart --target 127.0.0.1:15010 --sink-dir /tmp/mesh --target-metrics 127.0.0.1:15014
  xdslab run quickstart --target 127.0.0.1:15010 --sink kube --kubeconfig kind.kubeconfig --clean`,
		Args: oneScenario("run", true),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "quickstart"
			if len(args) == 1 {
				name = args[0]
			}
			return runRun(cmd, name, f, cmd.Flags().Changed)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "write summary.json, report.html and junit.xml into this directory")
	fl.StringVar(&f.target, "target", "", "external ADS server HOST:PORT (default: xdslab's control plane in-process)")
	fl.StringVar(&f.sinkDir, "sink-dir", "", "with --target: the directory of Istio YAML that control plane watches")
	fl.StringVar(&f.sink, "sink", "", "where the mesh goes: dir (--sink-dir, with --target), kube (a Kubernetes API server, with --target) or mcp (an MCP server on the scenario's sink.listen, which the control plane reads; in-process too); default the scenario's sink.kind")
	f.kube.register(fl, 50, 100)
	f.kube.registerPods(fl)
	fl.BoolVar(&f.clean, "clean", false, "with --sink-dir: remove YAML files already in the directory first; with the kube sink: the objects an earlier run wrote")
	fl.StringVar(&f.targetMetrics, "target-metrics", "", "with --target: its Prometheus endpoint (HOST:PORT or URL) for debounce, cache and CPU figures")
	fl.IntVar(&f.repeat, "repeat", 1, "run the scenario K times into DIR/run-1..run-K (for compare)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the live xdslab_* metrics on this address (/metrics)")
	fl.StringVar(&f.progress, "progress", "auto", "live progress on stderr: auto (a refreshed line on a terminal, log lines otherwise), line, log or off")
	fl.StringVar(&f.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	fl.BoolVar(&f.cpuProfile, "cpu-split", true, "in-process: split CPU between control plane and harness with a labelled CPU profile")
	return cmd
}

// runSink is the sink a run writes to: the scenario's sink key with the flags laid over it.
type runSink struct {
	kind string // scenarios.SinkDir or scenarios.SinkKube
	kube kubeFlags
}

// resolveSink lays the flags (changed reports which were given) over the scenario's sink key
// and checks that the result goes with the target, or returns a usage error saying what to do.
func resolveSink(sc *scenarios.Scenario, f runFlags, changed func(string) bool) (runSink, error) {
	from := "the scenario's sink.kind"
	if src := sc.Source(); src != "" {
		from = src + ": sink.kind"
	}
	rs := runSink{kind: sc.Sink.Kind, kube: kubeFlags{kubeconfig: sc.Sink.Kubeconfig, qps: sc.Sink.QPS, burst: sc.Sink.Burst, pods: sc.Sink.Pods}}
	switch {
	case changed("sink"):
		if f.sink != scenarios.SinkDir && f.sink != scenarios.SinkKube && f.sink != scenarios.SinkMCP {
			return runSink{}, fmt.Errorf("run: --sink %q: use dir, kube or mcp", f.sink)
		}
		rs.kind, from = f.sink, "--sink"
	case f.sinkDir != "":
		rs.kind, from = scenarios.SinkDir, "--sink-dir"
	}
	kubeFlagGiven := changed("kubeconfig") || changed("kube-qps") || changed("kube-burst") || changed("kube-pods")
	if rs.kind != scenarios.SinkKube {
		if kubeFlagGiven {
			return runSink{}, errors.New("run: --kubeconfig, --kube-qps, --kube-burst and --kube-pods go with the kube sink: add --sink kube (and --target)")
		}
		return rs, nil
	}
	if f.target == "" {
		return runSink{}, fmt.Errorf("run: %s is kube, but the in-process control plane does not read a Kubernetes API server: "+
			"add --target HOST:PORT of a control plane that watches the cluster (istiod, or 'xdslab controlplane --kubeconfig'), or pass --sink dir", from)
	}
	if f.sinkDir != "" {
		return runSink{}, errors.New("run: --sink-dir goes with the dir sink, not kube: drop --sink-dir, or pass --sink dir")
	}
	if changed("kubeconfig") {
		rs.kube.kubeconfig = f.kube.kubeconfig
	}
	if changed("kube-qps") {
		rs.kube.qps = f.kube.qps
	}
	if changed("kube-burst") {
		rs.kube.burst = f.kube.burst
	}
	if changed("kube-pods") {
		rs.kube.pods = f.kube.pods
	}
	return rs, nil
}

// kubeSink builds the Kubernetes clients of a kube sink and checks, before the fleet starts,
// that the API server answers; the sink itself is built per run (run.Run closes it after each).
func kubeSink(ctx context.Context, k kubeFlags, clean bool) (func() (simulator.Sink, error), error) {
	kc, ic, err := k.clients("xdslab-run")
	if err != nil {
		return nil, fmt.Errorf("run: kube sink: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := kc.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return nil, fmt.Errorf("run: kube sink: the API server of kubeconfig %s does not answer: %w: start the cluster, or pass the kubeconfig of a running one", k.path(), err)
	}
	return func() (simulator.Sink, error) {
		return sinks.NewKube(sinks.KubeOptions{Kube: kc, Istio: ic, Clean: clean, Pods: k.pods})
	}, nil
}

// runOptions turns the flags into the runner's options, or a usage error naming the flag.
func runOptions(f runFlags, sink runSink, stderr io.Writer) (run.Options, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return run.Options{}, fmt.Errorf("run: --log-level %q: use debug, info, warn or error", f.logLevel)
	}
	if f.repeat < 1 {
		return run.Options{}, fmt.Errorf("run: --repeat %d must be at least 1", f.repeat)
	}
	if f.target != "" {
		if _, _, err := net.SplitHostPort(f.target); err != nil {
			return run.Options{}, fmt.Errorf("run: --target %q must be HOST:PORT: %v", f.target, err)
		}
		if f.sinkDir == "" && sink.kind == scenarios.SinkDir {
			return run.Options{}, errors.New("run: --target needs --sink-dir DIR: the directory of Istio YAML the control plane at the target watches (or --sink kube)")
		}
	} else if f.sinkDir != "" || f.targetMetrics != "" {
		return run.Options{}, errors.New("run: --sink-dir and --target-metrics go with --target; without --target the control plane runs in-process")
	}
	o := run.Options{
		ToolVersion: toolVersion(),
		Out:         f.out, Target: f.target, SinkDir: f.sinkDir, CleanSinkDir: f.clean, TargetMetrics: f.targetMetrics,
		Repeat: f.repeat, MetricsAddr: f.metricsAddr, CPUProfile: f.cpuProfile, Harness: collect.DefaultHarnessLimits(),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	var err error
	if o.Progress, o.ProgressTTY, err = progressMode("run", f.progress, stderr); err != nil {
		return run.Options{}, err
	}
	return o, nil
}

func runRun(cmd *cobra.Command, name string, f runFlags, changed func(string) bool) error {
	sc, err := scenarios.Resolve(name)
	if err != nil {
		var es scenarios.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				fmt.Fprintln(cmd.ErrOrStderr(), e)
			}
			return usageErr(fmt.Errorf("run: %s: %d problem(s) in the scenario; 'xdslab validate %s' lists them", name, len(es), name))
		}
		return usageErr(fmt.Errorf("run: %w", err))
	}
	sink, err := resolveSink(sc, f, changed)
	if err != nil {
		return usageErr(err)
	}
	opts, err := runOptions(f, sink, cmd.ErrOrStderr())
	if err != nil {
		return usageErr(err)
	}
	if sink.kind == scenarios.SinkMCP {
		// The simulator serves MCP on the scenario's sink.listen; in-process, the control
		// plane reads it (bench/run), against --target that control plane must.
		sc.Sink.Kind = scenarios.SinkMCP
		if f.target != "" {
			if f.sinkDir != "" {
				return usageErr(errors.New("run: --sink-dir goes with the dir sink, not mcp: drop it"))
			}
			listen := sc.Sink.Listen
			opts.NewSink = func() (simulator.Sink, error) { return sinks.NewMCP(sinks.MCPOptions{Listen: listen}) }
		}
	}
	out := cmd.OutOrStdout()
	target := "in-process control plane"
	switch {
	case f.target != "" && sink.kind == scenarios.SinkKube:
		if opts.NewSink, err = kubeSink(cmd.Context(), sink.kube, f.clean); err != nil {
			return usageErr(err)
		}
		target = f.target + " (sink: the Kubernetes API server of " + sink.kube.path() + ")"
	case f.target != "" && sink.kind == scenarios.SinkMCP:
		target = f.target + " (sink: MCP on xds://" + sc.Sink.Listen + ")"
	case f.target != "":
		target = f.target + " (sink " + f.sinkDir + ")"
	}
	fmt.Fprintf(out, "xdslab run %s: %d clients, %d services, %s of churn against the %s\n",
		sc.Name, sc.TotalClients(), sc.Topology.Services, sc.Duration.D(), target)
	if advice := fdAdvice(sc.TotalClients(), sc.Connections(), f.target == "", openFileLimit()); advice != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), advice)
	}
	if f.target == "" { // the scenario's debounce is the in-process control plane's
		for _, w := range floorWarnings(cmd.Context(), sc) {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
		}
	}
	started := time.Now()
	// The first Ctrl-C (or SIGTERM) ends the run early through Stop; what was measured is
	// still collected and written, so the run itself must not see the cancellation.
	opts.Stop = cmd.Context().Done()
	s, err := run.Run(context.WithoutCancel(cmd.Context()), sc, opts)
	if s == nil {
		if err != nil && cmd.Context().Err() != nil {
			return withCode(exitInterrupted, fmt.Errorf("run: interrupted before anything was measured: %w", err))
		}
		if err != nil {
			return err
		}
	}
	interrupted := errors.Is(err, run.ErrInterrupted)
	fmt.Fprintf(out, "\n%s: done in %s\n\n", sc.Name, time.Since(started).Round(time.Millisecond))
	if interrupted {
		fmt.Fprintf(out, "INTERRUPTED: %s\n\n", run.Interrupted(s))
	}
	if werr := catalog.WriteHeadline(out, s); werr != nil {
		return werr
	}
	fmt.Fprintln(out, "\nall metrics:")
	if werr := summary.WriteText(out, s); werr != nil {
		return werr
	}
	if lines := report.HarnessLines(s); len(lines) > 0 {
		fmt.Fprintln(out)
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}
	for _, l := range report.NoteLines(s) {
		fmt.Fprintf(out, "\n%s\n", l)
	}
	written := err == nil || interrupted || errors.Is(err, run.ErrEndedEarly)
	switch {
	case f.out == "":
		fmt.Fprintln(out, "\nno --out given: nothing written; add --out DIR to keep summary.json, report.html and junit.xml")
	case written:
		where := f.out
		if f.repeat > 1 {
			where = filepath.Join(f.out, "run-1..run-"+fmt.Sprint(f.repeat))
		}
		fmt.Fprintf(out, "\nsummary.json, report.html and junit.xml written to %s\n", where)
	}
	if interrupted {
		return withCode(exitInterrupted, fmt.Errorf("run: %s: %s", sc.Name, run.Interrupted(s)))
	}
	if err != nil {
		return err
	}
	if !s.Results.Passed {
		failed := []string{}
		for _, t := range s.Results.Thresholds {
			if !t.Passed {
				failed = append(failed, t.Metric+summary.TagString(t.Tags)+" "+t.Expression+": "+summary.ThresholdMeasured(s.Results, t))
			}
		}
		return withCode(exitThreshold, fmt.Errorf("run: %d threshold(s) failed: %s", len(failed), strings.Join(failed, "; ")))
	}
	return nil
}
