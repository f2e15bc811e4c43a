// Package probe is the shared vocabulary between the simulator and the fake Envoy fleet: an
// Expectation says what a client must observe for a simulator event to count as delivered.
//
// The simulator attaches one Expectation to every event it applies (event id, scheduled time,
// actual apply time t0, kind, predicates, reach). The fleet evaluates the predicates against each
// client's resources after every response that touches a predicate's resource, and records the
// push latency from t0 to the moment they all hold in effect (and the receive latency to the
// response that carried them); see the fleet's matcher for every class an observation can end
// in (observed, already held, superseded, missed). Neither side imports the other; both
// import this package, which depends only on the Envoy API types.
//
// Predicates are plain data (JSON-encodable, so they travel in event logs) with a pure Holds
// method over a View of a client's resources.
package probe
