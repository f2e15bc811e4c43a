package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/fakeenvoy/istioagent"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// fleetFlags are the flags of 'xdslab fleet'.
type fleetFlags struct {
	Target              string            `json:"target"`
	Clients             int               `json:"clients"`
	Duration            time.Duration     `json:"-"`
	Ramp                float64           `json:"ramp"`
	Delta               bool              `json:"delta"`
	Nack                string            `json:"nack"`
	AckDelay            string            `json:"ackDelay,omitempty"`
	NeverAck            bool              `json:"neverAck,omitempty"`
	DisconnectAfter     int               `json:"disconnectAfter,omitempty"`
	Group               string            `json:"group"`
	ProxyType           string            `json:"proxyType"`
	Labels              map[string]string `json:"labels,omitempty"`
	Namespace           string            `json:"namespace,omitempty"`
	Namespaces          int               `json:"namespaces,omitempty"`
	ClusterID           string            `json:"clusterID,omitempty"`
	IstioVersion        string            `json:"istioVersion,omitempty"`
	Generator           string            `json:"generator,omitempty"`
	Bootstrap           string            `json:"bootstrap"`
	NodeOnFirstOnly     bool              `json:"nodeOnFirstOnly,omitempty"`
	InitialFetchTimeout time.Duration     `json:"-"`
	ListenerDrain       time.Duration     `json:"-"`
	Churn               time.Duration     `json:"-"`
	ChurnJitter         float64           `json:"churnJitter,omitempty"`
	StreamsPerConn      int               `json:"streamsPerConn,omitempty"`
	AgentIssueDelay     time.Duration     `json:"-"`
	Seed                uint64            `json:"seed"`
	Auth                string            `json:"auth,omitempty"`
	CADir               string            `json:"caDir,omitempty"`
	JWTKey              string            `json:"jwtKey,omitempty"`
	JWTIssuer           string            `json:"jwtIssuer,omitempty"`
	JWTAudience         string            `json:"jwtAudience,omitempty"`
	ServerName          string            `json:"serverName,omitempty"`
	SummaryFile         string            `json:"-"`
	MetricsAddr         string            `json:"-"`
	Progress            string            `json:"-"`
	Segment             string            `json:"segment,omitempty"`
	Segments            int               `json:"segments,omitempty"`
	dist                distFlags
	jobIndex            string // JOB_COMPLETION_INDEX
	// changed reports whether a flag was given (nil: none was); withBootstrap fills the
	// others that --bootstrap sets.
	changed func(name string) bool
}

func newFleetCmd() *cobra.Command {
	f := fleetFlags{}
	cmd := &cobra.Command{
		Use:   "fleet --target HOST:PORT --clients N",
		Short: "Run a fleet of fake Envoys against any ADS server and summarise what they saw",
		Long: `fleet connects N fake Envoy clients (SotW or Delta ADS, Envoy's request order, ACK/NACK and
warming behaviour) to an ADS server — ours, istiod, any go-control-plane based one — ramps them
up at --ramp clients/s, runs for --duration (or until Ctrl-C), then prints a k6-like summary and
writes it as JSON with --summary. Connect failures (ResourceExhausted included) are retried with
Envoy's backoff and counted. Live metrics (xdslab_fleet_*) are served on --metrics-addr.

Ctrl-C before --duration has passed ends the run early: the summary is written, marked
(metadata.labels["note.interrupted"]), and the exit code is 130.

The run fails with exit 99 (its summary written first, with the check as a threshold) when
some client holds no full config as it ends: a fleet that never got its configuration measured
nothing. A shard of a distributed run (--scenario) leaves that verdict to 'xdslab merge'.

--nack combines: never, realistic (what Envoy rejects), p=P, every=N, name=REGEXP, e.g.
"realistic,p=0.001". --ack-delay is Envoy's apply time before the ACK: a duration (constant) or
DIST:PARAMS with durations — exp:MEAN, uniform:MIN:MAX, normal:MEAN:SIGMA, lognormal:MEDIAN:SIGMA
(sigma unitless), pareto:MIN:ALPHA.`,
		Example: `  xdslab fleet --target 127.0.0.1:15010 --clients 1000 --ramp 200 --duration 2m --summary fleet.json
  xdslab fleet --target istiod:15010 --clients 200 --delta --nack realistic --ack-delay exp:5ms --namespaces 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.jobIndex = os.Getenv("JOB_COMPLETION_INDEX")
			f.changed = cmd.Flags().Changed
			f.dist.Segment, f.dist.Segments = f.Segment, f.Segments
			if f.dist.Scenario != "" {
				return runScenarioFleet(cmd, f)
			}
			if f.dist.StartAt != "" || f.dist.StartAtFile != "" || f.dist.Probes != "" || f.dist.TargetMetrics != "" || f.dist.RunID != "" {
				return usageErr(errors.New("fleet: --start-at, --start-at-file, --run-id, --probes and --target-metrics need --scenario (a distributed run's shard)"))
			}
			return runFleet(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Target, "target", "", "ADS server HOST:PORT (required; insecure gRPC unless --auth)")
	fl.IntVar(&f.Clients, "clients", 10, "number of clients, 1..1000000 (in all, over every --segment)")
	fl.DurationVar(&f.Duration, "duration", 0, "run time after the ramp starts (0: until Ctrl-C)")
	fl.Float64Var(&f.Ramp, "ramp", 100, "clients started per second (0: all at once)")
	fl.BoolVar(&f.Delta, "delta", false, "speak incremental (Delta) ADS instead of state of the world")
	fl.StringVar(&f.Nack, "nack", "never", "NACK policy: never, realistic, p=P, every=N, name=REGEXP, comma-separated")
	fl.StringVar(&f.AckDelay, "ack-delay", "", "delay before each ACK: a duration or DIST:PARAMS (see above)")
	fl.BoolVar(&f.NeverAck, "never-ack", false, "hung clients: apply responses but never ACK")
	fl.IntVar(&f.DisconnectAfter, "disconnect-after", 0, "close each stream after this many responses (0: never)")
	fl.StringVar(&f.Group, "group", "fleet", "group name of the clients (probe reach, hooks)")
	fl.StringVar(&f.ProxyType, "proxy-type", "sidecar", "Istio proxy type: sidecar or router")
	fl.StringToStringVar(&f.Labels, "labels", nil, "node metadata LABELS, k=v,...; a router without an istio label gets istio=ingressgateway (the simulated Gateways' selector)")
	fl.StringVar(&f.Namespace, "namespace", "", "namespace of every client (default \"default\")")
	fl.IntVar(&f.Namespaces, "namespaces", 0, "spread clients round-robin over ns-0..ns-(K-1)")
	fl.StringVar(&f.ClusterID, "cluster-id", "", "node metadata CLUSTER_ID (default Kubernetes)")
	fl.StringVar(&f.IstioVersion, "istio-version", "", "node metadata ISTIO_VERSION")
	fl.StringVar(&f.Generator, "generator", "", "node metadata GENERATOR (grpc for proxyless)")
	fl.StringVar(&f.Bootstrap, "bootstrap", string(fakeenvoy.DefaultBootstrap), "the Envoy bootstrap the clients run with: istio (istio-agent's Envoy: node on a stream's first request only, no initial_fetch_timeout on CDS and LDS, 45s drain, the agent's connection with 1 MiB HTTP/2 windows and a 30s keepalive) or envoy (Envoy's own defaults: node on every request, 15s, 600s, 256 MiB windows); --node-first-only, --initial-fetch-timeout and --listener-drain given beside it win")
	fl.BoolVar(&f.NodeOnFirstOnly, "node-first-only", false, "send node only on a stream's first request (set_node_on_first_message_only; default: the --bootstrap profile's, true for istio; --node-first-only=false sends it on every request)")
	fl.DurationVar(&f.InitialFetchTimeout, "initial-fetch-timeout", 0, "Envoy's initial_fetch_timeout of the bootstrap CDS and LDS (default: the --bootstrap profile's, none for istio, 15s for envoy; 0: none)")
	fl.DurationVar(&f.ListenerDrain, "listener-drain", 0, "Envoy's --drain-time-s: a listener an LDS update removes keeps its route configurations and ADS secrets subscribed this long (default: the --bootstrap profile's, 45s for istio, 600s for envoy; 0: drops them at once)")
	fl.DurationVar(&f.Churn, "churn", 0, "reconnect every client this often (0: never)")
	fl.DurationVar(&f.AgentIssueDelay, "agent-issue-delay", istioagent.DefaultIssueDelay, "how long the emulated istio-agent takes to serve a client's workload certificate and root (secrets on sds-grpc, as istiod's auto-mTLS names them; 0: at once)")
	fl.Float64Var(&f.ChurnJitter, "churn-jitter", 0.2, "churn period jitter as a fraction of --churn, in [0,1)")
	fl.IntVar(&f.StreamsPerConn, "streams-per-conn", 0, "clients per shared gRPC connection (0 or 1: one connection per client, as Envoy); with --scenario, clients[].streamsPerConnection instead")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of every random choice")
	fl.StringVar(&f.Auth, "auth", "", "authenticate each client to a secure ADS listener as its namespace: mtls (certificates from --ca-dir's root) or jwt (tokens signed with --jwt-key); empty: insecure")
	fl.StringVar(&f.CADir, "ca-dir", "", "with --auth: directory of the server's root CA (ca.pem; ca-key.pem for mtls)")
	fl.StringVar(&f.JWTKey, "jwt-key", "", "with --auth jwt: PEM PKCS#8 private key that signs the tokens")
	fl.StringVar(&f.JWTIssuer, "jwt-issuer", "", "with --auth jwt: the tokens' iss claim")
	fl.StringVar(&f.JWTAudience, "jwt-audience", "", "with --auth jwt: the tokens' aud claim")
	fl.StringVar(&f.ServerName, "server-name", "", "with --auth: name the server certificate must carry (default localhost)")
	fl.StringVar(&f.SummaryFile, "summary", "", "write the JSON summary to this file")
	fl.StringVar(&f.MetricsAddr, "metrics-addr", "", "serve live Prometheus metrics on this address (/metrics)")
	fl.StringVar(&f.dist.Scenario, "scenario", "", "run this scenario's clients (file or built-in name) as one shard of a distributed run; --clients, --ramp, --duration, --seed and the client flags are then the scenario's (giving them too is an error); --metrics-addr, --progress and --summary work as without it")
	fl.StringVar(&f.Segment, "segment", "", "run shard I/N of the fleet: clients k with k mod N == I (auto: I from JOB_COMPLETION_INDEX, with --segments N)")
	fl.IntVar(&f.Segments, "segments", 0, "the shard count N (with --segment auto or unset: the index comes from JOB_COMPLETION_INDEX)")
	fl.StringVar(&f.dist.StartAt, "start-at", "", "with --scenario: start ramping at this time (RFC 3339 on the simulator's clock, or +DURATION)")
	fl.StringVar(&f.dist.StartAtFile, "start-at-file", "", "with --scenario: read the start time from this file (a mounted ConfigMap key)")
	fl.StringVar(&f.dist.RunID, "run-id", "", "with --scenario: the run's identity, written into the summary so that xdslab merge tells this run's shards from another's in the same directory (default: derived from the start time, the same in every shard given it)")
	fl.StringVar(&f.dist.Probes, "probes", "", "with --scenario: the simulator's probe stream, http://HOST:PORT (xdslab sim --publish)")
	fl.StringVar(&f.dist.TargetMetrics, "target-metrics", "", "with --scenario: the control plane's Prometheus endpoint (HOST:PORT or URL), for its CPU over the shard's run: merge compares it with the CPU of the shards on its machine")
	fl.StringVar(&f.Progress, "progress", "auto", "live progress on stderr: auto (a refreshed line on a terminal, log lines otherwise), line, log or off")
	return cmd
}

// fleetConfig turns the flags into the fleet's configuration, or a usage error naming the flag.
func fleetConfig(f fleetFlags, progress io.Writer) (fleet.Config, error) {
	if f.Target == "" {
		return fleet.Config{}, errors.New("fleet: --target is required, e.g. --target 127.0.0.1:15010")
	}
	if _, _, err := net.SplitHostPort(f.Target); err != nil {
		return fleet.Config{}, fmt.Errorf("fleet: --target %q must be HOST:PORT: %v", f.Target, err)
	}
	if f.Clients <= 0 {
		return fleet.Config{}, fmt.Errorf("fleet: --clients %d must be at least 1", f.Clients)
	}
	if f.Clients > scenarios.MaxClients {
		// Every client's state is allocated as it starts: 1e11 took the machine's 23 GB in
		// seconds.
		return fleet.Config{}, fmt.Errorf("fleet: --clients %d is more than %d, the lab's limit (as for a scenario's clients): use at most that", f.Clients, scenarios.MaxClients)
	}
	if f.Duration < 0 {
		return fleet.Config{}, fmt.Errorf("fleet: --duration %s must be >= 0 (0 runs until Ctrl-C)", f.Duration)
	}
	if f.ListenerDrain < 0 {
		return fleet.Config{}, fmt.Errorf("fleet: --listener-drain %s must be >= 0 (0 drops a removed listener's routes at once)", f.ListenerDrain)
	}
	if f.AgentIssueDelay < 0 {
		return fleet.Config{}, fmt.Errorf("fleet: --agent-issue-delay %s must be >= 0 (0 serves the secrets at once)", f.AgentIssueDelay)
	}
	nack, err := policy.ParseNack(f.Nack)
	if err != nil {
		return fleet.Config{}, fmt.Errorf("fleet: --nack: %w", err)
	}
	delay, err := parseDelay(f.AckDelay)
	if err != nil {
		return fleet.Config{}, fmt.Errorf("fleet: --ack-delay: %w", err)
	}
	profile := fakeenvoy.Bootstrap(f.Bootstrap).Profile()
	cfg := fleet.Config{
		Target: f.Target,
		Groups: []fleet.Group{{
			Name:  f.Group,
			Count: f.Clients,
			Identity: fakeenvoy.IdentityTemplate{Type: f.ProxyType, Namespace: f.Namespace, Namespaces: f.Namespaces,
				ClusterID: f.ClusterID, IstioVersion: f.IstioVersion, Generator: f.Generator, Labels: fleetLabels(f)},
			Client: fakeenvoy.ClientConfig{
				Delta:               f.Delta,
				NodeOnFirstOnly:     f.NodeOnFirstOnly,
				InitialFetchTimeout: initialFetchTimeout(f.InitialFetchTimeout),
				ListenerDrain:       listenerDrain(f.ListenerDrain),
				Nack:                nack,
				Ack:                 policy.Ack{Delay: delay, NeverAck: f.NeverAck, DisconnectAfter: f.DisconnectAfter},
			},
			// The connection to the control plane: istio-agent's under --bootstrap istio.
			Window: profile.Window, WindowUpdate: profile.WindowUpdate,
			KeepaliveTime: profile.KeepaliveTime, KeepaliveTimeout: profile.KeepaliveTimeout,
		}},
		Ramp:           f.Ramp,
		Churn:          fleet.Churn{Every: f.Churn, Jitter: f.ChurnJitter},
		StreamsPerConn: f.StreamsPerConn,
		Seed:           f.Seed,
		Agent:          istioagent.Config{IssueDelay: agentIssueDelay(f.AgentIssueDelay)},
	}
	if cfg.Segment, err = parseSegment(f.Segment, f.Segments, f.jobIndex); err != nil {
		return fleet.Config{}, fmt.Errorf("fleet: %w", err)
	}
	if f.Auth != "" {
		a := scenarios.Auth{CADir: f.CADir, JWTKey: f.JWTKey, Issuer: f.JWTIssuer, Audience: f.JWTAudience, ServerName: f.ServerName}
		switch f.Auth {
		case "mtls":
			a.MTLS = true
		case "jwt":
			a.JWT = true
			if f.JWTKey == "" || f.JWTIssuer == "" || f.JWTAudience == "" {
				return fleet.Config{}, errors.New("fleet: --auth jwt needs --jwt-key, --jwt-issuer and --jwt-audience")
			}
		default:
			return fleet.Config{}, fmt.Errorf("fleet: --auth %q: use mtls or jwt", f.Auth)
		}
		if cfg.Groups[0].Auth, err = run.ClientAuth(a, ""); err != nil {
			return fleet.Config{}, fmt.Errorf("fleet: --auth: %w", err)
		}
	}
	if cfg.Progress, cfg.ProgressTTY, err = progressMode("fleet", f.Progress, progress); err != nil {
		return fleet.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return fleet.Config{}, err
	}
	if err := cfg.Groups[0].Client.Ack.Validate(); err != nil {
		return fleet.Config{}, fmt.Errorf("fleet: %w", err)
	}
	return cfg, nil
}

// parseDelay parses --ack-delay into a distribution in seconds.
func parseDelay(s string) (dist.Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return dist.Spec{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return dist.Spec{}, fmt.Errorf("%q: a delay must be >= 0", s)
		}
		return dist.Constant(d.Seconds()), nil
	}
	name, rest, _ := strings.Cut(s, ":")
	params := strings.Split(rest, ":")
	dur := func(i int) (float64, error) {
		if i >= len(params) || params[i] == "" {
			return 0, fmt.Errorf("%q: %s needs %d parameters", s, name, i+1)
		}
		d, err := time.ParseDuration(params[i])
		if err != nil {
			return 0, fmt.Errorf("%q: parameter %d: %v (write a duration such as 5ms)", s, i+1, err)
		}
		return d.Seconds(), nil
	}
	num := func(i int) (float64, error) {
		if i >= len(params) || params[i] == "" {
			return 0, fmt.Errorf("%q: %s needs %d parameters", s, name, i+1)
		}
		v, err := strconv.ParseFloat(params[i], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: parameter %d: %q is not a number", s, i+1, params[i])
		}
		return v, nil
	}
	var spec dist.Spec
	var errs [2]error
	want := 2
	switch name {
	case "constant":
		spec.Value, errs[0] = dur(0)
		want = 1
	case "exp":
		spec.Mean, errs[0] = dur(0)
		want = 1
	case "uniform":
		spec.Min, errs[0] = dur(0)
		spec.Max, errs[1] = dur(1)
	case "normal":
		spec.Mean, errs[0] = dur(0)
		spec.Sigma, errs[1] = dur(1)
	case "lognormal":
		spec.Median, errs[0] = dur(0)
		spec.Sigma, errs[1] = num(1)
	case "pareto":
		spec.Min, errs[0] = dur(0)
		spec.Alpha, errs[1] = num(1)
	default:
		return dist.Spec{}, fmt.Errorf("%q: not a duration, and %q is not a distribution: use constant, exp, uniform, normal, lognormal or pareto", s, name)
	}
	if err := errors.Join(errs[:]...); err != nil {
		return dist.Spec{}, err
	}
	if len(params) != want {
		return dist.Spec{}, fmt.Errorf("%q: %s takes %d parameters, got %d", s, name, want, len(params))
	}
	spec.Dist = name
	if err := spec.Validate(); err != nil {
		return dist.Spec{}, fmt.Errorf("%q: %w", s, err)
	}
	return spec, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runFleet(cmd *cobra.Command, f fleetFlags) error {
	f, err := f.withBootstrap()
	if err != nil {
		return usageErr(err)
	}
	cfg, err := fleetConfig(f, cmd.ErrOrStderr())
	if err != nil {
		return usageErr(err)
	}
	if err := checkOutFile("fleet: --summary", f.SummaryFile); err != nil {
		return usageErr(err)
	}
	fl, err := fleet.New(cfg)
	if err != nil {
		return usageErr(err)
	}
	if advice := fdAdvice(fl.Size(), fl.Connections(), false, openFileLimit()); advice != "" { // this shard's clients
		fmt.Fprintln(cmd.ErrOrStderr(), advice)
	}
	ctx := cmd.Context()
	if f.MetricsAddr != "" {
		stop, err := serveFleetMetrics(f.MetricsAddr, fl, cmd.ErrOrStderr())
		if err != nil {
			return usageErr(err)
		}
		defer stop()
	}
	if err := fl.Start(ctx); err != nil {
		return err
	}
	// With --duration an interrupt cuts the run short (exit 130, as for run and the shards);
	// without, Ctrl-C is how the run ends.
	interrupted := false
	if f.Duration > 0 {
		t := time.NewTimer(f.Duration)
		select {
		case <-ctx.Done():
			interrupted = true
		case <-t.C:
		}
		t.Stop()
	} else {
		<-ctx.Done()
	}
	fl.Stop()
	ended := time.Now()
	began := fl.Began()
	metrics, err := collect.FleetMetrics(fl.Figures(), ended.Sub(began))
	if err != nil {
		return err
	}
	// A fleet that never got its configuration measured nothing: every client must hold its
	// first full config when the run ends, or the run fails (exit 99).
	full, checks, passed := collect.FullConfigCheck([]string{f.Group}, fl.GroupSizes(), fl.Observer().FullConfigByGroup())
	metrics = append(metrics, full...)
	config, err := f.configJSON()
	if err != nil {
		return err
	}
	s := &summary.Summary{
		Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "fleet", Started: began.UTC(), Ended: ended.UTC(),
			DurationSeconds: ended.Sub(began).Seconds()},
		Config:  config,
		Results: summary.Results{Passed: passed, Metrics: metrics, Thresholds: checks},
	}
	if seg := cfg.Segment; seg.Count > 0 {
		s.Metadata.Segment = &summary.Segment{Index: seg.Index, Count: seg.Count}
	}
	if interrupted {
		s.Metadata.Labels = map[string]string{"note.interrupted": fmt.Sprintf("interrupted after %s of the --duration %s", ended.Sub(began).Round(time.Millisecond), f.Duration)}
	}
	out := cmd.OutOrStdout()
	st := fl.Observer().Stats()
	fmt.Fprintf(out, "\nfleet: %d clients against %s for %s: %d reached a full config, %d connect failures, %d resend loops after NACK\n",
		fl.Size(), f.Target, ended.Sub(began).Round(time.Millisecond), st.FullConfig, st.ConnectFailuresTotal(), st.Total.ResendLoops)
	if note := collect.ConnectFailureNote(st); note != "" {
		fmt.Fprintf(out, "connect failures: %s\n", note)
	}
	if why := collect.IncompleteNote(fl.Incomplete()); why != "" {
		fmt.Fprintf(out, "without a full config: %s\n", why)
	}
	fmt.Fprintln(out)
	if err := writeFleetSummary(out, s, f.SummaryFile); err != nil {
		return err
	}
	if interrupted {
		return withCode(exitInterrupted, fmt.Errorf("fleet: interrupted after %s of the --duration %s (summary written)", ended.Sub(began).Round(time.Millisecond), f.Duration))
	}
	if !passed {
		return withCode(exitThreshold, fmt.Errorf("fleet: %d of %d clients never reached a full config", uint64(fl.Size())-min(st.FullConfig, uint64(fl.Size())), fl.Size()))
	}
	return nil
}

// configJSON is the resolved configuration embedded in summary.json, durations as text.
// writeFleetSummary prints a fleet's summary to out and, when file is set, writes it there.
func writeFleetSummary(out io.Writer, s *summary.Summary, file string) error {
	if err := summary.WriteText(out, s); err != nil {
		return err
	}
	if file != "" {
		if err := summary.WriteFile(file, s); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nsummary written to %s\n", file)
	}
	return nil
}

// withBootstrap checks --bootstrap and gives the flags it sets that were not given (see
// changed) its profile's values.
func (f fleetFlags) withBootstrap() (fleetFlags, error) {
	b, err := fakeenvoy.ParseBootstrap(f.Bootstrap)
	if err != nil {
		return f, fmt.Errorf("fleet: --bootstrap: %w", err)
	}
	f.Bootstrap = string(b)
	given := func(name string) bool { return f.changed != nil && f.changed(name) }
	p := b.Profile()
	if !given("node-first-only") {
		f.NodeOnFirstOnly = p.NodeOnFirstOnly
	}
	if !given("initial-fetch-timeout") {
		f.InitialFetchTimeout = p.InitialFetchTimeout
	}
	if !given("listener-drain") {
		f.ListenerDrain = p.ListenerDrain
	}
	return f, nil
}

// initialFetchTimeout maps the flag (0 or negative: none) onto the client's config (0: the
// default, negative: none).
func initialFetchTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// listenerDrain maps the flag (0: at once) onto the client's config (0: the default).
func listenerDrain(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// agentIssueDelay maps the flag (0: at once) onto the agent's config (0: the default).
func agentIssueDelay(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func (f fleetFlags) configJSON() ([]byte, error) {
	type durations struct {
		Duration            string `json:"duration"`
		InitialFetchTimeout string `json:"initialFetchTimeout"` // 0s: none
		Churn               string `json:"churn,omitempty"`
		AgentIssueDelay     string `json:"agentIssueDelay"`
		ListenerDrain       string `json:"listenerDrain"`
	}
	type alias fleetFlags // drops the methods, keeps the tags
	var d durations
	d.Duration = f.Duration.String()
	d.InitialFetchTimeout = max(0, f.InitialFetchTimeout).String()
	if f.Churn != 0 {
		d.Churn = f.Churn.String()
	}
	d.AgentIssueDelay = f.AgentIssueDelay.String()
	d.ListenerDrain = f.ListenerDrain.String()
	return json.Marshal(struct {
		alias
		durations
	}{alias(f), d})
}

// serveFleetMetrics serves the fleet's metrics, with the process's Go and process collectors,
// on addr until stop is called.
func serveFleetMetrics(addr string, fl *fleet.Fleet, log io.Writer) (stop func(), err error) {
	reg := prometheus.NewRegistry()
	if err := fl.Register(reg); err != nil {
		return nil, err
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return serveMetrics("fleet", addr, reg, log)
}

// fleetLabels are the clients' LABELS: --labels, plus istio=ingressgateway for routers that
// set no istio label, so that they are selected by the Gateways the simulator writes.
func fleetLabels(f fleetFlags) map[string]string {
	if f.ProxyType != "router" {
		return f.Labels
	}
	out := map[string]string{}
	for k, v := range simulator.GatewaySelector() {
		out[k] = v
	}
	for k, v := range f.Labels {
		out[k] = v
	}
	return out
}
