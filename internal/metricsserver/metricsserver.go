// Package metricsserver serves a Prometheus gatherer on /metrics over HTTP: the one small server
// behind every --metrics-addr of the lab's commands (run, fleet, sim).
package metricsserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is a running metrics endpoint.
type Server struct {
	lis  net.Listener
	srv  *http.Server
	done chan struct{}
	err  error // a Serve failure other than a clean close, read after Stop
}

// Start serves g on /metrics, on lis when it is not nil, else on a new listener on addr.
func Start(addr string, lis net.Listener, g prometheus.Gatherer) (*Server, error) {
	if lis == nil {
		var err error
		if lis, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	s := &Server{lis: lis, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// Addr is the address served (the bound port when addr had port 0).
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Stop closes the server, waits for it, and returns a serve error if it failed.
func (s *Server) Stop() error {
	_ = s.srv.Close()
	<-s.done
	return s.err
}
