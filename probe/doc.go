// Package probe is the shared vocabulary between the simulator and the fake Envoy fleet: an
// Expectation says what a client must observe for a simulator event to count as delivered.
//
// The simulator attaches one Expectation to every event it applies (event id, scheduled time,
// actual apply time t0, kind, predicates, reach). The fleet evaluates the predicates against each
// client's resources after every response that touches a predicate's resource, and records the
// push latency from t0 to the moment they all hold in effect (and the receive latency to the
// response that carried them); see measure.Matcher for every class an observation can end
// in (observed, already held, superseded, missed). Neither side imports the other; both
// import this package, which depends only on the Envoy API types and gRPC's status codes.
//
// Predicates are plain data (JSON-encodable, so they travel in event logs) with a pure Holds
// method over a View of a client's resources.
//
// The hook contract (hooks.go: Hooks, ClientInfo, ClientState, ResponseInfo, the optional
// BacklogHook and ResyncHook, NopHooks) lives here too, rather than in a package of its own:
// it is the same vocabulary seen from the client's side — what a fake Envoy reports and what
// the measurement (package measure) reads to evaluate predicates against a client's View — and
// it needs nothing beyond this package's dependencies (protobuf, gRPC status codes). So the
// clients (fakeenvoy) and the measurement (measure) both depend on probe alone and never on
// each other, as the simulator and the fleet do.
package probe
