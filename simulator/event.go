package simulator

import (
	"time"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// Event is one change to the mesh: the objects to upsert and delete, and what clients must
// observe once a control plane has pushed it.
type Event struct {
	// ID numbers the emitted events of a run from 1.
	ID   uint64
	Kind ChurnKind
	// Phase distinguishes the steps of a kind: "remove"/"restore" (endpoint-flap, zone-failure),
	// "step" (rolling-deploy), "" otherwise.
	Phase string
	// Scheduled is the event's offset from the start of churn on the absolute timeline.
	Scheduled time.Duration
	Upserts   []istioconfig.Config
	Deletes   []istioconfig.Key
	// Expectation has EventID, Kind, All and Reach set by the simulator; the Runner sets
	// Scheduled (absolute) before OnEvent and T0 after the sink applied the event.
	Expectation probe.Expectation
	// Skip, when set, says why an arrival produced no change (no service left to delete, a
	// restore superseded by a rollout, …). The Runner counts it and applies nothing.
	Skip string

	// Set by the Runner.
	// Fired is when the Runner started applying the event; Late is set when that was more
	// than LateAfter past the scheduled time, because the runner was behind or its wait
	// overslept (Lateness = Fired - scheduled time).
	Fired    time.Time
	Late     bool
	Lateness time.Duration
	// T0 is the time right after the sink's Apply returned.
	T0 time.Time
}
