package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/dashboards"
)

// dashboardsFlags are the flags of 'xdslab dashboards'.
type dashboardsFlags struct {
	out            string
	prometheusURL  string
	grafanaPath    string
	cpTargets      []string
	labTargets     []string
	scrapeInterval time.Duration
}

func newDashboardsCmd() *cobra.Command {
	var f dashboardsFlags
	cmd := &cobra.Command{
		Use:   "dashboards --out DIR",
		Short: "Write the Grafana dashboards, Grafana provisioning and a Prometheus config with rules",
		Long: `dashboards writes, under --out DIR:

  dashboards/*.json                    the control-plane dashboard (Istio's pilot_* names: works on
                                       istiod too) and the lab dashboard (a run's xdslab_* series)
  provisioning/datasources/xdslab.yaml a Grafana Prometheus datasource (--prometheus-url)
  provisioning/dashboards/xdslab.yaml  a Grafana dashboards provider reading dashboards/
  prometheus/prometheus.yml            scrape jobs xdslab-controlplane and xdslab-lab
  prometheus/rules/*.rules.yaml        recording and alerting rules (push latency SLO burn, NACK
                                       rate, stalled pushes and convergence, config file errors)

Start Grafana with GF_PATHS_PROVISIONING=DIR/provisioning and Prometheus with
--config.file=DIR/prometheus/prometheus.yml. docs/observability.md explains every panel.`,
		Example: `  xdslab dashboards --out /tmp/obs
  xdslab dashboards --out obs --controlplane-target 127.0.0.1:15014 --lab-target 127.0.0.1:15090
  xdslab dashboards --out obs --prometheus-url http://prometheus:9090 --grafana-dashboards-path /var/lib/grafana/dashboards/xdslab`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDashboards(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "directory to write into (required; created if missing)")
	fl.StringVar(&f.prometheusURL, "prometheus-url", dashboards.DefaultPrometheusURL, "URL of Prometheus as Grafana reaches it (the provisioned datasource)")
	fl.StringVar(&f.grafanaPath, "grafana-dashboards-path", "", "directory of the dashboards as Grafana sees it (default: the absolute path of DIR/dashboards)")
	fl.StringSliceVar(&f.cpTargets, "controlplane-target", []string{dashboards.DefaultControlPlaneTarget}, "host:port of a control plane's /metrics (xdslab controlplane --metrics-addr, or istiod's :15014); repeat or comma-separate")
	fl.StringSliceVar(&f.labTargets, "lab-target", nil, "host:port of the lab's /metrics (xdslab run/fleet/sim --metrics-addr); repeat or comma-separate")
	fl.DurationVar(&f.scrapeInterval, "scrape-interval", dashboards.DefaultScrapeInterval, "scrape and rule evaluation interval of the Prometheus config (whole seconds)")
	return cmd
}

func runDashboards(cmd *cobra.Command, f dashboardsFlags) error {
	if f.out == "" {
		return usageErr(errors.New("dashboards: --out is required: pass the directory to write into, e.g. --out /tmp/obs"))
	}
	if f.scrapeInterval == 0 {
		// The options read zero as the default; on the command line it was silently 5s.
		return usageErr(fmt.Errorf("dashboards: --scrape-interval 0s: use whole seconds, at least 1s (default %s)", dashboards.DefaultScrapeInterval))
	}
	o := dashboards.WriteOptions{
		Dir: f.out, GrafanaDashboardsPath: f.grafanaPath, PrometheusURL: f.prometheusURL,
		ControlPlaneTargets: f.cpTargets, LabTargets: f.labTargets, ScrapeInterval: f.scrapeInterval,
	}
	if o.ControlPlaneTargets == nil {
		o.ControlPlaneTargets = []string{} // an explicit empty list: no control-plane target
	}
	if err := o.Validate(); err != nil {
		return usageErr(fmt.Errorf("dashboards: %s", strings.ReplaceAll(err.Error(), "\n", "; ")))
	}
	w, err := dashboards.Write(o)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "wrote to %s:\n", f.out)
	for _, p := range w.Dashboards {
		fmt.Fprintf(out, "  %s\n", p)
	}
	fmt.Fprintf(out, "  %s\n  %s\n  %s\n", w.GrafanaDatasource, w.GrafanaDashboards, w.PrometheusConfig)
	for _, p := range w.PrometheusRuleFiles {
		fmt.Fprintf(out, "  %s\n", p)
	}
	fmt.Fprintf(out, "\nstart Prometheus: prometheus --config.file=%s --storage.tsdb.path=%s/prometheus/data\n", w.PrometheusConfig, f.out)
	fmt.Fprintf(out, "start Grafana:    GF_PATHS_PROVISIONING=%s grafana-server (or mount it at /etc/grafana/provisioning)\n", w.GrafanaProvisioning)
	return nil
}
