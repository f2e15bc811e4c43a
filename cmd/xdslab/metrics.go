package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves g on addr (/metrics) for the command name until stop is called, and says
// where on log.
func serveMetrics(name, addr string, g prometheus.Gatherer, log io.Writer) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: --metrics-addr %s: %w", name, addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(log, "xdslab %s: metrics server: %v\n", name, err)
		}
	}()
	fmt.Fprintf(log, "%s metrics on http://%s/metrics\n", name, lis.Addr())
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
