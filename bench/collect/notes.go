package collect

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/scenarios"
)

// ConnectIncomplete returns xdslab_connect_incomplete_clients, in total and per client group of
// the scenario (every group, so that shards merge): the clients of sizes (this fleet's, by
// group) without their first full config when the connect phase ended (full, by group). Its
// max is the group's size here.
func ConnectIncomplete(sc *scenarios.Scenario, sizes map[string]int, full map[string]uint64) []summary.Metric {
	groups := make([]string, len(sc.Clients))
	for i, c := range sc.Clients {
		groups[i] = c.Name
	}
	return connectIncomplete(groups, sizes, full)
}

func connectIncomplete(groups []string, sizes map[string]int, full map[string]uint64) []summary.Metric {
	var out []summary.Metric
	total, clients := 0, 0
	for _, g := range groups {
		n := sizes[g]
		missing := n - int(min(full[g], uint64(n)))
		total, clients = total+missing, clients+n
		out = append(out, summary.NewGauge(MetricConnectIncomplete, summary.Default, float64(missing), 0, float64(n), map[string]string{"group": g}))
	}
	return append(out, summary.NewGauge(MetricConnectIncomplete, summary.Default, float64(total), 0, float64(clients), nil))
}

// AdmissionNote explains connection refusals with ResourceExhausted — what they are, why they
// happened and how to avoid them — or returns "" when there were none. admit is the in-process
// control plane's admission rate (0: an external target, whose limit is not known here).
func AdmissionNote(refused uint64, admit float64, sc *scenarios.Scenario) string {
	if refused == 0 {
		return ""
	}
	ramp := 0.0
	for _, c := range sc.Clients {
		if c.Ramp.PerSecond() == 0 {
			ramp += float64(c.Count)
		} else {
			ramp += c.Ramp.PerSecond()
		}
	}
	what := fmt.Sprintf("%d new ADS streams were refused with ResourceExhausted and retried with Envoy's backoff", refused)
	if admit > 0 {
		return fmt.Sprintf("%s: the control plane admits %g new streams/s (controlPlane.admissionRate; 0 means the push throttle per second, as Istio) "+
			"and the clients ramp at %g/s in all; set controlPlane.admissionRate to at least %g/s in the scenario, or lower the groups' ramp, to connect without refusals",
			what, admit, ramp, ramp)
	}
	return fmt.Sprintf("%s: the control plane at the target limits how fast it admits new streams (istiod: PILOT_MAX_REQUESTS_PER_SECOND; 'xdslab controlplane --admission-rate'), "+
		"and the clients ramp at %g/s in all; raise that limit or lower the groups' ramp", what, ramp)
}

// ConnectFailureNote says how many connects failed with each gRPC code and what one of each
// said ("" when none failed): admission control (ResourceExhausted) reads differently from a
// refused or timed-out dial (Unavailable). Runs, shards and xdslab fleet print it.
func ConnectFailureNote(st measure.FleetStats) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(st.ConnectFailures)) {
		parts = append(parts, fmt.Sprintf("%d %s (one said: %s)", st.ConnectFailures[code], code, st.ConnectFailureText[code]))
	}
	return strings.Join(parts, "; ")
}

// IncompleteNote says why clients hold no full config, one clause per group and reason, most
// clients first (at most five, then how many more): "sidecars: 500 clients: waiting for secret
// "ROOTCA" from ADS: … (e.g. NODE (cluster C))". Empty when every client has one.
func IncompleteNote(groups []fleet.IncompleteGroup) string {
	const max = 5
	var parts []string
	for i, g := range groups {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more reasons", len(groups)-max))
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %d clients: %s (e.g. %s)", g.Group, g.Clients, g.Reason, g.Examples[0]))
	}
	return strings.Join(parts, "; ")
}
