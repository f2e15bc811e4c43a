package dashboards

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	w, err := Write(WriteOptions{Dir: dir, PrometheusURL: "http://prom:9090", ControlPlaneTargets: []string{"cp:15014"},
		LabTargets: []string{"lab:15090"}, ScrapeInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The dashboards are the committed ones.
	if len(w.Dashboards) != len(All()) {
		t.Fatalf("wrote %d dashboards, want %d", len(w.Dashboards), len(All()))
	}
	for _, p := range w.Dashboards {
		if !bytes.Equal(mustRead(t, p), mustRead(t, filepath.Join("grafana", filepath.Base(p)))) {
			t.Errorf("%s differs from the committed grafana/%s", p, filepath.Base(p))
		}
	}
	// Grafana provisioning: a Prometheus datasource and a provider reading the dashboards.
	var ds struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, URL string
			IsDefault            bool `json:"isDefault"`
			JSONData             struct {
				TimeInterval string `json:"timeInterval"`
			} `json:"jsonData"`
		}
	}
	if err := yaml.Unmarshal(mustRead(t, w.GrafanaDatasource), &ds); err != nil {
		t.Fatal(err)
	}
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" ||
		ds.Datasources[0].URL != "http://prom:9090" || ds.Datasources[0].UID != DatasourceUID || !ds.Datasources[0].IsDefault ||
		ds.Datasources[0].JSONData.TimeInterval != "2s" {
		t.Errorf("datasource provisioning: %+v", ds)
	}
	var dp struct {
		Providers []struct {
			Type    string
			Options struct{ Path string }
		}
	}
	if err := yaml.Unmarshal(mustRead(t, w.GrafanaDashboards), &dp); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join(dir, "dashboards"))
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" || dp.Providers[0].Options.Path != abs {
		t.Errorf("dashboards provider: %+v, want a file provider reading %s", dp, abs)
	}
	if filepath.Dir(filepath.Dir(w.GrafanaDatasource)) != w.GrafanaProvisioning {
		t.Errorf("datasource file %s is not under %s/datasources", w.GrafanaDatasource, w.GrafanaProvisioning)
	}
	// Prometheus: both jobs with their targets, the interval, the rule files beside it.
	var pc struct {
		Global struct {
			ScrapeInterval string `json:"scrape_interval"`
		}
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string                       `json:"job_name"`
			StaticConfigs []struct{ Targets []string } `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(mustRead(t, w.PrometheusConfig), &pc); err != nil {
		t.Fatal(err)
	}
	if pc.Global.ScrapeInterval != "2s" || len(pc.ScrapeConfigs) != 2 ||
		pc.ScrapeConfigs[0].JobName != ControlPlaneJob || pc.ScrapeConfigs[0].StaticConfigs[0].Targets[0] != "cp:15014" ||
		pc.ScrapeConfigs[1].JobName != LabJob || pc.ScrapeConfigs[1].StaticConfigs[0].Targets[0] != "lab:15090" {
		t.Errorf("prometheus.yml: %+v", pc)
	}
	if len(pc.RuleFiles) != len(w.PrometheusRuleFiles) || len(pc.RuleFiles) == 0 {
		t.Fatalf("rule_files %v, wrote %v", pc.RuleFiles, w.PrometheusRuleFiles)
	}
	for _, rf := range pc.RuleFiles {
		if _, err := os.Stat(filepath.Join(filepath.Dir(w.PrometheusConfig), rf)); err != nil {
			t.Errorf("rule file %s: %v", rf, err)
		}
	}
	// promtool accepts the config and the rule files it loads.
	if _, err := lookPathErr("promtool"); err == nil {
		promtool(t, "check", "config", w.PrometheusConfig)
	}
}

func TestWriteDefaults(t *testing.T) {
	dir := t.TempDir()
	w, err := Write(WriteOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pc := string(mustRead(t, w.PrometheusConfig))
	if !strings.Contains(pc, DefaultControlPlaneTarget) || !strings.Contains(pc, "scrape_interval: 5s") {
		t.Errorf("default prometheus.yml lacks %s or the 5s interval:\n%s", DefaultControlPlaneTarget, pc)
	}
	if !strings.Contains(string(mustRead(t, w.GrafanaDatasource)), DefaultPrometheusURL) {
		t.Errorf("default datasource does not point at %s", DefaultPrometheusURL)
	}
}

func TestWriteRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    WriteOptions
		want string
	}{
		{"no dir", WriteOptions{}, "pass --out DIR"},
		{"bad url", WriteOptions{Dir: "x", PrometheusURL: "prom:9090"}, "write it as http://host:port"},
		{"not http", WriteOptions{Dir: "x", PrometheusURL: "ftp://prom:9090"}, "write it as http://host:port"},
		{"bad target", WriteOptions{Dir: "x", ControlPlaneTargets: []string{"nohost"}}, "write host:port"},
		{"bad lab target", WriteOptions{Dir: "x", LabTargets: []string{"a:b:c"}}, "write host:port"},
		{"sub-second interval", WriteOptions{Dir: "x", ScrapeInterval: 500 * time.Millisecond}, "whole seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Write = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
