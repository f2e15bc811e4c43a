package main

import (
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdslab/xdslab/internal/metricsserver"
)

// serveMetrics serves g on addr (/metrics) for the command name until stop is called, and says
// where on log.
func serveMetrics(name, addr string, g prometheus.Gatherer, log io.Writer) (stop func(), err error) {
	srv, err := metricsserver.Start(addr, nil, g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(log, "%s metrics on http://%s/metrics\n", name, srv.Addr())
	return func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(log, "xdslab %s: metrics server: %v\n", name, err)
		}
	}, nil
}

// progressMode maps a --progress value to where progress goes and whether it is one refreshed
// line: auto (a refreshed line on a terminal, log lines otherwise), line, log, or off (nil).
func progressMode(name, mode string, w io.Writer) (io.Writer, bool, error) {
	switch mode {
	case "auto":
		return w, isTerminal(w), nil
	case "line":
		return w, true, nil
	case "log":
		return w, false, nil
	case "off":
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("%s: --progress %q: use auto, line, log or off", name, mode)
}
