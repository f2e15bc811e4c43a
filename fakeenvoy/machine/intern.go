package machine

import (
	"bytes"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy/validate"
)

// Interner shares decoded resources among the clients of a fleet: 10,000 clients that receive
// the same cluster hold one decoded proto instead of 10,000. A decoded resource is immutable
// once built (clients, hooks and probe.View only read it), so sharing it changes nothing a
// client or an observer sees.
//
// Entries are keyed by (type, validation mode, hash of the encoded bytes) and keep one copy of
// those bytes: a hit is only a hit when the bytes are equal, so a hash collision costs a
// private decode, never a wrong resource.
//
// Lifetime: the table holds weak pointers (package weak) and the clients hold the strong ones.
// When no client holds a resource any more the garbage collector frees it, and a cleanup
// (runtime.AddCleanup) removes its table slot. Nothing has to be released by hand, so a client
// that is dropped without being stopped cannot leak entries, and the table never outlives its
// users' data. An Interner is safe for concurrent use; the zero value is not usable, use
// NewInterner. A nil *Interner decodes privately (no sharing).
type Interner struct {
	mu sync.Mutex
	m  map[internKey]weak.Pointer[decoded]
	// dues pools the warming maps of whole configs (dueMap).
	dues sync.Pool
	// secretLists holds one copy of each list of secret references decoded (by its encoding).
	secretLists map[string][]secretRef
	// sets are the clients' shared maps of accepted resources (resset.go).
	trans   map[setKey]transition
	content map[contentKey]weak.Pointer[resSet]
	nextSet uint64
	// names finds a set by its refs' first element (resSet.refsWire).
	names map[*string]weak.Pointer[resSet]
	// resp is the codec's memo of responses' resources (respmemo.go).
	resp respMemo
	// states pools the machines' itemStates by size class: a full config's is tens of KB, and
	// every client of a push needs one only while it applies the response.
	states [stateTiers]sync.Pool
}

// stateTiers size classes: slices of 1 << i itemStates, up to 1 << (stateTiers-1).
const stateTiers = 18

// itemStates returns n zeroed itemStates for apply, from the pool (give them back with
// putItemStates); a nil Interner allocates.
func (in *Interner) itemStates(n int) []itemState {
	t := bits.Len(uint(n - 1))
	if in == nil || n == 0 || t >= stateTiers {
		return make([]itemState, n)
	}
	if p, ok := in.states[t].Get().(*itemState); ok {
		return unsafe.Slice(p, 1<<t)[:n]
	}
	return make([]itemState, n, 1<<t)
}

// putItemStates gives back what itemStates returned, cleared so that the pool holds no
// decoded resource or error.
func (in *Interner) putItemStates(st []itemState) {
	c := cap(st)
	t := bits.Len(uint(c - 1))
	if in == nil || c == 0 || c&(c-1) != 0 || t >= stateTiers {
		return // not one of the pool's
	}
	clear(st)
	// The pool holds the first state's address (no box to allocate, as &st would be): every
	// slice of tier t has room for exactly 1<<t.
	in.states[t].Put(&st[:1][0])
}

// responses is the fleet's memo of responses' resources, nil when in is nil.
func (in *Interner) responses() *respMemo {
	if in == nil {
		return nil
	}
	return &in.resp
}

type internKey struct {
	hash uint64
	t    rtype
	mode checkMode
}

// decoded is one decoded resource: its name (field 1), the hash of its encoded bytes (with
// hashSeed), those bytes (nil when private), the message and what it references (a cluster's
// EDS service name, a listener's RDS route config names). Never mutated once built.
type decoded struct {
	name string
	hash uint64
	raw  []byte
	msg  proto.Message
	refs []string
	// fetchTimeout is the initial_fetch_timeout of the config source the resource names for
	// what it references (a cluster's eds_config, a listener's RDS config_source); hasFetch
	// is false when the config source gives none (Envoy's 15s default applies).
	fetchTimeout time.Duration
	hasFetch     bool
	// heavy: an assignment whose healthy hosts' weights overflow a hash load balancer
	// (validate.HashWeightsOverflow; realistic decoding only).
	heavy bool
	size  uint32 // bytes of the resource (sameAs compares only copies of one size)
	// secrets are the SDS secrets the resource's TLS transport sockets reference, with their
	// config sources (sorted, unique), and secretWaits the initial_fetch_timeout of those
	// whose sds_config gives one (the others wait Envoy's ConfigSource default).
	secrets     []secretRef
	secretWaits []secretWait
	// secretClusters are the bootstrap clusters other than the control plane's that secrets
	// name as their config source (unique; the agent's in a mesh), for secretSourceErr.
	secretClusters []string
	// same is sameAs's last answer for d against a held copy (nil: none yet), shared by the
	// clients that hold that copy and receive d.
	same atomic.Pointer[sameMemo]
}

// NewInterner returns an empty table; give the same one to every client that should share.
func NewInterner() *Interner {
	return &Interner{m: make(map[internKey]weak.Pointer[decoded]), secretLists: make(map[string][]secretRef), trans: make(map[setKey]transition),
		content: make(map[contentKey]weak.Pointer[resSet]),
		names:   make(map[*string]weak.Pointer[resSet])}
}

// Len is the number of table slots (live resources, plus dead ones whose cleanup has not run).
func (in *Interner) Len() int {
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.m)
}

// decode returns the decoded resource of type t with bytes raw (hash is their maphash with
// hashSeed) named name, validated as mode says: a shared one when the table holds the same
// bytes, else a new one (added to the table when in is not nil). Resources that fail to decode
// or validate are not shared.
func (in *Interner) decode(t rtype, mode checkMode, hash uint64, name string, raw []byte) (*decoded, error) {
	if in == nil {
		return decodeNew(t, mode, hash, name, nil, raw)
	}
	k := internKey{hash: hash, t: t, mode: mode}
	if d := in.lookup(k, raw); d != nil {
		return d, nil
	}
	// Decode outside the lock: clients decode different resources in parallel; two that race
	// on the same one both decode it and the second adopts the first's.
	d, err := decodeNew(t, mode, hash, name, raw, raw)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	d.secrets = in.secretListLocked(d.secrets)
	if wp, ok := in.m[k]; ok {
		if old := wp.Value(); old != nil {
			if bytes.Equal(old.raw, raw) {
				return old, nil
			}
			return d, nil // a live hash collision: keep this one private
		}
	}
	in.m[k] = weak.Make(d)
	runtime.AddCleanup(d, in.evict, k)
	return d, nil
}

// secretListLocked returns the table's list equal to refs, adding refs when it has none (and
// room): the thousands of clusters of a full config name one or two lists of secrets between
// them, and Machine.hasSecrets knows a list it asked about by its first element's address.
// in.mu is held.
func (in *Interner) secretListLocked(refs []secretRef) []secretRef {
	if len(refs) == 0 {
		return refs
	}
	var b []byte
	for _, r := range refs {
		b = append(b, r.name...)
		b = append(b, 0, byte(r.kind))
		b = append(b, r.arg...)
		b = append(b, 0)
	}
	if l, ok := in.secretLists[string(b)]; ok {
		return l
	}
	if len(in.secretLists) < maxSecretLists {
		in.secretLists[string(b)] = refs
	}
	return refs
}

// dueMap returns an empty warming map for about n names: one a client emptied (putDueMap),
// else a new one. Every client of a fleet warms its thousands of clusters once, for a few
// hundred milliseconds: one map of a few ten KB made and cleared per client, where most of
// the cost of making one is clearing it.
func (in *Interner) dueMap(n int) map[string]due {
	if in != nil {
		if v := in.dues.Get(); v != nil {
			return v.(map[string]due)
		}
	}
	return make(map[string]due, n)
}

// putDueMap gives back an empty warming map from dueMap.
func (in *Interner) putDueMap(m map[string]due) {
	if in == nil {
		return
	}
	clear(m) // its deleted slots
	in.dues.Put(m)
}

// maxSecretLists bounds Interner.secretLists: a mesh names a few lists, one per distinct set
// of credentials; past the bound, lists are not shared (and cost hasSecrets a comparison).
const maxSecretLists = 1024

// lookup returns the table's resource with key k and bytes raw, nil when none (or in is nil).
func (in *Interner) lookup(k internKey, raw []byte) *decoded {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.m[k]; ok {
		if d := wp.Value(); d != nil && bytes.Equal(d.raw, raw) {
			return d
		}
	}
	return nil
}

// evict drops the slot of a collected resource, unless the slot was reused meanwhile.
func (in *Interner) evict(k internKey) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.m[k]; ok && wp.Value() == nil {
		delete(in.m, k)
	}
}

func decodeNew(t rtype, mode checkMode, hash uint64, name string, keep, raw []byte) (*decoded, error) {
	msg, refs, err := decode(t, raw, mode)
	if err != nil {
		return nil, err
	}
	d := &decoded{name: name, hash: hash, raw: keep, msg: msg, refs: refs, size: uint32(len(raw))}
	d.fetchTimeout, d.hasFetch = fetchTimeoutOf(msg)
	if cla, ok := msg.(*endpointv3.ClusterLoadAssignment); ok && mode == checkEnvoy {
		d.heavy = validate.HashWeightsOverflow(cla)
	}
	if t.wildcard() {
		var refs secretRefs
		if err := refs.collect(msg); err != nil && mode == checkEnvoy {
			return nil, err
		}
		d.secrets, d.secretWaits = refs.result()
		d.secretClusters = secretClusters(d.secrets)
	}
	return d, nil
}

// secretClusters returns the bootstrap clusters, other than the control plane's, that refs name
// as config sources (unique). Not inlined: decodeNew's frame is on a fleet's deepest stacks
// (the decoding below it), whose size is part of every client's memory.
//
//go:noinline
func secretClusters(refs []secretRef) []string {
	var cs []string
	for _, r := range refs {
		if r.kind == srcCluster && !r.overADS() && !slices.Contains(cs, r.arg) {
			cs = append(cs, r.arg)
		}
	}
	return cs
}
