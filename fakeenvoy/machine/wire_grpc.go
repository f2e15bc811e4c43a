package machine

import "time"

// grpcWire is a proxyless gRPC client's protocol (grpc-go's xDS client, see package validate's grpc.go): SotW with
// every type named, starting from its targets' listeners: LDS names the targets, RDS the
// route configurations they name, CDS the clusters those routes send to, EDS the EDS
// clusters' service names. A named CDS or LDS resource left out of a response is gone, as in
// Envoy's wildcard SotW.
type grpcWire struct{ sotwWire }

// first subscribes to the targets' listeners; grpc-go has no init phases.
func (grpcWire) first(m *Machine, _ time.Time) {
	m.types[tLDS].subscribed = true
	m.types[tLDS].names = m.targets
	m.init.phase = phaseDone
}

func (grpcWire) named(rtype) bool { return true }

func (grpcWire) owed(m *Machine, t rtype) bool { return owedSotw(m, t) }

// dependent adds RDS → CDS: a route configuration names the clusters the client asks for.
func (grpcWire) dependent(t rtype) (rtype, bool) {
	if t == tRDS {
		return tCDS, true
	}
	return envoyDependent(t)
}
