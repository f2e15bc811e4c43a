package simulator

import (
	"flag"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/internal/dist"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is the virtual clock's start in tests, so that t0 values are reproducible.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// smallTopology is a mesh small enough to check exhaustively after every event.
func smallTopology() Topology {
	return Topology{
		Namespaces:                  3,
		Services:                    12,
		Protocols:                   Protocols{HTTP: 2, GRPC: 1, TCP: 1},
		PortsPerService:             dist.Spec{Dist: "uniform", Min: 1, Max: 3},
		EndpointsPerService:         dist.Spec{Dist: "lognormal", Median: 4, Sigma: 0.5},
		Localities:                  Localities{Regions: 2, ZonesPerRegion: 2},
		Versions:                    2,
		ServiceAccountsPerNamespace: 2,
		VirtualServices:             0.4,
		DestinationRules:            0.5,
		SidecarImports:              1,
	}
}

// kindCases lists one churn entry per kind (replay is tested separately: it needs a trace).
func kindCases() []Churn {
	return []Churn{
		{Kind: EndpointFlap, Rate: 4, Down: 2 * time.Second},
		{Kind: Scale, Every: time.Second, Services: 2, Delta: dist.Spec{Dist: "uniform", Min: 1, Max: 3}},
		{Kind: RollingDeploy, Every: 5 * time.Second, Window: 3 * time.Second},
		{Kind: ServiceCreate, Every: 2 * time.Second},
		{Kind: ServiceDelete, Every: 3 * time.Second},
		{Kind: ConfigChange, Target: TargetVirtualService, Rate: 1, Services: 2},
		{Kind: ConfigChange, Target: TargetDestinationRule, Rate: 1},
		{Kind: ServiceAccountChange, Every: 2 * time.Second},
		{Kind: ZoneFailure, At: []time.Duration{time.Second, 10 * time.Second}, Fraction: 0.5, Down: 4 * time.Second},
	}
}

func mixedConfig(seed uint64) Config {
	return Config{Seed: seed, Duration: 20 * time.Second, Topology: smallTopology(), Churn: kindCases(), MaxPredicates: 64}
}
