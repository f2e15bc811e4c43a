package machine

import (
	"fmt"
	"hash/maphash"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdslab/xdslab/fakeenvoy/validate"
)

// What Envoy rejects (policy.Nack.Realistic). Two stages, as in Envoy:
//
//   - decoding (decodeErr): a resource whose bytes do not decode or that fails its own PGV
//     constraints (validate.Top) fails the whole response before anything of it is applied
//     (GrpcMuxImpl::onDiscoveryResponse, WatchMap::onConfigUpdate; in SotW even a resource
//     the client does not watch, sotwDecodeErr); so does a Delta response
//     naming a resource twice or both adding and removing a name (DeltaSubscriptionState), or
//     a SotW EDS, RDS or SDS response naming one twice;
//   - building one resource: what its Anys pack (validate.Anys), package validate's Cluster,
//     Listener and RouteConfig rules (an LB policy the cluster type cannot have, an EDS
//     cluster without eds_cluster_config, a LOGICAL_DNS cluster without exactly one endpoint,
//     ring sizes, a listener without address or filter chains, filters out of terminal
//     order, a domain in two virtual hosts, a regex RE2 does not compile; an assignment whose
//     host weights overflow the ring hash or Maglev cluster using it), the SDS sources it
//     cannot reach (sds.go), a listener binding the address of another listener of the
//     resulting set, two filter chains of one listener with the same match, a later copy of a
//     name a SotW CDS or LDS response repeats ("duplicate cluster X found": the first copy is applied). CDS and
//     LDS apply their other resources and NACK the response (CdsApiHelper and LdsApiImpl catch
//     each resource's error); EDS, RDS and SDS apply nothing of a NACKed response.
//
// grpc-go's rules are validate.GRPC's. The scripted rejections of a policy.Nack (every Nth
// response, a probability, a name pattern) come on top.

// envoyResponseErr reports what makes Envoy reject a whole response of type t.
func envoyResponseErr(t rtype, items []item, removed []string) error {
	seen := make(map[string]struct{}, len(items))
	for _, it := range items {
		if _, dup := seen[it.name]; dup {
			return fmt.Errorf("duplicate %s %q in one response", t.kind(), it.name)
		}
		seen[it.name] = struct{}{}
	}
	for _, name := range removed {
		if _, both := seen[name]; both {
			return fmt.Errorf("%s %q is both added and removed", t.kind(), name)
		}
	}
	return nil
}

// policyErr is the scripted rejection of the current response (m.seq) by the NACK policy's
// every-N and probability rules; the probability is drawn for every response.
func (m *Machine) policyErr() error {
	var err error
	if m.nack.EveryN > 0 && m.seq%uint64(m.nack.EveryN) == 0 {
		err = fmt.Errorf("rejected by policy: every %d responses", m.nack.EveryN)
	}
	if m.rng != nil && m.rng.Float64() < m.nack.Probability && err == nil {
		err = fmt.Errorf("rejected by policy: probability %g", m.nack.Probability)
	}
	return err
}

// hashClusterOf reports whether a cluster held balances the hosts of assignment name with a
// hash load balancer that rejects an overflow of their weights (validate.HashWeightsMatter).
// It runs only for assignments that overflow (rare): it looks at every cluster held.
func (m *Machine) hashClusterOf(name string) bool {
	for _, e := range m.types[tCDS].res {
		if refs := e.refs(); len(refs) > 0 && refs[0] == name && validate.HashWeightsMatter(e.d.msg.(*clusterv3.Cluster)) {
			return true
		}
	}
	return false
}

// sotwDecodeErr is the decodeErr, if any, of a resource of type t that the client does not
// watch: Envoy's SotW mux (GrpcMuxImpl::onDiscoveryResponse) decodes every resource of a
// response before it hands the watched ones to their watches (its Delta mux decodes only those).
func (m *Machine) sotwDecodeErr(t rtype, it *item) error {
	hash := it.hash
	if !it.hashed {
		hash = maphash.Bytes(hashSeed, it.raw)
	}
	_, err := m.interner.decode(t, checkEnvoy, hash, it.name, it.raw)
	if de, ok := err.(decodeErr); ok {
		return de
	}
	return nil
}

// appliesPartly reports whether the valid resources of a NACKed response of type t are applied:
// Envoy's CDS and LDS, every type of grpc-go.
func (m *Machine) appliesPartly(t rtype) bool { return t.wildcard() || m.grpc }

// addressConflicts marks new or changed listeners (st, parallel to items) that take an
// address (their own or an additional one, validate.ListenerAddresses) of another listener of
// the resulting set (Envoy: "has duplicate address ... as existing listener"). full: the
// response is the whole set (else held listeners it does not touch keep their addresses).
//
// As in Envoy, a held listener's addresses stay taken while a response changes it (its old copy
// serves until the new one has warmed, and for good when the change is refused), and a changed
// listener is held against its own old copy when its addresses differ from the old copy's and
// its socket options do not (Envoy then moves it to new sockets, which may not take the old
// ones' addresses). A port-0 address is compared only with listeners that do not bind.
func (m *Machine) addressConflicts(items []item, st []itemState, removed []string, full bool) []string {
	owner := make(map[string]string)
	inResp := make(map[string]struct{}, len(items))
	take := func(name string, l *listenerv3.Listener) {
		binds := validate.Binds(l)
		for _, a := range validate.ListenerAddresses(l) {
			if _, ok := owner[a.Key]; !ok && !(a.PortZero && binds) {
				owner[a.Key] = name
			}
		}
	}
	// Held listeners keep their addresses first: those in the response (changed or not) and,
	// in Delta, those it does not touch.
	for i := range items {
		it := &items[i]
		inResp[it.name] = struct{}{}
		if e, ok := m.types[tLDS].res[it.name]; ok {
			take(it.name, e.d.msg.(*listenerv3.Listener))
		}
	}
	if !full {
		for name, e := range m.types[tLDS].res {
			if _, ok := inResp[name]; !ok && !slices.Contains(removed, name) {
				take(name, e.d.msg.(*listenerv3.Listener))
			}
		}
	}
	var errs []string
	for i := range items {
		it, is := &items[i], &st[i]
		if is.err != nil || is.d == nil {
			continue
		}
		l := is.d.msg.(*listenerv3.Listener)
		addrs := validate.ListenerAddresses(l)
		self := false // held against its own old copy
		if e, ok := m.types[tLDS].res[it.name]; ok {
			old := e.d.msg.(*listenerv3.Listener)
			self = !sameAddresses(validate.ListenerAddresses(old), addrs) && validate.SameSockets(old, l)
		}
		for _, a := range addrs {
			if other, ok := owner[a.Key]; ok && (other != it.name || self) {
				is.err = fmt.Errorf("duplicate address %s as listener %s", a.Key, other)
				errs = append(errs, fmt.Sprintf("listener %s: %v", it.name, is.err))
				break
			}
		}
		if is.err == nil {
			take(it.name, l)
		}
	}
	return errs
}

// sameAddresses reports whether two address lists hold the same addresses, in any order.
func sameAddresses(a, b []validate.ListenerAddress) bool {
	if len(a) != len(b) {
		return false
	}
	ka := make([]string, len(a))
	kb := make([]string, len(b))
	for i := range a {
		ka[i], kb[i] = a[i].Key, b[i].Key
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}
