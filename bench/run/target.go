package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/mcpsource"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/sinks"
)

// target is the control plane a run drives: where the clients dial, the sink the simulator
// writes to, and where the control plane's own metrics come from.
type target struct {
	// kind is "in-process" or "external".
	kind string
	// addr is the ADS address (host:port).
	addr string
	// secureAddr is the in-process control plane's secure ADS listener, where groups with
	// auth dial (empty: they dial addr), and caDir the directory of its root CA.
	secureAddr, caDir string
	sink              simulator.Sink
	// gather returns the control plane's metric families; nil when none are available.
	gather func(ctx context.Context) ([]*dto.MetricFamily, error)
	// metricsSource says where gather reads from, for the report.
	metricsSource string
	// loaded waits until the control plane holds at least n services (nil: cannot tell).
	loaded func(ctx context.Context, n int) error
	close  func()
	// local says whether an external target's ADS host is an address of this machine (nil
	// when that could not be told, localErr saying why): only then can its CPU and the
	// harness's be compared as a contention of the same cores.
	local    *bool
	localErr error
}

// summary is what the run's summary says of the target.
func (t *target) summary(sc *scenarios.Scenario) collect.Target {
	out := collect.Target{Kind: t.kind, Addr: t.addr, MetricsSource: t.metricsSource, Local: t.local, LocalErr: t.localErr}
	if t.kind == "in-process" {
		out.AdmissionRate = ControlPlaneOptions(sc).EffectiveAdmissionRate()
	}
	return out
}

// cpHandle is a running xdslab control plane (its ADS server included).
type cpHandle struct {
	srv  *controlplane.Server
	addr string // ADS address
	reg  *prometheus.Registry
	stop func()
}

// startControlPlane starts xdslab's control plane in this process with opts (its Registerer is
// set here). Its goroutines, and the gRPC server's stream goroutines they start, carry the
// pprof label xdslab_side=controlplane.
func startControlPlane(ctx context.Context, opts controlplane.Options) (*cpHandle, error) {
	reg := prometheus.NewRegistry()
	opts.Registerer, opts.Gatherer = reg, reg
	srv, err := controlplane.New(opts)
	if err != nil {
		return nil, fmt.Errorf("in-process control plane: %w", err)
	}
	var startErr error
	pprof.Do(ctx, pprof.Labels(collect.SideLabel, collect.SideControlPlane), func(ctx context.Context) {
		startErr = srv.Start(ctx)
	})
	if startErr != nil {
		srv.Stop()
		return nil, fmt.Errorf("in-process control plane: %w", startErr)
	}
	return &cpHandle{srv: srv, addr: srv.GRPCAddr(), reg: reg, stop: srv.Stop}, nil
}

// startInProcess starts xdslab's control plane in this process, configured from the scenario's
// controlPlane section, fed by the in-process sink (its config store).
func startInProcess(ctx context.Context, sc *scenarios.Scenario, log *slog.Logger) (*target, error) {
	opts := ControlPlaneOptions(sc)
	opts.Logger = log.With("component", "controlplane")
	sec, jwtKey, err := secureOptions(sc)
	if err != nil {
		return nil, err
	}
	cleanup := func() {}
	if sec.Addr != "" {
		// Groups authenticate: serve the secure listener, with the scenario's CA or a new one,
		// and the jwt groups' public key as the JWKS.
		tmp, err := os.MkdirTemp("", "xdslab-secure-")
		if err != nil {
			return nil, err
		}
		cleanup = func() { _ = os.RemoveAll(tmp) }
		if sec.CADir == "" {
			sec.CADir = filepath.Join(tmp, "ca")
		}
		if jwtKey != "" {
			if sec.JWKSFile, err = writeJWKS(jwtKey, tmp); err != nil {
				cleanup()
				return nil, err
			}
		}
		opts.Secure = sec
	}
	// sink.kind mcp: the simulator serves MCP and the control plane reads it as its only
	// config source (xds://), the path a stock istiod with an xds:// configSource takes.
	var mcpSink *sinks.MCP
	if sc.Sink.Kind == scenarios.SinkMCP {
		if mcpSink, err = sinks.NewMCP(sinks.MCPOptions{Listen: sc.Sink.Listen, Logger: log.With("component", "mcp-sink")}); err != nil {
			cleanup()
			return nil, err
		}
		opts.MCP = []mcpsource.Options{{Addr: mcpSink.Addr()}}
	}
	cp, err := startControlPlane(ctx, opts)
	if err != nil {
		if mcpSink != nil {
			_ = mcpSink.Close()
		}
		cleanup()
		return nil, err
	}
	var sink simulator.Sink = mcpSink
	if mcpSink == nil {
		if sink, err = sinks.NewInProcess(cp.srv.ConfigStore()); err != nil {
			cp.stop()
			cleanup()
			return nil, err
		}
	}
	return &target{
		kind:          "in-process",
		addr:          cp.addr,
		secureAddr:    cp.srv.SecureGRPCAddr(),
		caDir:         sec.CADir,
		sink:          sink,
		gather:        func(context.Context) ([]*dto.MetricFamily, error) { return cp.reg.Gather() },
		metricsSource: "in-process control plane",
		loaded: func(ctx context.Context, n int) error {
			_, err := cp.srv.WaitForSnapshot(ctx, func(s *model.Snapshot) bool { return s.ServiceCount() >= n })
			return err
		},
		close: func() { cp.stop(); cleanup() },
	}, nil
}

// externalOptions configure a run against a control plane that is not ours to start.
type externalOptions struct {
	addr, sinkDir, metricsURL string
	clean                     bool
	sink                      simulator.Sink
	// probe: check that addr serves ADS in plaintext before anything is written (false when
	// every client group dials with TLS: only the TCP port is checked then).
	probe bool
}

// startExternal drives a control plane at addr: the simulator writes Istio YAML into sinkDir
// (which that control plane watches) unless a sink is given, and the control plane's metrics
// are scraped from metricsURL when one is given.
func startExternal(ctx context.Context, o externalOptions, log *slog.Logger) (*target, error) {
	t := &target{kind: "external", addr: o.addr, sink: o.sink, close: func() {}}
	if t.sink == nil && o.sinkDir == "" {
		return nil, errors.New("--target needs --sink-dir: the directory of Istio YAML the control plane at the target watches")
	}
	// First contact, before the sink writes anything: a dead or wrong target is reported in
	// seconds, not after the whole scenario.
	if o.probe {
		res, err := ProbeADS(ctx, o.addr, ProbeTimeout)
		if err != nil {
			return nil, fmt.Errorf("--target: %w", err)
		}
		switch {
		case res.Refused != nil:
			log.Warn("the target answered the probe's ADS stream with an error; running anyway", "target", o.addr, "err", res.Refused)
		case res.Silent:
			log.Info("the target's ADS stream opened but did not answer the probe's CDS request yet; running anyway", "target", o.addr)
		}
	} else {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		c, err := d.DialContext(dctx, "tcp", o.addr)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("--target: nothing accepts TCP connections at %s: %w", o.addr, err)
		}
		c.Close()
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		host = o.addr
	}
	if local, err := hostIsLocal(ctx, host); err != nil {
		t.localErr = err
	} else {
		t.local = &local
	}
	if t.sink == nil {
		ds, err := sinks.NewDir(sinks.DirOptions{Dir: o.sinkDir, Clean: o.clean})
		if err != nil {
			return nil, err
		}
		t.sink = ds
	}
	if o.metricsURL != "" {
		url := MetricsURL(o.metricsURL)
		if err := ProbeMetrics(ctx, url, ProbeTimeout); err != nil {
			return nil, err
		}
		client := &http.Client{Timeout: 5 * time.Second}
		t.gather = func(ctx context.Context) ([]*dto.MetricFamily, error) { return scrape(ctx, client, url) }
		t.metricsSource = url
		t.loaded = func(ctx context.Context, n int) error {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			var absentSince time.Time // the scrapes answer without pilot_services since then
			for {
				fams, err := t.gather(ctx)
				if err == nil {
					v, ok := collect.Services(fams)
					switch {
					case ok && int(v) >= n:
						return nil
					case ok:
						absentSince = time.Time{}
					case absentSince.IsZero():
						absentSince = time.Now()
					case time.Since(absentSince) >= noServicesGaugeAfter:
						return fmt.Errorf("%w (%s)", errNoServicesGauge, url)
					}
				} else {
					log.Debug("scrape target metrics", "url", url, "err", err)
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("waiting for the target to load %d services (pilot_services on %s): %w", n, url, ctx.Err())
				case <-tick.C:
				}
			}
		}
	}
	return t, nil
}

// errNoServicesGauge: the target's metrics answer without Istio's pilot_services (a
// go-control-plane server, say), so whether it loaded the topology cannot be told.
var errNoServicesGauge = errors.New("the target's metrics have no pilot_services")

// noServicesGaugeAfter is how long the scrapes must answer without pilot_services before the
// run stops waiting for it: a control plane just started may not have set it yet.
const noServicesGaugeAfter = 3 * time.Second

// MetricsURL turns a --target-metrics value (HOST:PORT or a URL) into the URL to scrape:
// http:// unless a scheme is given, /metrics unless a path is.
func MetricsURL(v string) string {
	url := v
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	if !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"), "/") {
		url += "/metrics"
	}
	return url
}

// scrape reads a Prometheus text exposition.
func scrape(ctx context.Context, client *http.Client, url string) ([]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return out, fmt.Errorf("scrape %s: %w", url, err)
		}
		out = append(out, mf)
	}
	return out, nil
}

// hostIsLocal reports whether host (an IP or a name) is an address of this machine: a loopback
// or unspecified address, or one of its interfaces'.
func hostIsLocal(ctx context.Context, host string) (bool, error) {
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return false, err
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	if len(ips) == 0 {
		return false, errors.New("no address")
	}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, err
	}
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true, nil
		}
		for _, a := range ifAddrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true, nil
			}
		}
	}
	return false, nil
}
