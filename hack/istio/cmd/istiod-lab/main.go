// Command istiod-lab serves Istio's own DiscoveryServer (istio.io/istio master, its default
// mesh config) over ADS on a TCP port, configured from a directory of Istio YAML that it
// watches as istiod's fs:// config source does: a stock istiod for `xdslab run --target
// --sink-dir` without a Kubernetes cluster.
//
//	go run ./cmd/istiod-lab --dir /tmp/mesh --addr 127.0.0.1:15010 --metrics-addr 127.0.0.1:15014
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/xdslab/xdslab/hack/istio/istiodlab"
)

func main() {
	dir := flag.String("dir", "", "directory of Istio YAML to serve and watch (required)")
	addr := flag.String("addr", "127.0.0.1:15010", "ADS listen address")
	metrics := flag.String("metrics-addr", "127.0.0.1:15014", "Prometheus /metrics listen address (empty: none)")
	debounce := flag.Duration("debounce", 100*time.Millisecond, "PILOT_DEBOUNCE_AFTER (minQuiet)")
	admission := flag.Float64("admission-rate", 0, "PILOT_MAX_REQUESTS_PER_SECOND: new ADS streams per second (0: istiod's default from the core count)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "istiod-lab: --dir is required (a directory of Istio YAML, e.g. the one `xdslab run --sink-dir` writes)")
		os.Exit(2)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "istiod-lab:", err)
		os.Exit(2)
	}
	p := &process{}
	defer p.cleanup()
	s, err := istiodlab.Start(p, istiodlab.Options{Dir: *dir, Addr: *addr, Debounce: *debounce, MetricsAddr: *metrics, AdmissionRate: *admission})
	if err != nil {
		fmt.Fprintln(os.Stderr, "istiod-lab:", err)
		p.cleanup()
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "istiod-lab: Istio DiscoveryServer on %s (metrics %s), watching %s\n", s.Addr, s.MetricsAddr, *dir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Fprintln(os.Stderr, "istiod-lab: stopping")
}

// process is the test.Failer Istio's test server needs, for a long-running process: failures
// end the process, cleanups run at exit.
type process struct {
	mu       sync.Mutex
	cleanups []func()
}

func (p *process) Fail()                             { p.exit("failed") }
func (p *process) FailNow()                          { p.exit("failed") }
func (p *process) Fatal(args ...any)                 { p.exit(fmt.Sprint(args...)) }
func (p *process) Fatalf(format string, args ...any) { p.exit(fmt.Sprintf(format, args...)) }
func (p *process) Log(args ...any)                   { fmt.Fprintln(os.Stderr, args...) }
func (p *process) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (p *process) Helper()                           {}
func (p *process) Skip(args ...any)                  { p.exit("skipped: " + fmt.Sprint(args...)) }
func (p *process) TempDir() string {
	d, err := os.MkdirTemp("", "istiod-lab")
	if err != nil {
		p.exit(err.Error())
	}
	p.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func (p *process) Cleanup(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, f)
}

func (p *process) cleanup() {
	p.mu.Lock()
	fs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (p *process) exit(msg string) {
	fmt.Fprintln(os.Stderr, "istiod-lab:", msg)
	p.cleanup()
	os.Exit(1)
}
