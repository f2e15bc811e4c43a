// Package simulator synthesizes a service mesh and its churn, and feeds both to a control plane
// through a Sink.
//
// The flow is: a Config (topology densities and churn processes, a seed and a duration) becomes a
// Simulator, a pure core with no clock and no I/O. Its Initial method returns the starting
// topology as Istio objects (istioconfig.Config whose Spec is a ServiceEntry, WorkloadEntry,
// VirtualService, DestinationRule, Sidecar, Gateway or AuthorizationPolicy from istio.io/api);
// its Next method returns the churn
// events in timeline order. Every name, address and arrival time is a function of the seed only:
// each churn process draws its arrival times from its own seeded source (Poisson for a rate,
// fixed offsets for every/at), so the timeline is absolute and independent of how fast events are
// applied.
//
// An Event carries the objects it upserts and deletes and a probe.Expectation: what a client of
// the control plane must observe for the event to count as delivered, named the way Istio and our
// generators name xDS resources (cluster and EDS resource "outbound|PORT||HOST", route
// configuration "PORT", RBAC policy "ns[NS]-policy[NAME]-rule[i]" on listener virtualInbound).
//
// The Runner applies events to a Sink on an injected Clock (the wall clock, or a virtual clock that
// runs as fast as possible). It waits for each event's scheduled time; an event whose time has
// already passed fires at once and is counted late, with its lateness, never silently shifted.
// Before applying it hands the event to OnEvent (so a fleet can register the expectation), takes
// t0 right after the sink's Apply returns, and hands the event with t0 to OnApplied and then to the
// recorders (the event log).
//
// The simulator only drives a Sink (sink.go: Init, Apply, Close); it imports none. The sinks
// live in simulator/sinks, which imports this package for Event: the directory of Istio YAML
// that a file-watching control plane reads, the Kubernetes API server, an MCP server, and our
// own control plane's config store in process, and the event log. The trace format is here
// (trace.go): EncodeEvent renders an event as the JSON line that sinks.EventLog writes and
// ParseTrace reads back for the replay churn kind. A sink needs nothing beyond istioconfig.Config
// and Key.
package simulator
