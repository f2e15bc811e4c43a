package dashboards

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/xdslab/xdslab/controlplane/metrics"
	"github.com/xdslab/xdslab/fakeenvoy"
	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/simulator"
)

func TestSpecsValidate(t *testing.T) {
	uids := map[string]bool{}
	for _, s := range All() {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.UID, err)
		}
		if uids[s.UID] {
			t.Errorf("two dashboards share UID %s", s.UID)
		}
		uids[s.UID] = true
	}
}

func TestValidateRejects(t *testing.T) {
	good := func() Spec {
		return Spec{UID: "u", Title: "t", Variables: []Variable{{Name: "job", Query: "label_values(up, job)"}},
			Rows: []Row{{Title: "r", Panels: []Panel{{Title: "p", Description: "d", Unit: "s",
				Queries: []Query{{Expr: `up{job=~"$job"}`}}}}}}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("the valid spec is rejected: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"no uid", func(s *Spec) { s.UID = "" }, "UID and Title are required"},
		{"variable without query", func(s *Spec) { s.Variables[0].Query = "" }, "needs a name and a query"},
		{"row without title", func(s *Spec) { s.Rows[0].Title = "" }, "a row has no title"},
		{"panel without title", func(s *Spec) { s.Rows[0].Panels[0].Title = "" }, "give the panel a title"},
		{"duplicate title", func(s *Spec) { s.Rows[0].Panels = append(s.Rows[0].Panels, s.Rows[0].Panels[0]) }, "share this title"},
		{"no description", func(s *Spec) { s.Rows[0].Panels[0].Description = " " }, "add a description"},
		{"no unit", func(s *Spec) { s.Rows[0].Panels[0].Unit = "" }, "set a unit"},
		{"too wide", func(s *Spec) { s.Rows[0].Panels[0].Width = 25 }, "exceeds the 24-column grid"},
		{"no query", func(s *Spec) { s.Rows[0].Panels[0].Queries = nil }, "add at least one query"},
		{"empty query", func(s *Spec) { s.Rows[0].Panels[0].Queries[0].Expr = "" }, "empty query"},
		{"heatmap query in a time series", func(s *Spec) { s.Rows[0].Panels[0].Queries[0].Heatmap = true }, "heatmap queries belong in heatmap panels"},
		{"heatmap panel without heatmap query", func(s *Spec) { s.Rows[0].Panels[0].Kind = Heatmap }, "heatmap queries belong in heatmap panels"},
		{"no job selector", func(s *Spec) { s.Rows[0].Panels[0].Queries[0].Expr = "up" }, "selects no job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.edit(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if _, err := Build(s); err == nil {
				t.Fatal("Build accepted an invalid spec")
			}
		})
	}
}

// metricRef finds metric names in our PromQL: every selector is written metric{...}.
var metricRef = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// referencedMetrics returns the metric names in expr, with histogram suffixes kept.
func referencedMetrics(expr string) []string {
	var out []string
	for _, m := range metricRef.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

// captureRegisterer records collectors instead of registering them, to read their descriptors.
type captureRegisterer struct{ cs []prometheus.Collector }

func (c *captureRegisterer) Register(x prometheus.Collector) error {
	c.cs = append(c.cs, x)
	return nil
}
func (c *captureRegisterer) MustRegister(xs ...prometheus.Collector) { c.cs = append(c.cs, xs...) }
func (c *captureRegisterer) Unregister(prometheus.Collector) bool    { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func describedNames(t *testing.T, cs ...prometheus.Collector) []string {
	t.Helper()
	var out []string
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		out = append(out, m[1])
	}
	return out
}

// exportedMetrics is every metric name the code exports on /metrics: the control plane's,
// the fleet's live collector, the simulator's and the standard Go and process collectors.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for _, n := range metrics.New().Names() {
		known[n] = true
	}
	fl, err := fleet.New(fleet.Config{Target: "127.0.0.1:1", Groups: []fleet.Group{
		{Name: "g", Count: 1, Identity: fakeenvoy.IdentityTemplate{Namespaces: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	var reg captureRegisterer
	if err := fl.Register(&reg); err != nil {
		t.Fatal(err)
	}
	if _, err := simulator.NewMetrics(&reg); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, n := range describedNames(t, reg.cs...) {
		known[n] = true
	}
	return known
}

// exists reports whether name is exported, directly or as a histogram's _bucket/_count/_sum.
func exists(known map[string]bool, name string) bool {
	if known[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && known[base] {
			return true
		}
	}
	return false
}

// TestPanelMetricsExist checks that every metric a panel queries is one the code exports, so a
// renamed metric breaks this test rather than a dashboard.
func TestPanelMetricsExist(t *testing.T) {
	known := exportedMetrics(t)
	for _, s := range All() {
		for _, p := range s.Panels() {
			for _, q := range p.Queries {
				refs := referencedMetrics(q.Expr)
				if len(refs) == 0 {
					t.Errorf("%s / %s: no metric found in %q", s.UID, p.Title, q.Expr)
				}
				for _, m := range refs {
					if !exists(known, m) {
						t.Errorf("%s / %s: metric %s is not exported by the control plane, fleet, simulator or Go/process collectors", s.UID, p.Title, m)
					}
				}
			}
		}
	}
}

// TestControlPlaneWorksOnIstiod checks that the control-plane dashboard uses only Istio's
// names and standard process and Go series, except in its xdslab-only row.
func TestControlPlaneWorksOnIstiod(t *testing.T) {
	istio := regexp.MustCompile(`^(pilot_|process_|go_)`)
	var extra []string
	for _, r := range ControlPlane().Rows {
		xdslabOnly := strings.Contains(r.Title, "empty on istiod")
		for _, p := range r.Panels {
			for _, q := range p.Queries {
				for _, m := range referencedMetrics(q.Expr) {
					if !istio.MatchString(m) && !xdslabOnly {
						t.Errorf("row %q, panel %q uses %s, which istiod does not export: move it to the xdslab-only row", r.Title, p.Title, m)
					}
					if xdslabOnly {
						extra = append(extra, m)
					}
				}
			}
		}
	}
	if len(extra) == 0 {
		t.Error("the control-plane dashboard has no xdslab-only row")
	}
}

// TestRenderedPanels reads the committed JSON as Grafana will: every panel has a unit, a
// description and the datasource variable, and every rate uses $__rate_interval.
func TestRenderedPanels(t *testing.T) {
	ranges := regexp.MustCompile(`\[[^\]]*\]`)
	for _, s := range All() {
		data, err := os.ReadFile(filepath.Join("grafana", s.UID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID        string
			Templating struct{ List []struct{ Name, Type string } }
			Panels     []struct {
				ID          int
				Type        string
				Title       string
				Description string
				Datasource  struct{ UID string }
				FieldConfig struct{ Defaults struct{ Unit string } }
				Targets     []struct{ Expr string }
			}
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		var vars []string
		for _, v := range d.Templating.List {
			vars = append(vars, v.Type+":"+v.Name)
		}
		if !slices.Contains(vars, "datasource:datasource") || !slices.Contains(vars, "query:job") {
			t.Errorf("%s: variables %v lack the datasource or the job variable", s.UID, vars)
		}
		ids := map[int]bool{}
		panels := 0
		for _, p := range d.Panels {
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("%s: panel %q has id %d, zero or used twice", s.UID, p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				continue
			}
			panels++
			if p.FieldConfig.Defaults.Unit == "" || p.Description == "" {
				t.Errorf("%s / %s: unit %q, description %q: both are required", s.UID, p.Title, p.FieldConfig.Defaults.Unit, p.Description)
			}
			if p.Datasource.UID != "${datasource}" {
				t.Errorf("%s / %s: datasource %q, want ${datasource}", s.UID, p.Title, p.Datasource.UID)
			}
			for _, tg := range p.Targets {
				for _, r := range ranges.FindAllString(tg.Expr, -1) {
					if r != "[$__rate_interval]" {
						t.Errorf("%s / %s: range %s in %q: use [$__rate_interval]", s.UID, p.Title, r, tg.Expr)
					}
				}
			}
		}
		if panels != len(s.Panels()) {
			t.Errorf("%s: %d panels rendered, spec has %d", s.UID, panels, len(s.Panels()))
		}
	}
}

// TestPanelInventory pins the panels the issue asks for, so none disappears unnoticed.
func TestPanelInventory(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want []string
	}{
		{ControlPlane(), []string{"Pushes by type", "Push triggers by reason", "Debounce time", "Events per debounced push",
			"Events per push cycle", "Proxy convergence time (heatmap)", "Proxy convergence time", "xDS push time (heatmap)",
			"xDS push time", "Cache hit ratio by type", "NACKs by type", "Expired nonces by type", "Connected clients",
			"Config file errors", "CPU", "Memory", "Goroutines"}},
		{Lab(), []string{"Push latency (heatmap)", "Push latency", "Convergence (heatmap)", "Convergence", "Events by kind",
			"Responses by type", "NACKs by type", "No-op responses by type", "Clients", "Events missed", "CPU by job", "Memory by job"}},
	} {
		var titles []string
		for _, p := range tc.spec.Panels() {
			titles = append(titles, p.Title)
		}
		sort.Strings(titles)
		for _, w := range tc.want {
			if _, found := slices.BinarySearch(titles, w); !found {
				t.Errorf("%s: panel %q is missing", tc.spec.UID, w)
			}
		}
	}
}
