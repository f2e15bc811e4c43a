package main

import "fmt"

// fdMargin is what a run needs besides its streams: listeners, the metrics server, the sink's
// files, the Go runtime's own descriptors.
const fdMargin = 256

// fdAdvice says, when it is short, how a run of clients fake Envoys on conns gRPC connections
// in one process (with the control plane in the same process when inProcess: both ends of every
// connection are then ours) fits in limit open files; "" when it fits or the limit is unknown (0).
func fdAdvice(clients, conns int, inProcess bool, limit uint64) string {
	need := conns + fdMargin
	if inProcess {
		need += conns
	}
	if limit == 0 || uint64(need) <= limit {
		return ""
	}
	where := "the fleet"
	if inProcess {
		where = "the fleet and the in-process control plane (both ends of every connection)"
	}
	who := fmt.Sprintf("%d clients", clients)
	if conns != clients {
		who += fmt.Sprintf(" on %d connections", conns)
	}
	return fmt.Sprintf("warning: %s need about %d open files for %s, and this process may open %d (ulimit -n): "+
		"the clients beyond that fail to connect (xdslab_fleet_connect_failures_total) and miss every event. "+
		"Raise the limit (ulimit -n %d), run the control plane in its own process (--target), or split the fleet into shards (docs/distributed.md)",
		who, need, where, limit, roundUp(need))
}

// roundUp is n rounded up to a power of two, a limit worth suggesting.
func roundUp(n int) int {
	p := 1024
	for p < n {
		p *= 2
	}
	return p
}
