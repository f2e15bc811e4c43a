package scenarios

import "github.com/xdslab/xdslab/scenarios/threshold"

// MetricConnectIncomplete is the gauge a run reports per client group (tag group) and in total:
// the clients without their first full config when the connect phase ended. The implicit
// threshold of each group is written on it.
const MetricConnectIncomplete = "xdslab_connect_incomplete_clients"

// ImplicitThreshold is a threshold a scenario has without writing it under thresholds.
type ImplicitThreshold struct {
	// Key is the metric selector, as a key of Scenario.Thresholds would be
	// ("xdslab_connect_incomplete_clients{group:sidecars}").
	Key       string
	Threshold threshold.Threshold
	// Description says what it checks and how to relax it.
	Description string
}

// ImplicitThresholds returns the thresholds every run of s evaluates beside s.Thresholds: for
// each client group with requireFullConfig (the default) and at least one client,
// xdslab_connect_incomplete_clients{group:NAME} value==0 — a run in which some client never
// got its configuration measured nothing about it, and must not pass.
func (s *Scenario) ImplicitThresholds() []ImplicitThreshold {
	var out []ImplicitThreshold
	for _, c := range s.Clients {
		if !c.RequireFullConfig || c.Count <= 0 {
			continue
		}
		out = append(out, ImplicitThreshold{
			Key:       MetricConnectIncomplete + "{group:" + c.Name + "}",
			Threshold: threshold.Threshold{Source: "value==0", Agg: "value", Op: "==", Value: 0},
			Description: "implicit: every client of group " + c.Name + " holds its first full config by the end of the connect phase;" +
				" clients[].requireFullConfig: false drops it",
		})
	}
	return out
}
