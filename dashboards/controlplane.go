package dashboards

// ControlPlaneUID is the Grafana UID of the control-plane dashboard.
const ControlPlaneUID = "xdslab-controlplane"

// ControlPlane is the control-plane dashboard. Its first rows use only Istio's metric names
// (pilot_*) and the standard process_* and go_* series, so it works on istiod as well as on
// xdslab's control plane; the last row holds what only xdslab exports and stays empty on
// istiod.
func ControlPlane() Spec {
	const v = "job"
	return Spec{
		UID:   ControlPlaneUID,
		Title: "xDS control plane",
		Description: "Pushes, debouncing, convergence, rejections and resource use of a Pilot-style xDS control plane. " +
			"Uses Istio's metric names, so it works on istiod as well as on xdslab's control plane.",
		Tags: []string{"xdslab", "xds", "istio"},
		Variables: []Variable{{
			Name: v, Label: "job", Query: "label_values(pilot_xds, job)",
			Description: "Prometheus jobs scraping a control plane (any job exporting pilot_xds).",
		}},
		Rows: []Row{
			{Title: "Pushes", Panels: []Panel{
				{
					Title: "Pushes by type", Unit: "ops", Min: zero(),
					Description: "xDS responses sent per second, by type (cds, eds, lds, rds, …; Istio also counts send errors as <type>_senderr). " +
						"EDS should dominate under endpoint churn; CDS/LDS/RDS climbing with it means endpoint-only changes are triggering full pushes.",
					Queries: []Query{{Expr: rateOf(v, "pilot_xds_pushes", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "Push triggers by reason", Unit: "ops", Min: zero(),
					Description: "Why pushes happen, per second, by reason (endpoint, config, service, proxy, global, …). " +
						"A reason you did not expect (e.g. global or unknown) points at the source of unnecessary full pushes.",
					Queries: []Query{{Expr: rateOf(v, "pilot_push_triggers", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "Inbound updates by kind", Unit: "ops", Min: zero(),
					Description: "Changes reaching the control plane per second, by kind (config, eds, svc, svcdelete): the load before debouncing. " +
						"Compare with pushes: the gap is what debouncing saves.",
					Queries: []Query{{Expr: rateOf(v, "pilot_inbound_updates", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "Events per debounced push", Unit: "short", Min: zero(),
					Description: "Inbound updates per debounced push (updates/s ÷ debounced pushes/s). Near 1 means debouncing merges nothing " +
						"(minQuiet too short for the churn); large values mean each push carries many changes (and waited longer for them).",
					Queries: []Query{{
						Expr:   ratio(rateOf(v, "pilot_inbound_updates", ""), rateOf(v, "pilot_debounce_time_count", "")),
						Legend: "events per push",
					}},
				},
				{
					Title: "Debounce time", Unit: "s", Min: zero(),
					Description: "First change of a batch → push start, p50/p90/p99. Sits at minQuiet under light churn and rises towards maxDelay " +
						"under steady churn (changes keep resetting the quiet timer). Part of every push latency.",
					Queries: percentiles(v, "pilot_debounce_time"),
				},
				{
					Title: "Snapshot build time", Unit: "s", Min: zero(),
					Description: "Time to build the push context (snapshot) of one push, p50/p90/p99 (pilot_pushcontext_init_seconds). " +
						"Grows with the number of services and configs; it is paid once per push, before any proxy is pushed.",
					Queries: percentiles(v, "pilot_pushcontext_init_seconds"),
				},
			}},
			{Title: "Convergence and push time", Panels: []Panel{
				{
					Title: "Proxy convergence time (heatmap)", Unit: "s", Kind: Heatmap,
					Description: "Distribution over time of push enqueued → last response of the push sent to the proxy (pilot_proxy_convergence_time). " +
						"A band moving up means proxies wait longer for config; a second band usually means queueing behind the push throttle.",
					Queries: []Query{heatmapOf(v, "pilot_proxy_convergence_time")},
				},
				{
					Title: "Proxy convergence time", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 of push enqueued → last response sent, per proxy. The p99 is what the slowest proxies see; " +
						"add the debounce time to get change → proxy.",
					Queries: percentiles(v, "pilot_proxy_convergence_time"),
				},
				{
					Title: "xDS push time (heatmap)", Unit: "s", Kind: Heatmap,
					Description: "Distribution over time of the time to generate and send one response (pilot_xds_push_time, all types). " +
						"Slow cells point at expensive generation (large CDS/LDS) or slow clients (flow control).",
					Queries: []Query{heatmapOf(v, "pilot_xds_push_time")},
				},
				{
					Title: "xDS push time", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 of the time to generate and send one response, all types.",
					Queries:     percentiles(v, "pilot_xds_push_time"),
				},
				{
					Title: "xDS push time p99 by type", Unit: "s", Min: zero(),
					Description: "p99 push time per xDS type: tells which resource type is expensive to build or send.",
					Queries:     []Query{{Expr: quantile(0.99, v, "pilot_xds_push_time", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "Proxy queue time", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 time a proxy's push waited in the push queue before a worker took it (pilot_proxy_queue_time). " +
						"High values with low push time mean the push throttle (concurrent pushes) is the bottleneck.",
					Queries: percentiles(v, "pilot_proxy_queue_time"),
				},
				{
					Title: "Config size p99 by type", Unit: "bytes", Min: zero(),
					Description: "p99 size of a response, by type (pilot_xds_config_size_bytes). Large CDS/LDS responses cost CPU, memory and " +
						"bandwidth on every full push; a Sidecar resource scoping the config is the usual fix.",
					Queries: []Query{{Expr: quantile(0.99, v, "pilot_xds_config_size_bytes", "type"), Legend: "{{type}}"}},
				},
			}},
			{Title: "Clients and rejections", Panels: []Panel{
				{
					Title: "Connected clients", Unit: "short", Min: zero(),
					Description: "xDS clients (proxies) connected (pilot_xds). A drop means proxies disconnected: look for restarts, " +
						"admission control refusing streams, or the control plane closing streams after malformed requests.",
					Queries: []Query{{Expr: sumBy("job", sel(v, "pilot_xds")), Legend: "{{job}}"}},
				},
				{
					Title: "Services", Unit: "short", Min: zero(),
					Description: "Services in the latest snapshot (pilot_services): the size of the mesh the control plane computes config for.",
					Queries:     []Query{{Expr: sumBy("job", sel(v, "pilot_services")), Legend: "{{job}}"}},
				},
				{
					Title: "NACKs by type", Unit: "ops", Min: zero(),
					Description: "Responses rejected by proxies per second, by type (pilot_total_xds_rejects). Any NACK means a proxy runs old config " +
						"for that type; a steady rate usually means one bad resource is being resent to many proxies.",
					Queries: []Query{{Expr: rateOf(v, "pilot_total_xds_rejects", "type"), Legend: "{{type}}"}},
				},
				{
					Title: "Expired nonces by type", Unit: "ops", Min: zero(),
					Description: "Requests carrying a nonce older than the latest response, per second, by type (pilot_xds_expired_nonce). " +
						"Normal in small numbers while pushes overlap; a high rate means proxies answer slower than the control plane pushes.",
					Queries: []Query{{Expr: rateOf(v, "pilot_xds_expired_nonce", "type"), Legend: "{{type}}"}},
				},
			}},
			{Title: "Process", Panels: []Panel{
				{
					Title: "CPU", Unit: "percentunit", Min: zero(), Width: 8,
					Description: "CPU used by the control plane process (1.0 = one core busy). Pushes are CPU-bound: " +
						"compare with pushes per second to see the cost of a push.",
					Queries: []Query{{Expr: rateOf(v, "process_cpu_seconds_total", "job, instance"), Legend: "{{instance}}"}},
				},
				{
					Title: "Memory", Unit: "bytes", Min: zero(), Width: 8,
					Description: "Resident memory and Go heap in use of the control plane process. Heap that grows with connected clients " +
						"is per-connection state; heap that grows with pushes and does not come back is a leak.",
					Queries: []Query{
						{Expr: sumBy("job, instance", sel(v, "process_resident_memory_bytes")), Legend: "RSS {{instance}}"},
						{Expr: sumBy("job, instance", sel(v, "go_memstats_heap_inuse_bytes")), Legend: "heap in use {{instance}}"},
					},
				},
				{
					Title: "Goroutines", Unit: "short", Min: zero(), Width: 8,
					Description: "Goroutines of the control plane process. Expect a few per connected client; growth without more clients is a leak.",
					Queries:     []Query{{Expr: sumBy("job, instance", sel(v, "go_goroutines")), Legend: "{{instance}}"}},
				},
			}},
			{Title: "xdslab control plane only (empty on istiod)", Panels: []Panel{
				{
					Title: "Events per push cycle", Unit: "short", Min: zero(),
					Description: "p50/p90/p99 of change events merged into one push cycle by the debouncer (xdslab_cp_debounce_events_per_push): " +
						"the distribution behind 'Events per debounced push'.",
					Queries: percentiles(v, "xdslab_cp_debounce_events_per_push"),
				},
				{
					Title: "Events in vs push cycles", Unit: "ops", Min: zero(),
					Description: "Change events entering the debouncer and push cycles leaving it, per second (events = cycles + merged). " +
						"The distance between the lines is the work debouncing saves.",
					Queries: []Query{
						{Expr: rateOf(v, "xdslab_cp_push_cycles_total", "") + " + " + rateOf(v, "xdslab_cp_events_merged_total", ""), Legend: "events in"},
						{Expr: rateOf(v, "xdslab_cp_push_cycles_total", ""), Legend: "push cycles"},
					},
				},
				{
					Title: "Cache hit ratio by type", Unit: "percentunit", Min: zero(),
					Description: "Share of resource reads served from the marshalled-resource cache, by type (xds_cache_reads{result}). " +
						"Low EDS hit ratios under endpoint churn are expected; low CDS/LDS ratios mean the cache keys are too fine. " +
						"istiod exports xds_cache_reads with type=hit|miss, no result label and no per-type split: " +
						"there the panel draws one overall line, \"all (istiod)\".",
					Queries: []Query{{
						Expr:   ratio(rateOf(v, "xds_cache_reads", "type", `result="hit"`), rateOf(v, "xds_cache_reads", "type")),
						Legend: "{{type}}",
					}, {
						// istiod: the series without a result label, whose type is the result.
						Expr:   ratio(rateOf(v, "xds_cache_reads", "", `result=""`, `type="hit"`), rateOf(v, "xds_cache_reads", "", `result=""`)),
						Legend: "all (istiod)",
					}},
				},
				{
					Title: "ACK latency", Unit: "s", Min: zero(),
					Description: "p50/p90/p99 of response sent → its ACK or NACK received (xdslab_cp_ack_latency_seconds). " +
						"With flow control on, the next push of a type waits for this.",
					Queries: percentiles(v, "xdslab_cp_ack_latency_seconds"),
				},
				{
					Title: "Push triggers skipped by scope", Unit: "ops", Min: zero(),
					Description: "Per second, by reason: push triggers counted for connections pushed (pilot_push_triggers) and for connections " +
						"left out because their Sidecar scope and exportTo hide the change (xdslab_cp_push_skipped_total). " +
						"A high skipped share is what Sidecar scoping saves.",
					Queries: []Query{
						{Expr: rateOf(v, "pilot_push_triggers", "type"), Legend: "pushed {{type}}"},
						{Expr: rateOf(v, "xdslab_cp_push_skipped_total", "type"), Legend: "skipped {{type}}"},
					},
				},
				{
					Title: "Config file errors", Unit: "short", Min: zero(),
					Description: "Config files that failed to load, per rate interval (xdslab_cp_config_file_errors_total). The previous objects " +
						"of a bad file are kept, so proxies keep working on stale config: see /debug/config for the file, line and error.",
					Queries: []Query{{Expr: sumBy("job", "increase("+sel(v, "xdslab_cp_config_file_errors_total")+rateWindow+")"), Legend: "{{job}}"}},
				},
			}},
		},
	}
}
