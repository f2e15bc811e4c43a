package livetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/dashboards"
	"github.com/xdslab/xdslab/scenarios"
)

// installHint is how to get the Prometheus server this test needs.
const installHint = "install Prometheus to run it: apt-get install prometheus (Debian/Ubuntu; CI's .ci/run does this), " +
	"or put the prometheus binary from https://prometheus.io/download/ on PATH"

// scenario is a small run that still exercises every panel: endpoint and config churn, NACKs,
// a rolling deploy, a few dozen SotW clients, measured for 15 s and scraped every second. Under
// the race detector (several times slower) it is smaller still.
const scenario = `
name: dashboards-live
seed: 7
duration: %s
controlPlane:
  debounce: {minQuiet: 50ms, maxDelay: 1s, endpoints: true}
topology:
  namespaces: 3
  services: 30
  protocols: {http: 0.6, grpc: 0.3, tcp: 0.1}
  endpointsPerService: {dist: constant, value: 3}
  localities: {regions: 1, zonesPerRegion: 2}
  virtualServices: 0.3
  destinationRules: 0.3
  # Sidecars importing 2 of the 3 namespaces: a change is skipped for the third's proxies
  # (the "Push triggers skipped by scope" panel).
  sidecarScoping: true
  sidecarImports: 1
churn:
  - {kind: endpoint-flap, rate: %s}
  - {kind: scale, rate: 1/s}
  - {kind: rolling-deploy, every: 4s, services: 1, window: 1s}
  - {kind: config-change, rate: 1/s, target: virtualservice}
clients:
  - name: sidecars
    count: %d
    xds: sotw
    ramp: 200/s
    ackDelay: {dist: exp, mean: 2ms, max: 20ms}
    nack: {probability: 0.05}
phases:
  connect: {timeout: 30s}
  drain: {timeout: 3s}
`

func scenarioYAML() string {
	if raceEnabled {
		return fmt.Sprintf(scenario, "12s", "3/s", 10)
	}
	return fmt.Sprintf(scenario, "15s", "8/s", 30)
}

// rateInterval stands in for Grafana's $__rate_interval (at least four scrape intervals): ten 1 s
// scrapes, so that a scrape lost on a loaded machine does not leave a rate without samples.
const rateInterval = "10s"

// scrapeInterval is the test Prometheus's scrape interval, which is also its scrape timeout:
// 2 s, not 1 s, because a -race build of the run on a loaded 2-core machine can take longer
// than a second to render /metrics, and a timed-out scrape stores nothing. Five scrapes still
// fall in each rateInterval.
const scrapeInterval = 2 * time.Second

// exclusions are the panel queries that cannot return data in a short healthy run, keyed by
// "dashboard UID / panel title / legend", with the reason. Each is still sent to Prometheus
// (so a syntax error fails the test); a query listed here that returns data is logged so the
// entry can be removed.
var exclusions = map[string]string{
	"xdslab-controlplane / Expired nonces by type / {{type}}":              "pilot_xds_expired_nonce{type} appears only once a client sends a stale nonce (a push overtaking an unanswered one), which a short run with fast ACKs does not always produce",
	"xdslab-lab / Late and skipped events / late {{kind}}":                 "xdslab_sim_events_late_total{kind} appears only when the simulator falls behind its schedule, which a healthy run avoids",
	"xdslab-lab / Late and skipped events / skipped {{kind}}":              "xdslab_sim_events_skipped_total{kind} appears only when a churn arrival finds nothing to change",
	"xdslab-lab / Simulator lateness / p99":                                "xdslab_sim_event_lateness_seconds is observed only for late events (see above): its quantile is NaN in a healthy run",
	"xdslab-lab / Connect failures and resends / connect failure {{code}}": "xdslab_fleet_connect_failures_total{code} appears only when a connect fails",
	"xdslab-controlplane / Cache hit ratio by type / all (istiod)":         "istiod's xds_cache_reads{type=hit|miss} (no result label); xdslab's control plane labels every read with its result",
}

// addrCatcher is the run's progress writer: it hands over the live metrics address the run
// prints, and keeps the rest for the log.
type addrCatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	addr chan string
}

var liveMetrics = regexp.MustCompile(`live metrics on http://([^/\s]+)/metrics`)

func (c *addrCatcher) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if m := liveMetrics.FindSubmatch(c.buf.Bytes()); m != nil {
		c.once.Do(func() { c.addr <- string(m[1]) })
	}
	return len(p), nil
}

func (c *addrCatcher) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago (Prometheus
// cannot report the port it picked for :0).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// prom is a Prometheus HTTP API client.
type prom struct {
	base   string
	client *http.Client
}

func (p prom) get(ctx context.Context, path string, q url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

// points counts the samples of a range query that are numbers (not NaN or ±Inf).
func (p prom) points(ctx context.Context, expr string, start, end time.Time) (int, error) {
	var data struct {
		Result []struct {
			Values [][2]any `json:"values"`
		} `json:"result"`
	}
	q := url.Values{"query": {expr}, "start": {ts(start)}, "end": {ts(end)}, "step": {"1"}}
	if err := p.get(ctx, "/api/v1/query_range", q, &data); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range data.Result {
		for _, v := range r.Values {
			s, _ := v[1].(string)
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				n++
			}
		}
	}
	return n, nil
}

func ts(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }

// startPrometheus runs the prometheus binary on config until the test ends.
func startPrometheus(t *testing.T, bin, config, dir string) prom {
	t.Helper()
	addr := freeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if log, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("prometheus log:\n%s", log)
			}
		}
	})
	p := prom{base: "http://" + addr, client: &http.Client{Timeout: 10 * time.Second}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := p.client.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus on %s not ready after 20s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// requireScraped fails the test at once, with each target's last scrape error, when Prometheus
// stored fewer than three successful scrapes of the lab's job over the run: every panel would
// be empty for a reason that has nothing to do with the dashboards.
func requireScraped(ctx context.Context, t *testing.T, p prom, start, end time.Time) {
	t.Helper()
	// up is 1 for each successful scrape: their sum over the run counts them.
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	window := end.Sub(start).Round(time.Second) + time.Second
	q := url.Values{"query": {fmt.Sprintf(`sum_over_time(up{job=%q}[%ds])`, dashboards.LabJob, int(window/time.Second))}, "time": {ts(end)}}
	if err := p.get(ctx, "/api/v1/query", q, &data); err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, r := range data.Result {
		if s, ok := r.Value[1].(string); ok {
			f, _ := strconv.ParseFloat(s, 64)
			n += f
		}
	}
	t.Logf("%v successful scrapes of the run", n)
	if n >= 3 {
		return
	}
	var targets struct {
		ActiveTargets []struct {
			ScrapeURL          string  `json:"scrapeUrl"`
			Health             string  `json:"health"`
			LastError          string  `json:"lastError"`
			LastScrapeDuration float64 `json:"lastScrapeDuration"`
		} `json:"activeTargets"`
	}
	if err := p.get(ctx, "/api/v1/targets", url.Values{}, &targets); err != nil {
		t.Fatalf("only %v successful scrapes of the run, and the targets API failed: %v", n, err)
	}
	for _, tg := range targets.ActiveTargets {
		t.Logf("target %s: health %s, last scrape %.3fs, last error %q", tg.ScrapeURL, tg.Health, tg.LastScrapeDuration, tg.LastError)
	}
	t.Fatalf("Prometheus stored only %v successful scrapes of the run (want at least 3): the panels cannot be judged", n)
}

// expand replaces the dashboard variables the way Grafana would with one job selected.
func expand(expr string, vars map[string]string) string {
	expr = strings.ReplaceAll(expr, "$__rate_interval", rateInterval)
	for name, v := range vars {
		expr = strings.ReplaceAll(expr, "$"+name, v)
	}
	return expr
}

// TestEveryPanelQueryReturnsData runs a short scenario with its live metrics scraped by a real
// Prometheus server every second, then asks Prometheus for every panel query, every dashboard
// variable and every recording rule over the run.
func TestEveryPanelQueryReturnsData(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skipf("prometheus not found on PATH: %s", installHint)
	}
	if testing.Short() {
		t.Skip("starts a Prometheus server and a 15 s run; skipped with -short")
	}
	sc, err := scenarios.LoadBytes("dashboards-live.yaml", []byte(scenarioYAML()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	progress := &addrCatcher{addr: make(chan string, 1)}
	runDone := make(chan error, 1)
	go func() {
		_, err := run.Run(ctx, sc, run.Options{MetricsAddr: "127.0.0.1:0", Progress: progress, ProgressInterval: time.Second})
		runDone <- err
	}()
	var metricsAddr string
	select {
	case metricsAddr = <-progress.addr:
	case err := <-runDone:
		t.Fatalf("the run ended before serving metrics: %v\n%s", err, progress)
	case <-ctx.Done():
		t.Fatalf("no live metrics address printed by the run:\n%s", progress)
	}
	// An in-process run serves the control plane's series beside the lab's on one endpoint:
	// one job (the lab's) scrapes it, and both dashboards select that job.
	dir := t.TempDir()
	w, err := dashboards.Write(dashboards.WriteOptions{Dir: dir, ControlPlaneTargets: []string{},
		LabTargets: []string{metricsAddr}, ScrapeInterval: scrapeInterval})
	if err != nil {
		t.Fatal(err)
	}
	p := startPrometheus(t, bin, w.PrometheusConfig, dir)
	start := time.Now()
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, progress)
		}
	case <-ctx.Done():
		t.Fatalf("run did not finish in time:\n%s", progress)
	}
	// Let Prometheus finish its last scrape and rule evaluation.
	time.Sleep(2 * time.Second)
	end := time.Now()
	t.Logf("run scraped from %s for %v", metricsAddr, end.Sub(start).Round(time.Second))
	requireScraped(ctx, t, p, start, end)

	jobs := map[string]map[string]string{
		dashboards.ControlPlaneUID: {"job": dashboards.LabJob},
		dashboards.LabUID:          {"job": dashboards.LabJob, "cp_job": dashboards.LabJob},
	}
	checked, excluded := 0, 0
	for _, s := range dashboards.All() {
		vars := jobs[s.UID]
		if vars == nil {
			t.Fatalf("dashboard %s: add its job variables to this test", s.UID)
		}
		for _, v := range s.Variables {
			checkVariable(ctx, t, p, s.UID, v, vars[v.Name])
		}
		for _, panel := range s.Panels() {
			for _, q := range panel.Queries {
				key := s.UID + " / " + panel.Title + " / " + q.Legend
				expr := expand(q.Expr, vars)
				n, err := p.points(ctx, expr, start, end)
				if err != nil {
					t.Errorf("%s: query %q: %v", key, expr, err)
					continue
				}
				reason, isExcluded := exclusions[key]
				switch {
				case isExcluded && n > 0:
					t.Logf("excluded query returned data this time (%d points): %s", n, key)
					excluded++
				case isExcluded:
					t.Logf("excluded, no data as expected: %s (%s)", key, reason)
					excluded++
				case n == 0:
					t.Errorf("%s: no data from %s", key, expr)
				default:
					checked++
				}
			}
		}
	}
	for key := range exclusions {
		if !exclusionExists(key) {
			t.Errorf("exclusion %q names no panel query: remove it", key)
		}
	}
	t.Logf("%d panel queries returned data, %d excluded", checked, excluded)
	checkRules(ctx, t, p, start, end)
}

func exclusionExists(key string) bool {
	for _, s := range dashboards.All() {
		for _, panel := range s.Panels() {
			for _, q := range panel.Queries {
				if s.UID+" / "+panel.Title+" / "+q.Legend == key {
					return true
				}
			}
		}
	}
	return false
}

// labelValues is the selector in label_values(SELECTOR, job).
var labelValues = regexp.MustCompile(`^label_values\((.+), job\)$`)

// checkVariable checks that a job variable lists the job scraping its dashboard's series.
func checkVariable(ctx context.Context, t *testing.T, p prom, uid string, v dashboards.Variable, want string) {
	t.Helper()
	m := labelValues.FindStringSubmatch(v.Query)
	if m == nil {
		t.Errorf("%s: variable %s: query %q is not label_values(SELECTOR, job): teach this test to check it", uid, v.Name, v.Query)
		return
	}
	var jobs []string
	if err := p.get(ctx, "/api/v1/label/job/values", url.Values{"match[]": {m[1]}}, &jobs); err != nil {
		t.Errorf("%s: variable %s: %v", uid, v.Name, err)
		return
	}
	for _, j := range jobs {
		if j == want {
			return
		}
	}
	t.Errorf("%s: variable %s lists jobs %v, want %s among them", uid, v.Name, jobs, want)
}

// checkRules checks that Prometheus loaded and evaluated every rule without error and that
// every recording rule produced data. Alerts are not expected to fire in a healthy run; their
// behaviour is covered by the promtool unit tests in dashboards/rules.
func checkRules(ctx context.Context, t *testing.T, p prom, start, end time.Time) {
	t.Helper()
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name      string `json:"name"`
				Type      string `json:"type"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(ctx, "/api/v1/rules", nil, &data); err != nil {
		t.Fatal(err)
	}
	files, err := dashboards.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	rules := 0
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Health != "ok" {
				errs = append(errs, fmt.Errorf("group %s, rule %s: health %q %s", g.Name, r.Name, r.Health, r.LastError))
			}
			if r.Type != "recording" {
				continue
			}
			n, err := p.points(ctx, r.Name, start, end)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("recording rule %s: %w", r.Name, err))
			case n == 0:
				errs = append(errs, fmt.Errorf("recording rule %s produced no data", r.Name))
			}
		}
	}
	if rules == 0 {
		errs = append(errs, fmt.Errorf("prometheus loaded no rules from %d rule files", len(files)))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
