// Package probe is the shared vocabulary between the simulator and the fake Envoy fleet: an
// Expectation says what a client must observe for a simulator event to count as delivered.
//
// The simulator attaches one Expectation to every event it applies (event id, scheduled time,
// actual apply time t0, kind, predicates, reach). The fleet evaluates the predicates against each
// client's accepted resources after every response and records the push latency from t0 to the
// receive time of the response that made them all hold. Neither side imports the other; both
// import this package, which depends only on the Envoy API types.
//
// Predicates are plain data (JSON-encodable, so they travel in event logs) with a pure Holds
// method over a View of a client's resources.
package probe
