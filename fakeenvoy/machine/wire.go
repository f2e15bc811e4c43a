package machine

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// A wire adapter is one protocol's side of the machine: SotW (wire_sotw.go), Delta
// (wire_delta.go) and a proxyless gRPC client (wire_grpc.go, SotW with every type named). Its
// reader turns a response into one update, which the machine applies the same way whatever
// carried it (apply.go); the adapter then builds the requests in its protocol's shape.
type wire interface {
	// first makes the first subscription of a new client process.
	first(m *Machine, now time.Time)
	// restate appends the request that states t's subscription on a new stream (or when
	// initialization first subscribes to t), with what the client holds of it.
	restate(m *Machine, s *Step, t rtype)
	// resubscribe makes names (sorted, unique) t's subscription, appending the request that
	// changes it when the protocol needs one.
	resubscribe(m *Machine, s *Step, t rtype, names []string)
	// ack appends the ACK, or the NACK when s.Info.Nacked, of the response u came from.
	ack(m *Machine, s *Step, u *update)
	// named reports whether t is subscribed by name (not wildcard).
	named(t rtype) bool
	// dependent is the type whose names follow from t's resources (CDS → EDS, LDS → RDS).
	dependent(t rtype) (rtype, bool)
	// owed reports whether the server owes subscribed type t an answer on a new stream that
	// restated it (see startResync).
	owed(m *Machine, t rtype) bool
}

var (
	_ wire = sotwWire{}
	_ wire = deltaWire{}
	_ wire = grpcWire{}
)

// update is one response as the machine applies it, whatever protocol carried it.
type update struct {
	t       rtype
	typeURL string // as the response names it (a type the client may not know)
	version string // SotW version_info
	nonce   string
	items   []item
	st      []itemState // what apply made of each item (parallel to items; set by apply)
	removed []string    // Delta removed_resources
	// full: the response lists every resource of t the client should hold; a held one it
	// lacks is deleted (SotW CDS and LDS).
	full bool
	// versions: items carry per-resource versions, recorded when the response is accepted
	// (Delta).
	versions bool
	// err is a response-level error found while reading it: the whole response is NACKed.
	err error
	// distinct: no two items share a name (known from the codec's memo; false: not known).
	distinct bool
	// run is the codec's memo run the items are (nil: none), and itemErrs how many
	// items apply found in error (rejected or not subscribed).
	run      *respEntry
	itemErrs int
	// unwatched is how a response for a type the client has no subscription for is answered.
	unwatched unwatched
}

// unwatched is what a client does with a response for a type it does not watch.
type unwatched uint8

const (
	watched       unwatched = iota // the response is applied
	ackUnwatched                   // not applied, ACKed by the adapter (SotW: Envoy's legacy mux)
	dropUnwatched                  // not applied, not answered (Delta)
)

// item is one resource of a response, before it is applied. Items are read-only once built:
// the items of a memo run are shared by every client that receives it, and what applying one
// led to is the client's own (itemState).
//
// A SotW response's items are built by the codec, while the bytes are still in the transport's
// buffer (Codec.readSotw), or by OnSotw from the response's Anys.
type item struct {
	name    string // field 1 of the resource (see readName); SotW: "" when !nameOK
	raw     []byte // nil when hit holds the bytes
	version string
	typeURL string // SotW: the Any's type URL
	size    int    // bytes of the resource
	nameOK  bool
	hashed  bool // hash is already set
	hash    uint64
	hit     *decoded // the interned resource with these bytes, when the codec found it
}

// itemState is what applying an item led to, for one client (update.st).
type itemState struct {
	d   *decoded // nil when identical to the held resource
	err error
}

// envoyDependent is Envoy's follow-up: clusters name assignments, listeners route configs.
func envoyDependent(t rtype) (rtype, bool) {
	switch t {
	case tCDS:
		return tEDS, true
	case tLDS:
		return tRDS, true
	}
	return 0, false
}

// owedSotw: in SotW a restated subscription is answered when there is something to send: a
// named one that names something, a wildcard one that held something (go-control-plane does
// not answer a wildcard type it has nothing of, at the version the client restates).
func owedSotw(m *Machine, t rtype) bool {
	if m.wire.named(t) {
		return len(m.types[t].names) > 0
	}
	return len(m.types[t].res) > 0
}

// nackStatus is a NACK's error_detail: code 13 INTERNAL, as Envoy sends it; grpc-go's xDS
// client sends code 3 INVALID_ARGUMENT (ads_stream.go, sendMessageLocked).
func (m *Machine) nackStatus(msg string) *status.Status {
	code := codes.Internal
	if m.grpc {
		code = codes.InvalidArgument
	}
	return &status.Status{Code: int32(code), Message: msg}
}
