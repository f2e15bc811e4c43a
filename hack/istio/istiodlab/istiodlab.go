// Package istiodlab runs Istio's own DiscoveryServer (istio.io/istio, pilot/test/xds) in this
// process, on a real TCP listener, with Istio's default mesh config (auto-mTLS on), configured
// from a directory of Istio YAML read by Istio's own file config source (the code behind
// istiod's `fs://` configSources). It is the reference peer the lab is judged against: the
// fleet must reach full config on it, and the lab's figures about it must be true.
//
// The file source's objects are mirrored into the fake server's config store, which feeds
// Istio's registries and push machinery exactly as its Kubernetes and file stores do in istiod.
package istiodlab

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"istio.io/istio/pilot/pkg/config/kube/file"
	"istio.io/istio/pilot/pkg/model"
	kubecontroller "istio.io/istio/pilot/pkg/serviceregistry/kube/controller"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/monitoring"
	"istio.io/istio/pkg/test"
)

// Options configure a Server.
type Options struct {
	// Dir is the directory of Istio YAML to serve (watched: changes are applied as istiod's
	// fs:// config source applies them). Required.
	Dir string
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
	files       *file.Controller
}

// Start runs the server until t's cleanup. t fails (Fatal) when the server cannot start.
func Start(t test.Failer, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("istiodlab: a directory of Istio YAML is required")
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

	files, err := file.NewController(opts.Dir, "cluster.local", collections.Pilot, kubecontroller.Options{})
	if err != nil {
		return nil, fmt.Errorf("istiodlab: file config source %s: %w", opts.Dir, err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go files.Run(stop)
	deadline := time.Now().Add(30 * time.Second)
	for !files.HasSynced() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("istiodlab: file config source %s did not sync in 30s", opts.Dir)
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
