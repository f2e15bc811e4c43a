package scenarios_test

import (
	"testing"

	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// TestEventLimitIsTheSimulators: validate's bound on the churn's events is the one a run
// refuses past (simulator.MaxScheduledEvents).
func TestEventLimitIsTheSimulators(t *testing.T) {
	if got := scenarios.MaxScheduledEvents; got != simulator.MaxScheduledEvents {
		t.Fatalf("scenarios' limit %d, the simulator's %d", got, simulator.MaxScheduledEvents)
	}
}

// TestEndpointLimitIsTheSimulators: validate's bound on the topology's endpoints is the
// simulator's address space (simulator.MaxEndpointAddresses).
func TestEndpointLimitIsTheSimulators(t *testing.T) {
	if got := scenarios.MaxEndpoints; got != simulator.MaxEndpointAddresses {
		t.Fatalf("scenarios' limit %d, the simulator's %d", got, simulator.MaxEndpointAddresses)
	}
}
