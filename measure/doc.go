// Package measure turns what fake Envoy clients report into the lab's measurements: the
// Observer counts what every client sees (connects, responses per type, NACKs, no-op
// responses, resend loops, ACK delay, time to first config, receive backlog) and the Matcher
// matches the simulator's probe expectations against each client's state (push, receive and
// ACK latency, convergence, and every event's observed / already held / superseded / missed
// classes; see match.go for the one definition of each).
//
// In the pipeline it sits between the clients and the report: fakeenvoy's clients call
// probe.Hooks with a probe.ClientInfo, the fleet tees those hooks into an Observer and a
// Matcher, and bench turns their Stats and Results (plain counts and HDR histograms, in µs,
// mergeable across shards) into summary rows. It depends only on probe and the HDR histograms:
// it never imports the clients (fakeenvoy) nor the report format (internal/summary), so any
// client that speaks the hook contract can be measured, and tests drive it with synthetic
// clients.
//
// Both types are safe for concurrent use: hooks run on each client's goroutine and lock only
// that client's shard; Stats and Results merge the shards at read time.
package measure
