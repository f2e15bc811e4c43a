package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe/stream"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// simFlags are the flags of 'xdslab sim'.
type simFlags struct {
	sinkDir      string
	events       string
	fast         bool
	clean        bool
	groupRouting bool
	apiVersion   string
	progress     time.Duration
	metricsAddr  string
	sink         string
	listen       string
	hold         bool
	kube         kubeFlags
	kubeSEs      bool
	pub          publishFlags
	// changed reports whether a flag was given (nil: none was).
	changed func(name string) bool
}

func newSimCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim SCENARIO|NAME --sink-dir DIR [--events FILE] [--fast]",
		Short: "Write a scenario's synthetic mesh as Istio YAML and apply its churn",
		Long: `sim builds the scenario's synthetic mesh (its topology section), writes it into --sink-dir
as Istio YAML, then applies the scenario's churn for its duration on the wall clock (or as
fast as possible with --fast). Any control plane that watches a directory of Istio YAML
(xdslab controlplane --config-dir DIR, or istiod with a file config source) can read it.

SCENARIO is a scenario file or a built-in name (see 'xdslab validate --list'); only its seed,
duration, topology and churn are used. Files in DIR:
  NS.SVC.yaml                   a service's ServiceEntry and WorkloadEntries (and with
                                --group-routing its VirtualService and DestinationRule)
  NS.KIND.NAME.yaml             every other object (VirtualService, DestinationRule, Sidecar)
Each file is written atomically (a temporary file in DIR renamed over it); deleting a service
removes its files. DIR must hold no YAML files unless --clean is given.

--events FILE records every applied event as one JSON line (id, kind, scheduled offset, t0,
upserts, deletes, expectation); a scenario's replay churn re-emits such a file.`,
		Args: oneScenario("sim", false),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.changed = cmd.Flags().Changed
			return runSim(cmd.Context(), cmd.OutOrStdout(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.sinkDir, "sink-dir", "", "directory to write Istio YAML into (required)")
	fl.StringVar(&f.events, "events", "", "write the event log (JSON lines) to this file")
	fl.BoolVar(&f.fast, "fast", false, "run as fast as possible on a virtual clock (a dry run; t0 values are virtual)")
	fl.BoolVar(&f.clean, "clean", false, "remove YAML files already in --sink-dir first (with --sink kube: the objects an earlier run wrote)")
	fl.BoolVar(&f.groupRouting, "group-routing", false, "write VirtualServices and DestinationRules into their service's file")
	fl.StringVar(&f.apiVersion, "api-version", istioconfig.DefaultAPIVersion, "apiVersion of the written objects (networking.istio.io/v1alpha3, v1beta1 or v1)")
	fl.DurationVar(&f.progress, "progress", 5*time.Second, "print a progress line this often (run time); 0 disables")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the simulator's Prometheus metrics on this address (e.g. 127.0.0.1:15090)")
	fl.StringVar(&f.sink, "sink", "dir", "where the mesh goes: dir (Istio YAML in --sink-dir), kube (a Kubernetes API server; see docs/kubernetes.md) or mcp (an MCP-over-xDS server on --listen; see docs/mcp.md)")
	fl.StringVar(&f.listen, "listen", "", "with --sink mcp: the address to serve MCP on (control planes read it as --config-source xds://HOST:PORT)")
	fl.BoolVar(&f.hold, "hold", false, "with --sink mcp: keep serving the final state after the churn until interrupted")
	fl.StringVar(&f.pub.addr, "publish", "", "distributed run: serve the probe stream to the fleet shards on this address (docs/distributed.md)")
	fl.IntVar(&f.pub.shards, "shards", 1, "with --publish: the number of fleet shards (xdslab fleet --segment I/N)")
	fl.DurationVar(&f.pub.ackTimeout, "ack-timeout", 5*time.Second, "with --publish: longest wait for every shard to register an event before writing it")
	fl.DurationVar(&f.pub.shardWait, "shard-wait", 10*time.Minute, "with --publish: longest wait for every shard to subscribe and connect its clients")
	fl.StringVar(&f.pub.summary, "summary", "", "with --publish: write the simulator's summary (events, t0, acks) here, for xdslab merge")
	fl.StringVar(&f.pub.startAt, "start-at", "", "with --publish: start churn no earlier than this time (RFC 3339 or +DURATION)")
	fl.StringVar(&f.pub.runID, "run-id", "", "with --publish: the run's identity, written into the summary for xdslab merge (default: derived from the start time, as the shards derive it)")
	fl.StringVar(&f.pub.startAtFile, "start-at-file", "", "with --publish: read the start time from this file (a mounted ConfigMap key)")
	f.kube.register(fl, 50, 100)
	f.kube.registerPods(fl)
	fl.BoolVar(&f.kubeSEs, "kube-service-entries", false, "with --sink kube: write ServiceEntries instead of Services and EndpointSlices")
	return cmd
}

func runSim(ctx context.Context, out io.Writer, scenario string, f simFlags) (err error) {
	switch {
	case f.sink != "dir" && f.sink != "kube" && f.sink != "mcp":
		return usageErr(fmt.Errorf("sim: --sink %q: use dir, kube or mcp", f.sink))
	case f.sink == "mcp" && f.listen == "":
		return usageErr(errors.New("sim: --sink mcp needs --listen HOST:PORT: the address control planes read as --config-source xds://HOST:PORT"))
	case f.sink != "mcp" && (f.listen != "" || f.hold):
		return usageErr(errors.New("sim: --listen and --hold go with --sink mcp"))
	case f.sink == "dir" && f.sinkDir == "":
		return usageErr(errors.New("sim: --sink-dir is required: the directory the control plane watches (or --sink kube)"))
	case !slices.Contains(istioconfig.APIVersions(), f.apiVersion):
		return usageErr(fmt.Errorf("sim: --api-version %q: use one of %s", f.apiVersion, strings.Join(istioconfig.APIVersions(), ", ")))
	case f.pub.shardWait < 0:
		return usageErr(fmt.Errorf("sim: --shard-wait %s must be >= 0 (0: wait the default 10m)", f.pub.shardWait))
	case f.progress < 0:
		return usageErr(fmt.Errorf("sim: --progress %s must be >= 0 (0 disables the progress lines)", f.progress))
	}
	// Flags that only mean something beside another were ignored without it.
	changed := f.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	var needPublish, needKube []string
	for _, name := range []string{"shards", "ack-timeout", "shard-wait"} {
		if changed(name) && f.pub.addr == "" {
			needPublish = append(needPublish, "--"+name)
		}
	}
	for _, name := range []string{"kube-pods", "kube-service-entries"} {
		if changed(name) && f.sink != "kube" {
			needKube = append(needKube, "--"+name)
		}
	}
	if len(needPublish) > 0 {
		return usageErr(fmt.Errorf("sim: %s go with --publish ADDR (a distributed run's simulator, docs/distributed.md)", strings.Join(needPublish, ", ")))
	}
	if len(needKube) > 0 {
		return usageErr(fmt.Errorf("sim: %s go with --sink kube (docs/kubernetes.md)", strings.Join(needKube, ", ")))
	}
	if changed("api-version") && f.sink != "dir" {
		return usageErr(fmt.Errorf("sim: --api-version goes with --sink dir (the kube sink writes %s)", sinks.KubeIstioAPIVersion))
	}
	sc, err := scenarios.Resolve(scenario)
	if err != nil {
		return usageErr(err)
	}
	var startAt time.Time
	if f.pub.addr != "" {
		if f.fast {
			return usageErr(errors.New("sim: --publish runs on the wall clock: drop --fast"))
		}
		if f.pub.shards < 1 {
			return usageErr(fmt.Errorf("sim: --shards %d must be at least 1", f.pub.shards))
		}
		if f.pub.ackTimeout <= 0 {
			return usageErr(fmt.Errorf("sim: --ack-timeout %s must be > 0", f.pub.ackTimeout))
		}
		if startAt, err = parseStartAt(f.pub.startAt, f.pub.startAtFile, time.Now()); err != nil {
			return usageErr(fmt.Errorf("sim: %w", err))
		}
		if err := checkOutFile("sim: --summary", f.pub.summary); err != nil {
			return usageErr(err)
		}
		var warning string
		if f.pub.runID, warning, err = runIdentity("sim", f.pub.runID, f.pub.startAt, startAt, f.pub.shards, time.Now()); err != nil {
			return usageErr(err)
		}
		if warning != "" && f.pub.summary != "" {
			fmt.Fprintln(out, "warning:", warning)
		}
	} else if f.pub.summary != "" || f.pub.startAt != "" || f.pub.startAtFile != "" || f.pub.runID != "" {
		return usageErr(errors.New("sim: --summary, --start-at, --start-at-file and --run-id need --publish"))
	}
	sim, err := simulator.New(run.SimConfig(sc))
	if err != nil {
		return usageErr(fmt.Errorf("sim: scenario %s: %w", scenario, err))
	}
	var (
		sink  simulator.Sink
		where = f.sinkDir
		files = func() string { return "" }
		hold  func()
	)
	var mcpCounters []prometheus.Collector
	if f.sink == "mcp" {
		superseded := prometheus.NewCounter(prometheus.CounterOpts{Name: "xdslab_sim_mcp_superseded_total",
			Help: "MCP responses a subscriber never got because a newer state of the same type replaced them (a slow subscriber)."})
		nacks := prometheus.NewCounter(prometheus.CounterOpts{Name: "xdslab_sim_mcp_nacks_total",
			Help: "MCP responses a subscriber rejected (NACK)."})
		mcpCounters = []prometheus.Collector{superseded, nacks}
		ms, err := sinks.NewMCP(sinks.MCPOptions{Listen: f.listen, Superseded: superseded, NACKs: nacks})
		if err != nil {
			return usageErr(fmt.Errorf("sim: %w", err))
		}
		sink, where = ms, "MCP subscribers of xds://"+ms.Addr()
		files = func() string { return fmt.Sprintf(" (%d subscribers)", ms.Stats().Streams) }
		defer func() {
			st := ms.Stats()
			fmt.Fprintf(out, "sim: MCP: %d subscribers, %d responses sent, %d superseded (slow subscribers), %d NACKs\n", st.Subscribed, st.Sent, st.Superseded, st.NACKs)
		}()
		if f.hold {
			hold = func() {
				fmt.Fprintf(out, "sim: serving the final state on xds://%s until interrupted\n", ms.Addr())
				<-ctx.Done()
			}
		}
	} else if f.sink == "kube" {
		kc, ic, err := f.kube.clients("xdslab-sim")
		if err != nil {
			return usageErr(fmt.Errorf("sim: %w", err))
		}
		ks, err := sinks.NewKube(sinks.KubeOptions{Kube: kc, Istio: ic, ServiceEntries: f.kubeSEs, Clean: f.clean, Pods: f.kube.pods})
		if err != nil {
			return usageErr(err)
		}
		sink, where = ks, "the Kubernetes API server "+f.kube.path()
		files = func() string { return fmt.Sprintf(" (%d API writes)", ks.Stats().Objects()) }
	} else {
		ds, err := sinks.NewDir(sinks.DirOptions{Dir: f.sinkDir, APIVersion: f.apiVersion, GroupRouting: f.groupRouting, Clean: f.clean})
		if err != nil {
			return usageErr(err)
		}
		sink = ds
		files = func() string { return fmt.Sprintf(" (%d files)", ds.Writes) }
	}
	defer sink.Close()
	var recorders []simulator.Sink
	if f.events != "" {
		file, err := os.Create(f.events)
		if err != nil {
			return usageErr(fmt.Errorf("sim: --events: %w", err))
		}
		log := sinks.NewEventLog(file)
		recorders = append(recorders, log)
		defer func() {
			err = errors.Join(err, log.Close(), file.Close())
		}()
	}
	reg := prometheus.NewRegistry()
	metrics, err := simulator.NewMetrics(reg)
	if err != nil {
		return err
	}
	for _, c := range mcpCounters {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	if f.metricsAddr != "" {
		stop, err := serveMetrics("sim", f.metricsAddr, reg, out)
		if err != nil {
			return usageErr(err)
		}
		defer stop()
	}
	if f.pub.addr != "" {
		return runPublishedSim(ctx, out, sc, f, sink, recorders, metrics, startAt, where, files)
	}
	var clock simulator.Clock = &simulator.WallClock{}
	if f.fast {
		clock = simulator.NewVirtualClock(time.Now())
	}
	p := &simProgress{out: out, clock: clock, every: f.progress}
	r, err := simulator.NewRunner(sim, simulator.RunnerOptions{
		Clock: clock, Sink: sink, Recorders: recorders, Metrics: metrics, OnApplied: p.applied,
	})
	if err != nil {
		return err
	}
	initial := sim.Initial()
	if err := r.Init(ctx); err != nil {
		return usageErr(fmt.Errorf("sim: %w", err))
	}
	fmt.Fprintf(out, "sim: %s: wrote %d objects (%s) to %s%s\n", sc.Name, len(initial), simCensus(initial), where, files())
	fmt.Fprintf(out, "sim: applying churn for %v (%d processes, seed %d)%s\n", sc.Duration.D(), len(sc.Churn), sc.Seed, map[bool]string{true: " as fast as possible", false: ""}[f.fast])
	p.start = clock.Now()
	stats, runErr := r.Run(ctx)
	simSummary(out, stats, clock.Now().Sub(p.start))
	if runErr == nil && hold != nil {
		hold() // the sink and the metrics server stay up until interrupted
	}
	if runErr != nil && errors.Is(runErr, context.Canceled) {
		// What was applied is in the directory (every write is atomic) and counted above.
		return withCode(exitInterrupted, errors.New("sim: interrupted before the end of the churn"))
	}
	return runErr
}

// simCensus counts objects by kind, in the order kinds first appear.
func simCensus(objs []istioconfig.Config) string {
	var kinds []istioconfig.Kind
	n := map[istioconfig.Kind]int{}
	for _, c := range objs {
		if n[c.Kind] == 0 {
			kinds = append(kinds, c.Kind)
		}
		n[c.Kind]++
	}
	s := ""
	for i, k := range kinds {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", n[k], k)
	}
	return s
}

// simProgress prints a line at most every `every` of run time, from the runner's goroutine.
type simProgress struct {
	out          io.Writer
	clock        simulator.Clock
	every        time.Duration
	start, next  time.Time
	events, late int
}

func (p *simProgress) applied(ev simulator.Event) {
	p.events++
	if ev.Late {
		p.late++
	}
	if p.every <= 0 {
		return
	}
	now := p.clock.Now()
	if p.next.IsZero() {
		p.next = p.start.Add(p.every)
	}
	if now.Before(p.next) {
		return
	}
	for !now.Before(p.next) {
		p.next = p.next.Add(p.every)
	}
	fmt.Fprintf(p.out, "sim: t=%-8v events=%d late=%d last=%s (%s)\n", now.Sub(p.start).Truncate(time.Millisecond), p.events, p.late, ev.Kind, ev.Expectation.All[0])
}

func simSummary(out io.Writer, s simulator.Stats, took time.Duration) {
	fmt.Fprintf(out, "sim: done in %v: %d events applied, %d late", took.Truncate(time.Millisecond), s.Events, s.Late)
	if s.Late > 0 {
		fmt.Fprintf(out, " (max %v, mean %v)", s.MaxLateness, s.TotalLateness/time.Duration(s.Late))
	}
	fmt.Fprintf(out, ", %d skipped (nothing to change)\n", s.Skipped)
	if s.Failed > 0 {
		fmt.Fprintf(out, "sim: the sink failed to apply %d events (first error: %v); the churn went on\n", s.Failed, s.FirstFailure)
	}
	kinds := make([]string, 0, len(s.ByKind))
	for k := range s.ByKind {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ks := s.ByKind[simulator.ChurnKind(k)]
		fmt.Fprintf(out, "  %-24s events=%-6d late=%-6d skipped=%d\n", k, ks.Events, ks.Late, ks.Skipped)
	}
}

// runPublishedSim is 'xdslab sim --publish': the simulator of a distributed run.
func runPublishedSim(ctx context.Context, out io.Writer, sc *scenarios.Scenario, f simFlags, sink simulator.Sink,
	recorders []simulator.Sink, metrics *simulator.Metrics, startAt time.Time, where string, files func() string) error {
	pub, err := stream.NewPublisher(stream.PublisherConfig{Shards: f.pub.shards, AckTimeout: f.pub.ackTimeout, Scenario: sc.Name})
	if err != nil {
		return usageErr(err)
	}
	stop, err := servePublisher(f.pub.addr, pub, out)
	if err != nil {
		return usageErr(err)
	}
	defer stop()
	fmt.Fprintf(out, "sim: %s: writing the initial topology to %s, then waiting for %d shard(s)\n", sc.Name, where, f.pub.shards)
	s, err := run.RunPublished(ctx, sc, run.PublishOptions{Sink: sink, Publisher: pub, StartAt: startAt,
		ShardWait: f.pub.shardWait, Recorders: recorders, Metrics: metrics, Progress: out})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return withCode(exitInterrupted, errors.New("sim: interrupted before the end of the churn"))
		}
		return fmt.Errorf("sim: %w", err)
	}
	ev, _ := s.Results.Find(collect.MetricSimEvents, nil)
	to, _ := s.Results.Find(collect.MetricBarrierTimeouts, nil)
	fmt.Fprintf(out, "sim: done: %v events applied%s, %v held past the ack timeout by some shard\n", ev.Values["count"], files(), to.Values["count"])
	if f.pub.summary != "" {
		setRunLabel(s, f.pub.runID)
		if err := summary.WriteFile(f.pub.summary, s); err != nil {
			return err
		}
		fmt.Fprintf(out, "sim: summary written to %s\n", f.pub.summary)
	}
	return nil
}
