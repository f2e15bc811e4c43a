package machine

import (
	"strconv"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// rtype is a resource type the client watches. The constants are in Envoy's subscription order;
// SDS (secrets referenced by TLS transport sockets) is subscribed when a cluster or listener
// first names a secret.
type rtype uint8

const (
	tCDS rtype = iota
	tEDS
	tLDS
	tRDS
	tSDS
	numTypes
)

var typeURLs = [numTypes]string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType, resource.SecretType}

// url is t's type URL.
func (t rtype) url() string { return typeURLs[t] }

// String is t's xDS service name: CDS, EDS, LDS, RDS or SDS.
func (t rtype) String() string {
	switch t {
	case tCDS:
		return "CDS"
	case tEDS:
		return "EDS"
	case tLDS:
		return "LDS"
	case tRDS:
		return "RDS"
	case tSDS:
		return "SDS"
	}
	return "rtype(" + strconv.Itoa(int(t)) + ")"
}

// kind names one resource of type t in messages.
func (t rtype) kind() string {
	switch t {
	case tCDS:
		return "cluster"
	case tEDS:
		return "cluster load assignment"
	case tLDS:
		return "listener"
	case tSDS:
		return "secret"
	default:
		return "route config"
	}
}

// wildcard types hold the state of the world: a resource missing from a SotW response is
// deleted, and Envoy subscribes to them without names (a gRPC client names them; see
// wire.named).
func (t rtype) wildcard() bool { return t == tCDS || t == tLDS }

// typeOf returns the type of url; ok is false for a type the client does not know.
func typeOf(url string) (rtype, bool) {
	for i, u := range typeURLs {
		if u == url {
			return rtype(i), true
		}
	}
	return 0, false
}

// typeOfBytes is typeOf without converting url to a string (a copy per resource).
func typeOfBytes(url []byte) (rtype, bool) {
	for i, u := range typeURLs {
		if string(url) == u {
			return rtype(i), true
		}
	}
	return 0, false
}
