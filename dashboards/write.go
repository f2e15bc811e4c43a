package dashboards

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// rulesFS holds the Prometheus rule files (their promtool tests stay in the source tree).
//
//go:embed rules/*.rules.yaml
var rulesFS embed.FS

// RuleFile is one Prometheus rule file.
type RuleFile struct {
	// Name is the file's base name, e.g. alerts.rules.yaml.
	Name string
	Data []byte
}

// Rules returns the recording and alerting rule files, sorted by name.
func Rules() ([]RuleFile, error) {
	paths, err := fs.Glob(rulesFS, "rules/*.rules.yaml")
	if err != nil {
		return nil, err
	}
	var out []RuleFile
	for _, p := range paths {
		data, err := rulesFS.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, RuleFile{Name: path.Base(p), Data: data})
	}
	return out, nil
}

// Defaults of WriteOptions.
const (
	DefaultPrometheusURL      = "http://127.0.0.1:9090"
	DefaultControlPlaneTarget = "127.0.0.1:15014"
	DefaultScrapeInterval     = 5 * time.Second
	// DatasourceUID is the UID of the provisioned Prometheus datasource.
	DatasourceUID = "xdslab-prometheus"
	// Job names in the generated Prometheus config.
	ControlPlaneJob = "xdslab-controlplane"
	LabJob          = "xdslab-lab"
)

// WriteOptions configure Write. The zero value of a field means its default.
type WriteOptions struct {
	// Dir is the output directory; it is created if needed.
	Dir string
	// GrafanaDashboardsPath is the directory the dashboards provider reads, as Grafana sees it
	// (inside a container it differs from Dir). Default: the absolute path of Dir/dashboards.
	GrafanaDashboardsPath string
	// PrometheusURL is the provisioned datasource's URL, as Grafana reaches it.
	// Default DefaultPrometheusURL.
	PrometheusURL string
	// ControlPlaneTargets are the host:port addresses of control-plane /metrics endpoints.
	// Default [DefaultControlPlaneTarget]; xdslab's own metrics address or istiod's :15014.
	ControlPlaneTargets []string
	// LabTargets are the host:port addresses of the lab's /metrics (xdslab run, fleet, sim
	// --metrics-addr). Empty: the lab job is written without targets, to be filled in.
	LabTargets []string
	// ScrapeInterval of the generated Prometheus config. Default DefaultScrapeInterval.
	ScrapeInterval time.Duration
}

func (o WriteOptions) withDefaults() (WriteOptions, error) {
	if o.Dir == "" {
		return o, errors.New("dashboards: output directory is empty: pass --out DIR")
	}
	if o.GrafanaDashboardsPath == "" {
		abs, err := filepath.Abs(filepath.Join(o.Dir, "dashboards"))
		if err != nil {
			return o, err
		}
		o.GrafanaDashboardsPath = abs
	}
	if o.PrometheusURL == "" {
		o.PrometheusURL = DefaultPrometheusURL
	}
	if o.ControlPlaneTargets == nil {
		o.ControlPlaneTargets = []string{DefaultControlPlaneTarget}
	}
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = DefaultScrapeInterval
	}
	return o, nil
}

// Validate reports every option that cannot work, saying how to fix it.
func (o WriteOptions) Validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("output directory is empty: pass --out DIR"))
	}
	if o.PrometheusURL != "" {
		if u, err := url.Parse(o.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("prometheus URL %q: write it as http://host:port", o.PrometheusURL))
		}
	}
	for _, t := range append(append([]string{}, o.ControlPlaneTargets...), o.LabTargets...) {
		if _, _, err := net.SplitHostPort(t); err != nil {
			errs = append(errs, fmt.Errorf("scrape target %q: %v: write host:port, e.g. 127.0.0.1:15014", t, err))
		}
	}
	if o.ScrapeInterval < 0 || (o.ScrapeInterval > 0 && o.ScrapeInterval < time.Second) || o.ScrapeInterval%time.Second != 0 {
		errs = append(errs, fmt.Errorf("scrape interval %v: use whole seconds, at least 1s", o.ScrapeInterval))
	}
	return errors.Join(errs...)
}

// Written lists what Write wrote, by role (paths inside Dir).
type Written struct {
	// Dashboards are the dashboard JSON files.
	Dashboards []string
	// GrafanaProvisioning is the directory to give Grafana as GF_PATHS_PROVISIONING; it holds
	// GrafanaDatasource and GrafanaDashboards.
	GrafanaProvisioning string
	GrafanaDatasource   string
	GrafanaDashboards   string
	// PrometheusConfig is prometheus.yml; PrometheusRuleFiles sit beside it in rules/.
	PrometheusConfig    string
	PrometheusRuleFiles []string
}

// Write renders every dashboard and writes, under o.Dir:
//
//	dashboards/<uid>.json                       the Grafana dashboards
//	provisioning/dashboards/xdslab.yaml         Grafana dashboards provider (reads dashboards/)
//	provisioning/datasources/xdslab.yaml        Grafana Prometheus datasource
//	prometheus/prometheus.yml                   scrape config for the control plane and the lab
//	prometheus/rules/*.rules.yaml               recording and alerting rules
func Write(o WriteOptions) (Written, error) {
	if err := o.Validate(); err != nil {
		return Written{}, fmt.Errorf("dashboards: %w", err)
	}
	o, err := o.withDefaults()
	if err != nil {
		return Written{}, err
	}
	w := Written{GrafanaProvisioning: filepath.Join(o.Dir, "provisioning")}
	promDir := filepath.Join(o.Dir, "prometheus")
	files := map[string][]byte{}
	for _, s := range All() {
		data, err := JSON(s)
		if err != nil {
			return Written{}, err
		}
		p := filepath.Join(o.Dir, "dashboards", s.UID+".json")
		files[p] = data
		w.Dashboards = append(w.Dashboards, p)
	}
	ds, dp, err := GrafanaProvisioning(o.PrometheusURL, o.GrafanaDashboardsPath, o.ScrapeInterval)
	if err != nil {
		return Written{}, err
	}
	w.GrafanaDatasource = filepath.Join(w.GrafanaProvisioning, "datasources", "xdslab.yaml")
	w.GrafanaDashboards = filepath.Join(w.GrafanaProvisioning, "dashboards", "xdslab.yaml")
	files[w.GrafanaDatasource], files[w.GrafanaDashboards] = ds, dp
	rules, err := Rules()
	if err != nil {
		return Written{}, err
	}
	var ruleNames []string
	for _, r := range rules {
		p := filepath.Join(promDir, "rules", r.Name)
		files[p] = r.Data
		w.PrometheusRuleFiles = append(w.PrometheusRuleFiles, p)
		ruleNames = append(ruleNames, "rules/"+r.Name)
	}
	pc, err := PrometheusConfig(o.ScrapeInterval, o.ControlPlaneTargets, o.LabTargets, ruleNames)
	if err != nil {
		return Written{}, err
	}
	w.PrometheusConfig = filepath.Join(promDir, "prometheus.yml")
	files[w.PrometheusConfig] = pc
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return Written{}, fmt.Errorf("dashboards: %w", err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return Written{}, fmt.Errorf("dashboards: %w", err)
		}
	}
	return w, nil
}

// GrafanaProvisioning returns Grafana's datasource provisioning file (a Prometheus datasource
// at prometheusURL, UID DatasourceUID, the default, scraping every scrapeInterval) and its
// dashboards provider file (reading dashboardsPath into a folder named xdslab).
func GrafanaProvisioning(prometheusURL, dashboardsPath string, scrapeInterval time.Duration) (datasources, dashboards []byte, err error) {
	datasources, err = yaml.Marshal(map[string]any{
		"apiVersion": 1,
		"datasources": []map[string]any{{
			"name":      "xdslab Prometheus",
			"uid":       DatasourceUID,
			"type":      "prometheus",
			"access":    "proxy",
			"url":       prometheusURL,
			"isDefault": true,
			"editable":  true,
			// Grafana derives $__rate_interval from the scrape interval: four of them at least.
			"jsonData": map[string]any{"timeInterval": seconds(scrapeInterval)},
		}},
	})
	if err != nil {
		return nil, nil, err
	}
	dashboards, err = yaml.Marshal(map[string]any{
		"apiVersion": 1,
		"providers": []map[string]any{{
			"name":                  "xdslab",
			"folder":                "xdslab",
			"type":                  "file",
			"disableDeletion":       false,
			"allowUiUpdates":        true,
			"updateIntervalSeconds": 30,
			"options":               map[string]any{"path": dashboardsPath},
		}},
	})
	return datasources, dashboards, err
}

// PrometheusConfig returns a Prometheus configuration scraping the control plane (job
// ControlPlaneJob) and the lab (job LabJob) every interval, loading ruleFiles.
func PrometheusConfig(interval time.Duration, controlPlane, lab, ruleFiles []string) ([]byte, error) {
	iv := seconds(interval)
	targets := func(t []string) []map[string]any {
		if t == nil {
			t = []string{}
		}
		return []map[string]any{{"targets": t}}
	}
	return yaml.Marshal(map[string]any{
		"global":     map[string]any{"scrape_interval": iv, "evaluation_interval": iv},
		"rule_files": ruleFiles,
		"scrape_configs": []map[string]any{
			{"job_name": ControlPlaneJob, "static_configs": targets(controlPlane)},
			{"job_name": LabJob, "static_configs": targets(lab)},
		},
	})
}

// seconds formats a whole-second duration the way Prometheus and Grafana write it: "5s".
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }
