package main

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/controlplane/registry/kube"
	"github.com/xdslab/xdslab/controlplane/security"
)

// controlplaneFlags are the flags of 'xdslab controlplane'.
type controlplaneFlags struct {
	configDir    string
	deleteGuard  bool
	logLevel     string
	opts         controlplane.Options
	pushThrottle int
	policy       string
	kube         kubeFlags
	kubeNS       string
	sources      []string
}

func newControlplaneCmd() *cobra.Command {
	f := controlplaneFlags{opts: controlplane.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "controlplane --config-dir DIR | --kubeconfig FILE",
		Short: "Run the xDS control plane on a directory of Istio YAML",
		Long: `controlplane watches a directory of Istio YAML (ServiceEntry, WorkloadEntry, VirtualService,
DestinationRule, Sidecar, Gateway; multi-document files as you would kubectl-apply them),
debounces the changes and builds a snapshot per push. It serves /metrics, /debug/config (what
was loaded, and each file's last error) /debug/snapshot, /debug/syncz (per client and type: versions sent, acked and nacked, last error) and Go's profiles (/debug/pprof/) on --metrics-addr, and runs until
SIGINT or SIGTERM, then drains: GOAWAY, every xDS stream ended with Unavailable, the rest closed
after --drain-timeout. A change that would delete more than half of the config objects at once
(files moved out and back, rm -rf and restore) is held for --config-delete-settle and the
directory re-read before it applies; see docs/faults.md.

With --kubeconfig it also reads a Kubernetes cluster, as istiod does: Services and
EndpointSlices become services and endpoints, and Istio's config kinds (networking.istio.io/v1)
are read from the API server; see docs/kubernetes.md.`,
		Example: `  xdslab controlplane --config-dir examples/mesh
  xdslab controlplane --config-dir /tmp/mesh --min-quiet 50ms --max-delay 2s --debounce-eds=false
  xdslab controlplane --config-dir examples/mesh --debounce-policy adaptive --min-quiet 10ms --adaptive-max-quiet 500ms
  xdslab controlplane --kubeconfig ~/.kube/config
  xdslab controlplane --config-source xds://127.0.0.1:15020 --grpc-addr 127.0.0.1:15030`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runControlplane(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.configDir, "config-dir", "", "directory of Istio YAML to watch (required unless --kubeconfig or --config-source is given)")
	fl.StringArrayVar(&f.sources, "config-source", nil, "a config source, as istiod's configSources (repeatable): fs:///DIR (= --config-dir), k8s:// (= --kubeconfig), xds://HOST:PORT[?caFile=CA.pem&certFile=C&keyFile=K] (MCP over xDS; docs/mcp.md)")
	fl.BoolVar(&f.opts.ServeMCP, "serve-mcp", false, "also serve the config store over MCP (istiod's api generator) to ADS streams whose node metadata says GENERATOR=api")
	fl.BoolVar(&f.deleteGuard, "config-delete-guard", true, "hold a config-dir change that would delete more than --config-delete-share of the objects for --config-delete-settle, re-read the directory, then apply (=false: apply deletions at once)")
	fl.Float64Var(&f.opts.ConfigDeleteGuard.Share, "config-delete-share", config.DefaultDeleteShare, "with --config-delete-guard: the share of the objects (0-1] one change may delete without being held")
	fl.DurationVar(&f.opts.ConfigDeleteGuard.Settle, "config-delete-settle", config.DefaultDeleteSettle, "with --config-delete-guard: how long a mass deletion is held before the directory is re-read")
	fl.StringVar(&f.opts.GRPCAddr, "grpc-addr", controlplane.DefaultGRPCAddr, "address of the ADS (xDS) gRPC server")
	fl.StringVar(&f.opts.MetricsAddr, "metrics-addr", controlplane.DefaultMetricsAddr, "address of /metrics and /debug/*")
	fl.DurationVar(&f.opts.Debounce.MinQuiet, "min-quiet", f.opts.Debounce.MinQuiet, "push once no change arrived for this long (Istio's PILOT_DEBOUNCE_AFTER)")
	fl.DurationVar(&f.opts.Debounce.MaxDelay, "max-delay", f.opts.Debounce.MaxDelay, "push at the latest this long after a batch's first change (Istio's PILOT_DEBOUNCE_MAX)")
	fl.BoolVar(&f.opts.Debounce.DebounceEDS, "debounce-eds", f.opts.Debounce.DebounceEDS, "debounce endpoint-only changes too; =false pushes them at once")
	fl.StringVar(&f.policy, "debounce-policy", string(debounce.PolicyFixed), "how the quiet window is chosen: fixed (--min-quiet for every batch) or adaptive (grows with recent push cost between --min-quiet and --adaptive-max-quiet; a batch waits at most two windows)")
	fl.DurationVar(&f.opts.Debounce.Adaptive.MaxQuiet, "adaptive-max-quiet", debounce.DefaultAdaptiveMaxQuiet, "with --debounce-policy adaptive: the longest quiet window (at most --max-delay)")
	fl.Float64Var(&f.opts.Debounce.Adaptive.CostFactor, "adaptive-cost-factor", debounce.DefaultAdaptiveCostFactor, "with --debounce-policy adaptive: quiet window = this × the moving average of push durations")
	fl.Float64Var(&f.opts.Debounce.Adaptive.Weight, "adaptive-weight", debounce.DefaultAdaptiveWeight, "with --debounce-policy adaptive: weight of the newest push in the moving average, in (0, 1]")
	fl.IntVar(&f.pushThrottle, "push-throttle", 0, "proxies pushed concurrently (0: Istio's min(15 + 5 × cores, 100))")
	fl.BoolVar(&f.opts.FlowControl, "flow-control", f.opts.FlowControl, "hold a type's pushes to a client until it answers the last response of that type (ACK-gated)")
	fl.DurationVar(&f.opts.AckTimeout, "ack-timeout", f.opts.AckTimeout, "with --flow-control: release a held push when the client has not answered for this long (0: wait forever)")
	fl.DurationVar(&f.opts.SendTimeout, "send-timeout", f.opts.SendTimeout, "close a stream whose client has not read a response for this long (0: never)")
	fl.Float64Var(&f.opts.AdmissionRate, "admission-rate", 0, "new xDS streams admitted per second, ResourceExhausted beyond (0: the push throttle per second, as Istio; negative: no limit)")
	fl.DurationVar(&f.opts.AdmissionWait, "admission-wait", f.opts.AdmissionWait, "how long a new xDS stream waits for an admission token before ResourceExhausted (0: refuse at once)")
	fl.StringVar(&f.opts.Secure.Addr, "secure-grpc-addr", "", "also serve ADS over mTLS/JWT on this address (e.g. 127.0.0.1:15012; empty: off)")
	fl.StringVar(&f.opts.Secure.CADir, "ca-dir", "", "with --secure-grpc-addr: directory of the root CA (ca.pem, ca-key.pem), created on first start")
	fl.StringSliceVar(&f.opts.Secure.DNSNames, "server-dns-names", nil, "with --secure-grpc-addr: DNS names of the server certificate (default localhost, 127.0.0.1, ::1)")
	fl.StringVar(&f.opts.TrustDomain, "trust-domain", "", "SPIFFE trust domain of workload identities (default cluster.local)")
	fl.StringVar(&f.opts.Secure.JWKSFile, "jwks-file", "", "with --secure-grpc-addr: also accept bearer JWTs signed by this JWKS file's keys")
	fl.StringVar(&f.opts.Secure.JWTIssuer, "jwt-issuer", "", "required iss claim of bearer JWTs; without --jwks-file an OIDC issuer URL whose keys are discovered (ISSUER/.well-known/openid-configuration)")
	fl.DurationVar(&f.opts.Secure.JWKSRefresh, "jwks-refresh", security.DefaultJWKSRefresh, "with --jwt-issuer and no --jwks-file: how often the OIDC issuer's keys are fetched again")
	fl.StringVar(&f.opts.Secure.JWTAudience, "jwt-audience", "", "with --jwt-issuer: required aud value")
	fl.DurationVar(&f.opts.Secure.WorkloadCertTTL, "workload-cert-ttl", security.DefaultWorkloadCertTTL, "with --secure-grpc-addr: lifetime of the workload certificates served over SDS (re-issued and pushed at half of it)")
	fl.DurationVar(&f.opts.DrainTimeout, "drain-timeout", f.opts.DrainTimeout, "on SIGINT/SIGTERM: send GOAWAY and end every xDS stream, then close what is left after this long (0: stop at once)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.kube.register(fl, 50, 100)
	fl.StringVar(&f.kubeNS, "kube-namespace", "", "with --kubeconfig: watch only this namespace (default all)")
	fl.BoolVar(&f.kube.pods, "kube-pods", false, "with --kubeconfig: also watch Pods, for endpoint labels, service accounts and istio-locality (as istiod does)")
	return cmd
}

func runControlplane(cmd *cobra.Command, f controlplaneFlags) error {
	useKube := cmd.Flags().Changed("kubeconfig") || cmd.Flags().Changed("kube-namespace") || cmd.Flags().Changed("kube-pods")
	mcpSources, err := parseConfigSources(f.sources, &f.configDir, &useKube)
	if err != nil {
		return usageErr(fmt.Errorf("controlplane: %w", err))
	}
	f.opts.MCP = mcpSources
	if f.configDir == "" && !useKube && len(mcpSources) == 0 {
		return usageErr(errors.New("controlplane: --config-dir, --kubeconfig or --config-source is required: pass a directory of Istio YAML (e.g. --config-dir examples/mesh), a cluster's kubeconfig or an MCP server (--config-source xds://HOST:PORT)"))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usageErr(fmt.Errorf("controlplane: --log-level %q: use debug, info, warn or error", f.logLevel))
	}
	policy, err := debounce.ParsePolicy(f.policy)
	if err != nil {
		return usageErr(fmt.Errorf("controlplane: --debounce-policy: %w", err))
	}
	adaptiveSet := cmd.Flags().Changed("adaptive-max-quiet") || cmd.Flags().Changed("adaptive-cost-factor") || cmd.Flags().Changed("adaptive-weight")
	if adaptiveSet && policy != debounce.PolicyAdaptive {
		return usageErr(errors.New("controlplane: --adaptive-* flags configure the adaptive debounce policy: add --debounce-policy adaptive"))
	}
	if cmd.Flags().Changed("config-delete-share") && f.opts.ConfigDeleteGuard.Share == 0 {
		// The options read zero as the default (0.5): a guard holding every deletion was meant.
		return usageErr(fmt.Errorf("controlplane: --config-delete-share 0 is outside (0, 1]: use a small share such as 0.01 to hold almost every deletion, or --config-delete-guard=false to hold none"))
	}
	var secureSet []string
	for _, name := range []string{"ca-dir", "server-dns-names", "jwks-file", "jwt-issuer", "jwks-refresh", "jwt-audience", "workload-cert-ttl"} {
		if cmd.Flags().Changed(name) {
			secureSet = append(secureSet, "--"+name)
		}
	}
	if len(secureSet) > 0 && f.opts.Secure.Addr == "" {
		// Without the secure listener they would be ignored, and every client served in the clear.
		verb := "configure"
		if len(secureSet) == 1 {
			verb = "configures"
		}
		return usageErr(fmt.Errorf("controlplane: %s %s the secure ADS listener, which is off: add --secure-grpc-addr HOST:PORT (e.g. 127.0.0.1:15012)", strings.Join(secureSet, ", "), verb))
	}
	opts := f.opts
	opts.Debounce.Policy = policy
	if policy != debounce.PolicyAdaptive {
		// The fixed policy ignores them; keep the options as they were before policies.
		opts.Debounce.Adaptive = debounce.AdaptiveOptions{}
	}
	opts.ConfigDir = f.configDir
	opts.ConfigDeleteGuard.Off = !f.deleteGuard
	opts.PushThrottle = f.pushThrottle
	opts.Cores = runtime.NumCPU()
	opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	if useKube {
		kc, ic, err := f.kube.clients("xdslab-controlplane")
		if err != nil {
			return usageErr(fmt.Errorf("controlplane: %w", err))
		}
		ctrl, err := kube.New(kube.Options{Kube: kc, Istio: ic, Namespace: f.kubeNS, Pods: f.kube.pods, Logger: opts.Logger.With("component", "kube")})
		if err != nil {
			return usageErr(fmt.Errorf("controlplane: %w", err))
		}
		opts.Sources = append(opts.Sources, kubeSource{ctrl})
	}
	if err := opts.Validate(); err != nil {
		return usageErr(fmt.Errorf("controlplane: %s", strings.ReplaceAll(err.Error(), "\n", "; ")))
	}
	srv, err := controlplane.New(opts)
	if err != nil {
		return usageErr(err)
	}
	ctx := cmd.Context()
	if err := srv.Start(ctx); err != nil {
		srv.Stop()
		return usageErr(err)
	}
	defer srv.Stop()
	fmt.Fprintf(cmd.OutOrStdout(), "control plane running: metrics and debug on http://%s (/metrics, /debug/config, /debug/snapshot, /debug/syncz, /debug/pprof/); stop with Ctrl-C\n", srv.MetricsAddr())
	<-srv.Done()
	opts.Logger.Info("control plane stopping", "snapshot", srv.Snapshot().Version)
	return srv.Err()
}

// parseConfigSources reads --config-source values: fs:///DIR sets the config directory (one at
// most, and not beside --config-dir), k8s:// turns the Kubernetes source on, xds://HOST:PORT
// adds an MCP source.
func parseConfigSources(urls []string, configDir *string, useKube *bool) ([]mcpsource.Options, error) {
	var out []mcpsource.Options
	for _, raw := range urls {
		scheme, rest, ok := strings.Cut(raw, "://")
		switch {
		case !ok:
			return nil, fmt.Errorf("--config-source %q: want fs:///DIR, k8s:// or xds://HOST:PORT", raw)
		case scheme == "fs":
			if *configDir != "" {
				return nil, fmt.Errorf("--config-source %q: a config directory is already given (%s): pass one directory", raw, *configDir)
			}
			if rest == "" {
				return nil, fmt.Errorf("--config-source %q: name the directory, e.g. fs:///etc/istio/config", raw)
			}
			*configDir = rest
		case scheme == "k8s":
			if rest != "" && rest != "/" {
				return nil, fmt.Errorf("--config-source %q: only the local cluster (k8s://, with --kubeconfig) is supported", raw)
			}
			*useKube = true
		case scheme == "xds":
			o, err := mcpsource.ParseURL(raw)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		default:
			return nil, fmt.Errorf("--config-source %q: unknown scheme %q: use fs, k8s or xds", raw, scheme)
		}
	}
	return out, nil
}
