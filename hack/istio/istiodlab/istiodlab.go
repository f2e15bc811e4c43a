// Package istiodlab runs Istio's own DiscoveryServer (istio.io/istio, pilot/test/xds) in this
// process, on a real TCP listener, with Istio's default mesh config (auto-mTLS on), configured
// from a directory of Istio YAML read by Istio's own file config source (the code behind
// istiod's `fs://` configSources). It is the reference peer the lab is judged against: the
// fleet must reach full config on it, and the lab's figures about it must be true.
//
// With Options.MCP instead of a directory, the config source is Istio's own MCP-over-xDS client
// (pkg/adsc in MCP mode, configured as istiod configures an `xds://` configSources entry:
// GENERATOR=api, ConfigInitialRequests, a memory config controller as its store).
//
// The source's objects are mirrored into the fake server's config store, which feeds Istio's
// registries and push machinery exactly as its Kubernetes and file stores do in istiod.
package istiodlab

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"istio.io/istio/pilot/pkg/config/kube/file"
	"istio.io/istio/pilot/pkg/config/memory"
	"istio.io/istio/pilot/pkg/model"
	kubecontroller "istio.io/istio/pilot/pkg/serviceregistry/kube/controller"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/adsc"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/monitoring"
	"istio.io/istio/pkg/test"
)

// Options configure a Server.
type Options struct {
	// Dir is the directory of Istio YAML to serve (watched: changes are applied as istiod's
	// fs:// config source applies them). Dir or MCP is required.
	Dir string
	// MCP is the host:port of an MCP-over-xDS server to read config from, as istiod does for an
	// xds:// config source (plaintext).
	MCP string
	// Addr is the ADS listen address; default 127.0.0.1:0.
	Addr string
	// Debounce is PILOT_DEBOUNCE_AFTER; default 100ms, istiod's (Istio's test server uses 0).
	Debounce time.Duration
	// MetricsAddr, when set, serves Istio's Prometheus metrics (pilot_*) on /metrics there.
	MetricsAddr string
	// AdmissionRate is PILOT_MAX_REQUESTS_PER_SECOND, new ADS streams admitted per second
	// (ResourceExhausted beyond); 0 keeps istiod's default, derived from the core count.
	AdmissionRate float64
}

// Server is a running Istio DiscoveryServer.
type Server struct {
	// Addr is the ADS address (host:port).
	Addr string
	// MetricsAddr is where /metrics is served ("" when not).
	MetricsAddr string
	Fake        *xds.FakeDiscoveryServer
	files       model.ConfigStoreController
	// MCPClient is Istio's MCP client when Options.MCP is set.
	MCPClient *adsc.ADSC
}

// Start runs the server until t's cleanup. t fails (Fatal) when the server cannot start.
func Start(t test.Failer, opts Options) (*Server, error) {
	if (opts.Dir == "") == (opts.MCP == "") {
		return nil, errors.New("istiodlab: a directory of Istio YAML or an MCP server is required (one of them)")
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Debounce == 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	s := &Server{}
	if opts.MetricsAddr != "" {
		h, err := monitoring.RegisterPrometheusExporter(nil, nil)
		if err != nil {
			return nil, fmt.Errorf("istiodlab: metrics: %w", err)
		}
		ml, err := net.Listen("tcp", opts.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("istiodlab: metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", h)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ml) }()
		t.Cleanup(func() { _ = srv.Close() })
		s.MetricsAddr = ml.Addr().String()
	}

	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	var files model.ConfigStoreController
	what := "file config source " + opts.Dir
	if opts.MCP != "" {
		what = "MCP config source xds://" + opts.MCP
		mc, ctrl, err := startMCP(opts.MCP)
		if err != nil {
			return nil, err
		}
		t.Cleanup(mc.Close)
		s.MCPClient, files = mc, ctrl
	} else {
		fc, err := file.NewController(opts.Dir, "cluster.local", collections.Pilot, kubecontroller.Options{})
		if err != nil {
			return nil, fmt.Errorf("istiodlab: file config source %s: %w", opts.Dir, err)
		}
		files = fc
	}
	go files.Run(stop)
	deadline := time.Now().Add(30 * time.Second)
	for !files.HasSynced() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("istiodlab: %s did not sync in 30s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var initial []config.Config
	for _, sc := range collections.Pilot.All() {
		initial = append(initial, files.List(sc.GroupVersionKind(), "")...)
	}

	var listener net.Listener
	s.Fake = xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
		Configs:      initial,
		DebounceTime: opts.Debounce,
		ListenerBuilder: func() (net.Listener, error) {
			l, err := net.Listen("tcp", opts.Addr)
			listener = l
			return l, err
		},
	})
	s.Addr = listener.Addr().String()
	if opts.AdmissionRate > 0 {
		// Before any client connects: the server reads it when a stream starts.
		s.Fake.Discovery.RequestRateLimit = rate.NewLimiter(rate.Limit(opts.AdmissionRate), 1)
	}
	s.files = files

	// Mirror the file source into the server's store: what istiod's aggregate config store
	// does with its fs:// source.
	store := s.Fake.Store()
	for _, sc := range collections.Pilot.All() {
		files.RegisterEventHandler(sc.GroupVersionKind(), func(_, cur config.Config, ev model.Event) {
			cur.ResourceVersion = "" // the file source's versions are not the store's
			switch ev {
			case model.EventDelete:
				if err := store.Delete(cur.GroupVersionKind, cur.Name, cur.Namespace, nil); err != nil {
					t.Logf("istiodlab: delete %s %s/%s: %v", cur.GroupVersionKind.Kind, cur.Namespace, cur.Name, err)
				}
			default:
				if _, err := store.Create(cur); err != nil {
					if _, err := store.Update(cur); err != nil {
						t.Logf("istiodlab: apply %s %s/%s: %v", cur.GroupVersionKind.Kind, cur.Namespace, cur.Name, err)
					}
				}
			}
		})
	}
	return s, nil
}

// startMCP starts Istio's MCP client against addr exactly as istiod's bootstrap does for an
// xds:// config source (pilot/pkg/bootstrap/configcontroller.go), with plaintext credentials.
func startMCP(addr string) (*adsc.ADSC, model.ConfigStoreController, error) {
	mc, err := adsc.New(addr, &adsc.ADSConfig{
		InitialDiscoveryRequests: adsc.ConfigInitialRequests(),
		Config: adsc.Config{
			Namespace: "istio-system",
			Workload:  "istiodlab",
			Meta:      model.NodeMetadata{Generator: "api"}.ToStruct(),
			GrpcOpts:  []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())},
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("istiodlab: dial MCP server %s: %w", addr, err)
	}
	ctrl := memory.NewController(memory.Make(collections.Pilot))
	ctrl.RegisterHasSyncedHandler(mc.HasSynced)
	mc.Store = ctrl
	if err := mc.Run(); err != nil {
		mc.Close()
		return nil, nil, fmt.Errorf("istiodlab: MCP client of %s: %w", addr, err)
	}
	return mc, ctrl, nil
}
