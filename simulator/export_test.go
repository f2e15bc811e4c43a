package simulator

import (
	"maps"
	"slices"
)

// What the external tests (package simulator_test) need of the package's insides.

// MaxAuthzRules is maxAuthzRules.
const MaxAuthzRules = maxAuthzRules

// Endpoints counts the endpoints of every service in the mesh.
func (s *Simulator) Endpoints() int {
	n := 0
	for _, svc := range s.m.services {
		n += len(svc.endpoints)
	}
	return n
}

// GatewayClusters lists, sorted, the clusters routers hold.
func (s *Simulator) GatewayClusters() []string { return slices.Sorted(maps.Keys(s.m.gw.clusters)) }
