package controlplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/controlplane"
	"github.com/xdslab/xdslab/controlplane/controlplanetest"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/istioconfig"
)

// grpc-go's xDS client starts a certificate-file watcher for TLS channel credentials from the
// bootstrap and keeps it for the process lifetime (TestSecureGRPCXDSClient).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("google.golang.org/grpc/credentials/tls/certprovider/pemfile.(*watcher).run"))
}

// waitTimeout bounds every wait; tests assert behaviour, never speed.
const waitTimeout = 20 * time.Second

// pushLog is a Pusher that records every push.
type pushLog struct {
	mu     sync.Mutex
	pushes []push
}

type push struct {
	version string
	report  model.ChangeReport
	req     *model.PushRequest
}

func (p *pushLog) Push(snap *model.Snapshot, req *model.PushRequest, rep model.ChangeReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushes = append(p.pushes, push{snap.Version, rep, req})
}

// get returns the push that produced version, waiting for the Pusher to be called (the
// snapshot is published just before).
func (p *pushLog) get(t *testing.T, version string) push {
	t.Helper()
	var out push
	eventually(t, "the push of version "+version, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, x := range p.pushes {
			if x.version == version {
				out = x
				return true
			}
		}
		return false
	})
	return out
}

func (p *pushLog) report(t *testing.T, version string) model.ChangeReport {
	t.Helper()
	return p.get(t, version).report
}

func waitSnap(t *testing.T, s *controlplane.Server, what string, ok func(*model.Snapshot) bool) *model.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	snap, err := s.WaitForSnapshot(ctx, ok)
	if err != nil {
		t.Fatalf("waiting for %s: %v (snapshot %+v)", what, err, snap.Summary())
	}
	return snap
}

// eventually polls cond (for state outside snapshots, such as file status) until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writeAtomic writes a file the way a careful writer does: temp file, then rename.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func serviceEntry(addrs ...string) string {
	var b strings.Builder
	b.WriteString(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: web
  namespace: shop
spec:
  hosts: [web.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {number: 80, name: http, protocol: HTTP}
  endpoints:
`)
	for _, a := range addrs {
		b.WriteString("  - {address: " + a + ", serviceAccount: web}\n")
	}
	return b.String()
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
}

func TestServerFileSourceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "web.yaml")
	writeAtomic(t, file, serviceEntry("10.0.0.1", "10.0.0.2"))
	pushes := &pushLog{}
	reg := prometheus.NewRegistry()
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 10*time.Millisecond, time.Second
	opts.Registerer, opts.Gatherer = reg, reg
	opts.Pusher = pushes
	s := controlplanetest.NewServer(t, opts)
	const host = "web.shop.svc.cluster.local"

	// 1. The file's ServiceEntry becomes a service with its endpoints.
	snap := waitSnap(t, s, "the service", func(s *model.Snapshot) bool { return len(s.Endpoints(host)) == 2 })
	svc := snap.Service(host)
	if svc == nil || svc.Namespace != "shop" || len(svc.Ports) != 1 || svc.Ports[0].Protocol != model.ProtocolHTTP ||
		!slices.Equal(svc.ServiceAccounts, []string{"spiffe://cluster.local/ns/shop/sa/web"}) {
		t.Fatalf("service = %+v", svc)
	}
	if rep := pushes.report(t, snap.Version); !rep.Full || !slices.Contains(rep.ServicesAdded, host) {
		t.Errorf("first report = %+v, want a full push adding %s", rep, host)
	}
	base := snap

	// 2. Changing only endpoints is an incremental push that shares the services.
	writeAtomic(t, file, serviceEntry("10.0.0.1", "10.0.0.3"))
	snap = waitSnap(t, s, "the endpoint change", func(s *model.Snapshot) bool {
		eps := s.Endpoints(host)
		return len(eps) == 2 && eps[1].Address == "10.0.0.3"
	})
	p := pushes.get(t, snap.Version)
	rep := p.report
	if rep.Full || !slices.Equal(rep.EndpointsChanged, []string{host}) {
		t.Errorf("endpoint-only report = %+v, want incremental for %s", rep, host)
	}
	epKey := istioconfig.Key{Kind: model.KindEndpoint, Name: host, Namespace: "shop"}
	if _, ok := p.req.ConfigsUpdated[epKey]; p.req.Full || !ok || len(p.req.ConfigsUpdated) != 1 || p.req.Count() < 1 {
		t.Errorf("pushed request = %+v, want endpoint-only for %s", p.req, epKey)
	}
	if snap.ServiceGen(host) != base.ServiceGen(host) {
		t.Errorf("service generation moved on an endpoint-only change: %d → %d", base.ServiceGen(host), snap.ServiceGen(host))
	}

	// 3. A malformed file keeps the last good state; the error shows in /debug/config and the metric.
	good := snap
	writeAtomic(t, file, serviceEntry("10.0.0.9")+"  - {address: [unclosed\n")
	eventually(t, "the file error", func() bool { return testutil.ToFloat64(s.Metrics().ConfigFileErrors) >= 1 })
	var dbg controlplane.DebugConfig
	getJSON(t, "http://"+s.MetricsAddr()+"/debug/config", &dbg)
	if len(dbg.Files) != 1 || dbg.Files[0].LastError == "" || !strings.Contains(dbg.Files[0].LastError, "web.yaml") {
		t.Fatalf("/debug/config files = %+v, want web.yaml with its error", dbg.Files)
	}
	if len(dbg.Files[0].Objects) != 1 || dbg.Services != 1 || dbg.StoreObjects[istioconfig.KindServiceEntry] != 1 {
		t.Errorf("/debug/config = %+v, want the last good object kept", dbg)
	}
	if got := s.Snapshot(); got.Version != good.Version || len(got.Endpoints(host)) != 2 {
		t.Errorf("snapshot moved on a malformed file: version %s → %s", good.Version, got.Version)
	}
	body := scrape(t, s)
	if !regexp.MustCompile(`(?m)^xdslab_cp_config_file_errors_total [1-9]`).MatchString(body) {
		t.Errorf("/metrics lacks the file error count")
	}

	// 4. A VirtualService in a new file is a full push naming it.
	writeAtomic(t, filepath.Join(dir, "route.yaml"), `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  http:
  - route:
    - destination: {host: web.shop.svc.cluster.local}
`)
	snap = waitSnap(t, s, "the VirtualService", func(s *model.Snapshot) bool { return len(s.Configs(istioconfig.KindVirtualService)) == 1 })
	rep = pushes.report(t, snap.Version)
	if !rep.Full || len(rep.ConfigsChanged) != 1 || rep.ConfigsChanged[0].Kind != istioconfig.KindVirtualService {
		t.Errorf("config report = %+v", rep)
	}

	// 5. Deleting the ServiceEntry's file removes the service (and fixes nothing else).
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	snap = waitSnap(t, s, "the service removal", func(s *model.Snapshot) bool { return s.Service(host) == nil })
	if rep := pushes.report(t, snap.Version); !rep.Full || !slices.Equal(rep.ServicesRemoved, []string{host}) {
		t.Errorf("removal report = %+v", rep)
	}
	if err := snap.Consistent(); err != nil {
		t.Error(err)
	}

	// Metrics recorded along the way.
	body = scrape(t, s)
	for _, want := range []string{`pilot_inbound_updates{type="eds"}`, `pilot_inbound_updates{type="svc"}`, `pilot_inbound_updates{type="config"}`,
		`pilot_inbound_updates{type="svcdelete"}`,
		"pilot_services 0", "pilot_pushcontext_init_seconds_count", "pilot_debounce_time_count", "xdslab_cp_push_cycles_total",
		"xdslab_cp_debounce_events_per_push_count"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func scrape(t *testing.T, s *controlplane.Server) string {
	t.Helper()
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServerMemoryRegistry(t *testing.T) {
	pushes := &pushLog{}
	opts := controlplanetest.Options(t)
	opts.Debounce.MinQuiet, opts.Debounce.MaxDelay = 0, 0 // push every change
	opts.Pusher = pushes
	s := controlplanetest.NewServer(t, opts)
	<-s.Synced()

	reg := s.Registry()
	reg.SetService(&model.Service{Hostname: "a.ns.svc.cluster.local", Namespace: "ns", Ports: []model.Port{{Name: "http", Number: 80}}})
	snap := waitSnap(t, s, "the service", func(s *model.Snapshot) bool { return s.Service("a.ns.svc.cluster.local") != nil })
	reg.SetEndpoints("a.ns.svc.cluster.local", []*model.Endpoint{{Address: "10.0.0.1"}})
	snap = waitSnap(t, s, "the endpoints", func(s *model.Snapshot) bool { return len(s.Endpoints("a.ns.svc.cluster.local")) == 1 })
	p := pushes.get(t, snap.Version)
	if p.report.Full {
		t.Errorf("endpoint report = %+v, want incremental", p.report)
	}

	// In-process writers reach the config store too.
	dr := &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "a", Namespace: "ns"},
		Spec: &networking.DestinationRule{Host: "a.ns.svc.cluster.local"}}
	if _, err := s.ConfigStore().Update(dr); err != nil {
		t.Fatal(err)
	}
	snap = waitSnap(t, s, "the DestinationRule", func(s *model.Snapshot) bool { return len(s.Configs(istioconfig.KindDestinationRule)) == 1 })
	if rep := pushes.report(t, snap.Version); !rep.Full || len(rep.ConfigsChanged) != 1 {
		t.Errorf("DestinationRule report = %+v", rep)
	}

	var dbg controlplane.DebugSnapshot
	getJSON(t, "http://"+s.MetricsAddr()+"/debug/snapshot", &dbg)
	if dbg.Version != snap.Version || dbg.Services != 1 || dbg.Endpoints != 1 || len(dbg.ServiceList) != 1 {
		t.Errorf("/debug/snapshot = %+v", dbg)
	}

	// Go's profiles are served for profiling a push in place.
	resp, err := http.Get("http://" + s.MetricsAddr() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Errorf("/debug/pprof/goroutine: %s\n%.200s", resp.Status, body)
	}
}

func TestServerBundledExample(t *testing.T) {
	opts := controlplanetest.Options(t)
	opts.ConfigDir = filepath.Join("..", "examples", "mesh")
	s := controlplanetest.NewServer(t, opts)
	snap := waitSnap(t, s, "the example mesh", func(s *model.Snapshot) bool { return s.ServiceCount() == 3 })
	if n := len(snap.Endpoints("ratings.bookinfo.svc.cluster.local")); n != 2 {
		t.Errorf("ratings endpoints = %d, want the 2 WorkloadEntries", n)
	}
	if len(snap.Configs(istioconfig.KindVirtualService)) != 1 || len(snap.Configs(istioconfig.KindDestinationRule)) != 1 {
		t.Errorf("configs = %+v", snap.Summary().Configs)
	}
	for _, f := range s.FileStatus().Files {
		if f.LastError != "" {
			t.Errorf("%s: %s", f.Path, f.LastError)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mod     func(*controlplane.Options)
		wantErr string
	}{
		{"defaults", func(*controlplane.Options) {}, ""},
		{"missing dir", func(o *controlplane.Options) { o.ConfigDir = "/does/not/exist" }, "config dir"},
		{"dir is a file", func(o *controlplane.Options) { o.ConfigDir = file }, "not a directory"},
		{"bad grpc addr", func(o *controlplane.Options) { o.GRPCAddr = "15010" }, "grpc address"},
		{"bad metrics addr", func(o *controlplane.Options) { o.MetricsAddr = "" }, "metrics address"},
		{"maxDelay below minQuiet", func(o *controlplane.Options) { o.Debounce.MaxDelay = time.Millisecond }, "maxDelay"},
		{"negative throttle", func(o *controlplane.Options) { o.PushThrottle = -1 }, "push throttle"},
		{"negative cores", func(o *controlplane.Options) { o.Cores = -2 }, "cores"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := controlplane.DefaultOptions()
			tc.mod(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	o := controlplane.DefaultOptions()
	o.Cores = 4
	if got := o.EffectivePushThrottle(); got != 35 {
		t.Errorf("throttle for 4 cores = %d, want Istio's 15+5×4", got)
	}
	o.Cores = 100
	if got := o.EffectivePushThrottle(); got != 100 {
		t.Errorf("throttle for 100 cores = %d, want the cap 100", got)
	}
}

func TestMetricsAddrInUse(t *testing.T) {
	a := controlplanetest.NewServer(t, controlplanetest.Options(t))
	o := controlplanetest.Options(t)
	o.MetricsAddr = a.MetricsAddr()
	s, err := controlplane.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "metrics address") {
		t.Fatalf("Start on a used port: err = %v", err)
	}
}

// TestServerEmptyConfig: a control plane whose sources hold nothing still publishes a first
// snapshot, as istiod serves an empty mesh once synced: SotW and Delta sidecars reach a full
// config (its passthrough and blackhole clusters, its virtual listeners) without a NACK. Before,
// the initial push changed nothing, nothing was published, and every stream waited for ever.
func TestServerEmptyConfig(t *testing.T) {
	pushes := &pushLog{}
	opts := controlplanetest.Options(t)
	opts.ConfigDir = t.TempDir()
	opts.Pusher = pushes
	s := controlplanetest.NewServer(t, opts)
	snap := waitSnap(t, s, "the first snapshot", func(s *model.Snapshot) bool { return s.Seq > 0 })
	if snap.ServiceCount() != 0 {
		t.Fatalf("services = %d, want none", snap.ServiceCount())
	}
	if rep := pushes.report(t, snap.Version); !rep.Full {
		t.Errorf("first push report = %+v, want a full push", rep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	id := fakeenvoy.IdentityTemplate{Namespaces: 2}
	sotw := fleet.Group{Name: "sotw", Count: 2, Identity: id, Client: fakeenvoy.ClientConfig{Nack: policy.Nack{Realistic: true}}}
	delta := sotw
	delta.Name, delta.Client.Delta = "delta", true
	f := startFleet(t, ctx, s.GRPCAddr(), sotw, delta)
	waitFull(t, f, 4)
	st := f.Observer().Stats()
	if st.Total.Nacks != 0 {
		t.Errorf("NACKs = %d, want none", st.Total.Nacks)
	}
	for _, typ := range []string{"CDS", "LDS"} {
		if st.Types[typ].Responses == 0 {
			t.Errorf("no %s response: %+v", typ, st.Types)
		}
	}
}

// TestServerDirRemovesSeveralFiles: files removed together leave the snapshot together (one
// reload deletes their objects in one store write). Before, only the first deleted object
// left it; the others stayed, and a lab rerun with --clean measured the last run's routes as
// already held.
func TestServerDirRemovesSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	vs := func(name string) string {
		return "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: " + name + ", namespace: shop}\n" +
			"spec: {hosts: [" + name + ".example.com], http: [{route: [{destination: {host: " + name + ".example.com}}]}]}\n"
	}
	for _, n := range []string{"a", "b", "c"} {
		writeAtomic(t, filepath.Join(dir, n+".yaml"), vs(n))
	}
	opts := controlplanetest.Options(t)
	opts.ConfigDir = dir
	opts.ConfigRescan = 50 * time.Millisecond
	opts.ConfigDeleteGuard.Off = true // two of three objects: a mass deletion the guard would hold first
	s := controlplanetest.NewServer(t, opts)
	waitSnap(t, s, "three VirtualServices", func(s *model.Snapshot) bool { return len(s.Configs(istioconfig.KindVirtualService)) == 3 })
	for _, n := range []string{"a", "b"} {
		if err := os.Remove(filepath.Join(dir, n+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	snap := waitSnap(t, s, "one VirtualService left", func(s *model.Snapshot) bool { return len(s.Configs(istioconfig.KindVirtualService)) == 1 })
	if got := snap.Configs(istioconfig.KindVirtualService)[0].Name; got != "c" {
		t.Errorf("VirtualService left: %s, want c", got)
	}
}
