package controlplane

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/debounce"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/controlplane/push"
	"github.com/xdslab/xdslab/controlplane/xds"
)

// Default addresses (Istio's ports: 15010 plaintext xDS, 15014 monitoring).
const (
	DefaultGRPCAddr    = "127.0.0.1:15010"
	DefaultMetricsAddr = "127.0.0.1:15014"
)

// DefaultDrainTimeout is how long a stopping server waits for its streams to end.
const DefaultDrainTimeout = 5 * time.Second

// Options configure a Server. Start from DefaultOptions.
type Options struct {
	// ConfigDir is the directory of Istio YAML to watch. Empty: no file source (the memory
	// registry and the config store are then fed in-process).
	ConfigDir string
	// ConfigRescan is how often the config directory is rescanned as a safety net for missed
	// fs events. Zero means the file source's default (1s); negative disables rescans.
	ConfigRescan time.Duration
	// ConfigDeleteGuard holds a config directory change that would delete a large share of the
	// objects at once, re-reads the directory after a settle period, then applies what it
	// holds; its zero value is the default guard (more than 50%, held 5s). Its Held counter is
	// the server's xdslab_cp_config_mass_deletes_held_total.
	ConfigDeleteGuard config.DeleteGuard
	// GRPCAddr is where the ADS server listens (host:port; port 0 picks one).
	GRPCAddr string
	// MetricsAddr is where /metrics and /debug/* are served (host:port; port 0 picks one).
	MetricsAddr string
	// Debounce configures the debouncer (minQuiet, maxDelay, whether endpoint-only changes are
	// debounced).
	Debounce debounce.Options
	// PushThrottle is the number of proxies pushed concurrently. Zero derives it from Cores as
	// Istio does: min(15 + 5 × cores, 100).
	PushThrottle int
	// FlowControl holds newer pushes of a type for a client while its last response of that
	// type is unanswered (ACK-gated flow control, which Istio removed); AckTimeout releases a
	// held push when the client does not answer.
	FlowControl bool
	AckTimeout  time.Duration
	// SendTimeout closes a stream whose client has not read a response for this long, so a
	// stuck client cannot hold a push worker; zero disables it.
	SendTimeout time.Duration
	// AdmissionRate limits new xDS streams per second (ResourceExhausted beyond, so a reconnect
	// storm cannot starve pushes). Zero derives it from the push throttle, as Istio does;
	// negative disables the limit.
	AdmissionRate float64
	// AdmissionWait is how long a new stream waits for an admission token before it is refused;
	// zero refuses at once.
	AdmissionWait time.Duration
	// DrainTimeout bounds a graceful stop: the gRPC servers send GOAWAY and end every xDS
	// stream with Unavailable (clients reconnect elsewhere), and what has not ended after
	// DrainTimeout is closed (grpc.Server.GracefulStop, then Stop, as istiod does with its
	// 10s shutdownDuration). Zero stops at once, as a crash would look to clients.
	DrainTimeout time.Duration
	// Cores is the number of CPU cores the server may use; zero means runtime.GOMAXPROCS(0).
	Cores int
	// TrustDomain of the SPIFFE ids built from workload service accounts; empty means
	// cluster.local.
	TrustDomain string
	// Secure configures the mTLS/JWT ADS listener; its zero value disables it.
	Secure SecureOptions
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the control-plane metrics; nil means a new registry of the server's
	// own. Gatherer is what /metrics serves; nil means Registerer when it is also a Gatherer
	// (a *prometheus.Registry is both).
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// Pusher receives every snapshot the server builds; nil means none (the server only keeps
	// the latest one).
	Pusher Pusher
	// Now is the clock that stamps changes; nil means time.Now.
	Now func() time.Time
	// Sources are external feeds such as the Kubernetes registry (controlplane/registry/kube):
	// each one's services and endpoints are merged after the in-process registry, its Istio
	// config goes into the config store, and the first push waits until every source synced.
	Sources []Source
	// MCP lists MCP-over-xDS config sources (`xds://host:port`, istiod's api generator or any
	// MCP server): each one's objects go into the config store, and the first push waits until
	// every one answered every collection. Their metric hooks are set by the server.
	MCP []mcpsource.Options
	// ServeMCP serves the config store over MCP (istiod's api generator) on the ADS listeners
	// to streams whose node metadata says GENERATOR=api; on the secure listener they
	// authenticate as every stream there does.
	ServeMCP bool
}

// DefaultOptions returns the defaults: gRPC on 127.0.0.1:15010, metrics on 127.0.0.1:15014,
// Istio's debounce (100ms quiet, 10s max delay, endpoint changes debounced), push throttle from
// the core count, no config directory.
func DefaultOptions() Options {
	return Options{
		GRPCAddr:      DefaultGRPCAddr,
		MetricsAddr:   DefaultMetricsAddr,
		Debounce:      debounce.DefaultOptions(),
		FlowControl:   true,
		AckTimeout:    push.DefaultAckTimeout,
		SendTimeout:   30 * time.Second,
		AdmissionWait: xds.DefaultAdmissionWait,
		DrainTimeout:  DefaultDrainTimeout,
	}
}

// EffectiveAdmissionRate is AdmissionRate, the push throttle per second when it is zero, or 0
// (no limit) when it is negative.
func (o Options) EffectiveAdmissionRate() float64 {
	switch {
	case o.AdmissionRate > 0:
		return o.AdmissionRate
	case o.AdmissionRate < 0:
		return 0
	}
	return float64(o.EffectivePushThrottle())
}

// EffectiveCores is Cores, or runtime.GOMAXPROCS(0) when it is zero.
func (o Options) EffectiveCores() int {
	if o.Cores > 0 {
		return o.Cores
	}
	return runtime.GOMAXPROCS(0)
}

// EffectivePushThrottle is PushThrottle, or Istio's min(15 + 5 × cores, 100) when it is zero.
func (o Options) EffectivePushThrottle() int {
	if o.PushThrottle > 0 {
		return o.PushThrottle
	}
	return min(15+5*o.EffectiveCores(), 100)
}

// Validate reports every problem with the options, each saying how to fix it.
func (o Options) Validate() error {
	var errs []error
	if o.ConfigDir != "" {
		if fi, err := os.Stat(o.ConfigDir); err != nil {
			errs = append(errs, fmt.Errorf("config dir: %w: create it or pass an existing directory", err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("config dir %s is not a directory: pass the directory that holds the YAML files", o.ConfigDir))
		}
	}
	for _, m := range o.MCP {
		if _, _, err := net.SplitHostPort(m.Addr); err != nil {
			errs = append(errs, fmt.Errorf("MCP config source %q: %v: write xds://host:port", m.Addr, err))
		}
	}
	for _, a := range []struct{ name, addr string }{{"grpc address", o.GRPCAddr}, {"metrics address", o.MetricsAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %v: write host:port, e.g. 127.0.0.1:15010", a.name, a.addr, err))
		}
	}
	if err := o.ConfigDeleteGuard.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.Secure.validate()...)
	if err := o.Debounce.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.PushThrottle < 0 {
		errs = append(errs, fmt.Errorf("push throttle %d is negative: use 0 (derived from the cores) or a positive number", o.PushThrottle))
	}
	if o.FlowControl && o.AckTimeout < 0 {
		errs = append(errs, fmt.Errorf("ack timeout %v is negative: use a positive duration such as %v, or 0 to wait forever", o.AckTimeout, push.DefaultAckTimeout))
	}
	if o.AdmissionWait < 0 {
		errs = append(errs, fmt.Errorf("admission wait %v is negative: use a positive duration, or 0 to refuse streams beyond the rate at once", o.AdmissionWait))
	}
	if o.SendTimeout < 0 {
		errs = append(errs, fmt.Errorf("send timeout %v is negative: use a positive duration, or 0 to wait for slow clients forever", o.SendTimeout))
	}
	if o.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("drain timeout %v is negative: use a duration such as %v, or 0 to stop without draining", o.DrainTimeout, DefaultDrainTimeout))
	}
	if o.Cores < 0 {
		errs = append(errs, fmt.Errorf("cores %d is negative: use 0 (all) or a positive number", o.Cores))
	}
	if o.Gatherer == nil && o.Registerer != nil {
		if _, ok := o.Registerer.(prometheus.Gatherer); !ok {
			errs = append(errs, errors.New("metrics: Registerer is not a Gatherer and no Gatherer was given: pass the registry to serve on /metrics"))
		}
	}
	return errors.Join(errs...)
}
