package dashboards

// LabUID is the Grafana UID of the lab dashboard.
const LabUID = "xdslab-lab"

// Lab is the dashboard of a run: what the fake Envoys measured (push latency, convergence,
// responses, NACKs, no-op pushes), what the simulator did (events by kind), events that
// clients have not seen, and the harness's own CPU and memory beside the control plane's.
func Lab() Spec {
	const (
		v  = "job"
		cp = "cp_job"
	)
	return Spec{
		UID:   LabUID,
		Title: "xdslab run",
		Description: "A run seen from the clients: push latency (simulator change → fake Envoy received it), convergence, " +
			"simulator events, fleet responses and NACKs, and the harness's overhead.",
		Tags: []string{"xdslab", "xds"},
		Variables: []Variable{
			{
				Name: v, Label: "lab job", Query: `label_values({__name__=~"xdslab_fleet_connected|xdslab_sim_events_total"}, job)`,
				Description: "Prometheus jobs scraping the lab (xdslab run, xdslab fleet, xdslab sim).",
			},
			{
				Name: cp, Label: "control plane job", Query: "label_values(pilot_xds, job)",
				Description: "Prometheus jobs scraping the control plane, shown beside the harness in the overhead row.",
			},
		},
		Rows: []Row{
			{Title: "Push latency (change applied → client received it)", Panels: []Panel{
				{
					Title: "Push latency (heatmap)", Unit: "s", Kind: Heatmap,
					Description: "Distribution over time of push latency: the simulator applied a change (t0) → a fake Envoy received the response " +
						"containing it, one observation per client and event (xdslab_push_latency_seconds). The number the run is judged by.",
					Queries: []Query{heatmapOf(v, "xdslab_push_latency_seconds")},
				},
				{
					Title: "Push latency", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 push latency over all clients and events. Compare the p99 with the scenario's threshold " +
						"(e.g. p(99)<500ms); a p50 near minQuiet means debouncing dominates.",
					Queries: percentiles(v, "xdslab_push_latency_seconds"),
				},
				{
					Title: "Push latency p99 by event kind", Unit: "s", Min: zero(),
					Description: "p99 push latency per simulator event kind (endpoint-flap, rolling-deploy, config change, …): " +
						"endpoint changes should be fastest (EDS only); config changes pay for a full push.",
					Queries: []Query{{Expr: quantile(0.99, v, "xdslab_push_latency_seconds", "kind"), Legend: "{{kind}}"}},
				},
				{
					Title: "Push → ACK latency", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 of t0 → the client's ACK of the response containing the change (xdslab_push_ack_latency_seconds): " +
						"push latency plus the client's ACK delay.",
					Queries: percentiles(v, "xdslab_push_ack_latency_seconds"),
				},
			}},
			{Title: "Convergence (per event: slowest client)", Panels: []Panel{
				{
					Title: "Convergence (heatmap)", Unit: "s", Kind: Heatmap,
					Description: "Distribution over time of convergence time: per event, the largest push latency over the clients it should reach " +
						"(xdslab_convergence_seconds; events with clients still waiting are counted under 'Events missed').",
					Queries: []Query{heatmapOf(v, "xdslab_convergence_seconds")},
				},
				{
					Title: "Convergence", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 convergence time: how long until every targeted client has a change. " +
						"Far above push latency means a few slow clients (throttle queueing, slow ACKs) hold events back.",
					Queries: percentiles(v, "xdslab_convergence_seconds"),
				},
			}},
			{Title: "Events", Panels: []Panel{
				{
					Title: "Events by kind", Unit: "ops", Min: zero(),
					Description: "Simulator events applied to the source per second, by churn kind (xdslab_sim_events_total): the load the scenario offers.",
					Queries:     []Query{{Expr: rateOf(v, "xdslab_sim_events_total", "kind"), Legend: "{{kind}}"}},
				},
				{
					Title: "Late and skipped events", Unit: "ops", Min: zero(),
					Description: "Events fired after their scheduled time (the simulator fell behind: the offered load is lower than the scenario's) " +
						"and churn arrivals that found nothing to change, per second, by kind.",
					Queries: []Query{
						{Expr: rateOf(v, "xdslab_sim_events_late_total", "kind"), Legend: "late {{kind}}"},
						{Expr: rateOf(v, "xdslab_sim_events_skipped_total", "kind"), Legend: "skipped {{kind}}"},
					},
				},
				{
					Title: "Events missed", Unit: "short", Min: zero(),
					Description: "Client × event observations still awaited (xdslab_probe_outstanding). Rising and never falling means clients " +
						"never received a change: a lost push. The run counts these, never drops them.",
					Queries: []Query{{Expr: sumBy("job", sel(v, "xdslab_probe_outstanding")), Legend: "{{job}}"}},
				},
				{
					Title: "Observations", Unit: "ops", Min: zero(),
					Description: "Client × event observations per second: observed (the client saw the change) and superseded " +
						"(a later change to the same object replaced it before the client saw it).",
					Queries: []Query{
						{Expr: rateOf(v, "xdslab_probe_observed_total", ""), Legend: "observed"},
						{Expr: rateOf(v, "xdslab_probe_superseded_total", ""), Legend: "superseded"},
					},
				},
			}},
			{Title: "Fleet (fake Envoys)", Panels: []Panel{
				{
					Title: "Clients", Unit: "short", Min: zero(),
					Description: "Fake Envoys started by the ramp, holding an ADS stream, and holding a full config while connected " +
						"(a reconnected client counts again once it resynced). Connected below started means clients are being refused or reconnecting.",
					Queries: []Query{
						{Expr: sumBy("", sel(v, "xdslab_fleet_clients")), Legend: "started"},
						{Expr: sumBy("", sel(v, "xdslab_fleet_connected")), Legend: "connected"},
						{Expr: sumBy("", sel(v, "xdslab_fleet_full_config_clients")), Legend: "full config"},
					},
				},
				{
					Title: "Responses by type", Unit: "ops", Min: zero(),
					Description: "xDS responses received by the fleet per second, by type (xdslab_fleet_responses_total).",
					Queries:     []Query{{Expr: rateOf(v, "xdslab_fleet_responses_total", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "NACKs by type", Unit: "ops", Min: zero(),
					Description: "NACKs sent by the fleet per second, by type (xdslab_fleet_nacks_total): injected by the scenario's NACK policy, " +
						"or real rejections of invalid resources. Compare with the control plane's pilot_total_xds_rejects.",
					Queries: []Query{{Expr: rateOf(v, "xdslab_fleet_nacks_total", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "No-op responses by type", Unit: "ops", Min: zero(),
					Description: "Responses in which no resource changed for the receiving client, per second, by type " +
						"(xdslab_fleet_noop_responses_total): wasted pushes. High CDS/LDS no-ops mean full pushes reach proxies they do not concern.",
					Queries: []Query{{Expr: rateOf(v, "xdslab_fleet_noop_responses_total", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "No-op share by type", Unit: "percentunit", Min: zero(),
					Description: "No-op responses ÷ responses, by type: the share of pushes that changed nothing for the client.",
					Queries: []Query{{
						Expr:   ratio(rateOf(v, "xdslab_fleet_noop_responses_total", "type"), rateOf(v, "xdslab_fleet_responses_total", "type")),
						Legend: "{{type}}",
					}},
				},
				{
					Title: "Bytes received by type", Unit: "Bps", Min: zero(),
					Description: "Encoded resource bytes received by the fleet per second, by type (xdslab_fleet_bytes_received_total).",
					Queries:     []Query{{Expr: rateOf(v, "xdslab_fleet_bytes_received_total", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "Time to first config", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 of a client's scheduled start (its slot in the ramp) → first full config " +
						"(xdslab_time_to_first_config_seconds) over every client since the fleet started (not per rate interval: " +
						"clients connect during the ramp, before the measurement): how long a new proxy waits before it can serve traffic, " +
						"at the ramp's arrival rate. A fleet that started clients late counts that too; " +
						"xdslab_fleet_start_lateness_seconds says how much of it was the harness's own lag.",
					Queries: cumulativePercentiles(v, "xdslab_time_to_first_config_seconds"),
				},
				{
					Title: "Connect failures and resends", Unit: "ops", Min: zero(),
					Description: "Failed connects by gRPC code, responses identical to one just NACKed, and resend loops after a NACK, per second. " +
						"Resend loops mean the control plane keeps pushing the config a client rejected.",
					Queries: []Query{
						{Expr: rateOf(v, "xdslab_fleet_connect_failures_total", "code"), Legend: "connect failure {{code}}"},
						{Expr: rateOf(v, "xdslab_fleet_resends_after_nack_total", ""), Legend: "resends after NACK"},
						{Expr: rateOf(v, "xdslab_fleet_resend_loops_total", ""), Legend: "resend loops"},
					},
				},
			}},
			{Title: "Harness overhead (lab beside control plane)", Panels: []Panel{
				{
					Title: "CPU by job", Unit: "percentunit", Min: zero(), Width: 8,
					Description: "CPU of the lab processes (simulator, fleet) beside the control plane's (1.0 = one core). If the harness " +
						"uses most of the machine, latencies measure the harness, not the control plane. In an all-in-process run both are one process.",
					Queries: []Query{
						{Expr: rateOf(v, "process_cpu_seconds_total", "job"), Legend: "lab {{job}}"},
						{Expr: rateOf(cp, "process_cpu_seconds_total", "job"), Legend: "control plane {{job}}"},
					},
				},
				{
					Title: "Memory by job", Unit: "bytes", Min: zero(), Width: 8,
					Description: "Resident memory of the lab processes beside the control plane's.",
					Queries: []Query{
						{Expr: sumBy("job", sel(v, "process_resident_memory_bytes")), Legend: "lab {{job}}"},
						{Expr: sumBy("job", sel(cp, "process_resident_memory_bytes")), Legend: "control plane {{job}}"},
					},
				},
				{
					Title: "Goroutines by job", Unit: "short", Min: zero(), Width: 8,
					Description: "Goroutines of the lab processes (a few per fake Envoy) beside the control plane's.",
					Queries: []Query{
						{Expr: sumBy("job", sel(v, "go_goroutines")), Legend: "lab {{job}}"},
						{Expr: sumBy("job", sel(cp, "go_goroutines")), Legend: "control plane {{job}}"},
					},
				},
				{
					Title: "Simulator apply time", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 time the sink took to apply one event (xdslab_sim_apply_duration_seconds): writing a YAML file, " +
						"or updating the in-process registry. t0 is taken when it returns.",
					Queries: percentiles(v, "xdslab_sim_apply_duration_seconds"),
				},
				{
					Title: "Simulator lateness", Unit: "s", Min: zero(),
					Description: "p99 of how late late events fired (xdslab_sim_event_lateness_seconds). Growing lateness means the simulator " +
						"cannot keep the scenario's rate on this machine.",
					Queries: []Query{{Expr: quantile(0.99, v, "xdslab_sim_event_lateness_seconds", ""), Legend: "p99"}},
				},
			}},
		},
	}
}
