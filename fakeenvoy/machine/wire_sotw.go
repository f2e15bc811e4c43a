package machine

import (
	"fmt"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xdslab/xdslab/fakeenvoy/validate"
	"github.com/xdslab/xdslab/probe"
)

// sotwWire is Envoy's state-of-the-world protocol (StreamAggregatedResources): CDS and LDS are
// wildcard and every response of them is the whole set; EDS, RDS and SDS are named, every
// request restating the whole list; an ACK carries the accepted version_info, a NACK the
// previous one.
type sotwWire struct{}

func (sotwWire) first(m *Machine, now time.Time) { m.firstEnvoy(now) }

func (sotwWire) restate(m *Machine, s *Step, t rtype) { s.Sotw = append(s.Sotw, m.sotwReq(s, t, nil)) }

// resubscribe sends the whole list, even unchanged (Envoy's legacy mux follows every CDS or
// LDS change with its EDS or RDS request); nothing for a type never subscribed that stays
// empty.
func (sotwWire) resubscribe(m *Machine, s *Step, t rtype, names []string) {
	ts := &m.types[t]
	if len(names) == 0 && !ts.subscribed {
		return
	}
	unsub := removedSorted(ts.names, names)
	m.setNames(t, names, unsub)
	s.Sotw = append(s.Sotw, m.sotwReq(s, t, nil))
}

// ack goes after the requests the response caused (the legacy mux sends the EDS or RDS request
// first).
func (sotwWire) ack(m *Machine, s *Step, u *update) {
	if u.unwatched == ackUnwatched {
		// Envoy with no watch for the type: an empty response is ACKed with its version, one
		// with resources is answered with the old version and the new nonce, no error_detail.
		req := s.request()
		*req = discoveryv3.DiscoveryRequest{TypeUrl: u.typeURL, ResponseNonce: u.nonce, Node: m.attachNode()}
		if t, ok := typeOf(u.typeURL); ok {
			req.VersionInfo = m.types[t].version
		} else if len(u.items) == 0 {
			req.VersionInfo = u.version
		}
		s.Sotw = append(s.Sotw, req)
		return
	}
	var nack *status.Status
	if s.Info.Nacked {
		nack = m.nackStatus(s.Info.Error)
	}
	s.Sotw = append(s.Sotw, m.sotwReq(s, u.t, nack))
}

func (sotwWire) named(t rtype) bool { return !t.wildcard() }

func (sotwWire) dependent(t rtype) (rtype, bool) { return envoyDependent(t) }

func (sotwWire) owed(m *Machine, t rtype) bool { return owedSotw(m, t) }

// sotwReq is t's request with the client's last accepted version and latest nonce, for s to
// send next (see Step.request).
func (m *Machine) sotwReq(s *Step, t rtype, nack *status.Status) *discoveryv3.DiscoveryRequest {
	ts := &m.types[t]
	r := s.request()
	*r = discoveryv3.DiscoveryRequest{
		VersionInfo:   ts.version,
		TypeUrl:       t.url(),
		ResponseNonce: ts.nonce,
		ErrorDetail:   nack,
		Node:          m.attachNode(),
	}
	if m.wire.named(t) {
		r.ResourceNames = ts.names
	}
	return r
}

// OnSotw handles one SotW DiscoveryResponse received at recv.
func (m *Machine) OnSotw(r *discoveryv3.DiscoveryResponse, recv time.Time) Step {
	res := make([]item, len(r.GetResources()))
	for i, a := range r.GetResources() {
		res[i] = item{typeURL: a.GetTypeUrl(), size: len(a.GetValue()), raw: a.GetValue()}
		res[i].name, res[i].nameOK = readName(a.GetValue())
	}
	return m.onSotwItems(r, res, recv)
}

// Resources are the resources of a SotW response as a Codec read them from the transport's
// buffer (Codec.LastRead), for Machine.OnSotwRead.
type Resources struct {
	items []item
	// run is the codec's memo run whose items items are (nil: read from the bytes), shared by
	// every client that received it. Its names are distinct when run.distinct, so the machine
	// need not find duplicates or what a full response lacks with maps of its own. (Resources
	// travels by value on every client's parked stacks: keep it small.)
	run *respEntry
}

// OnSotwRead handles a SotW response received at recv whose resources the codec read (r's own
// are ignored). res is read-only (its items may be a memo run's, which other clients share),
// and nothing of it is kept once it returns.
func (m *Machine) OnSotwRead(r *discoveryv3.DiscoveryResponse, res Resources, recv time.Time) Step {
	return m.onSotwItemsOf(r, res.items, res.run, recv)
}

// onSotwItems handles a SotW response received at recv whose resources are res (r's own are
// ignored). It owns res.
func (m *Machine) onSotwItems(r *discoveryv3.DiscoveryResponse, res []item, recv time.Time) Step {
	return m.onSotwItemsOf(r, res, nil, recv)
}

// OnSotwReadTo is OnSotwRead into the caller's step s, which it resets first: the list of
// requests s held, and those requests, are reused for this response's (see Step.request), so
// the caller must be done with them (sent them). An owner that handles one step at a time
// passes the same Step for every response and saves the step's, its list's and its ACK's
// allocations. Nothing else of s is reused: Info (its Touched list included) is new.
func (m *Machine) OnSotwReadTo(s *Step, r *discoveryv3.DiscoveryResponse, res Resources, recv time.Time) {
	s.reset()
	m.onSotwItemsTo(s, r, res.items, res.run, recv)
}

// onSotwItemsOf is onSotwItems with the codec's memo run the items are (nil: none; see
// Resources.run).
func (m *Machine) onSotwItemsOf(r *discoveryv3.DiscoveryResponse, res []item, run *respEntry, recv time.Time) Step {
	var s Step
	m.onSotwItemsTo(&s, r, res, run, recv)
	return s
}

// onSotwItemsTo is onSotwItemsOf into s (a zero Step, or one reset for reuse). The update is
// the machine's scratch (m.upd), cleared when done: the wire adapters take it through an
// interface, where a local one would be moved to the heap.
func (m *Machine) onSotwItemsTo(s *Step, r *discoveryv3.DiscoveryResponse, res []item, run *respEntry, recv time.Time) {
	m.seq++
	m.streamResp++
	s.Response = true
	u := &m.upd
	*u = m.sotwUpdate(s, r, res)
	if run != nil && len(u.items) == len(res) {
		u.run, u.distinct = run, run.distinct
	}
	s.Info.Recv = recv
	m.handle(s, u, recv)
	*u = update{}
}

// sotwUpdate reads a SotW response whose resources are res into an update, and fills s.Info
// with what the response is.
func (m *Machine) sotwUpdate(s *Step, r *discoveryv3.DiscoveryResponse, res []item) update {
	s.Info = probe.ResponseInfo{Seq: m.seq, TypeURL: r.GetTypeUrl(), Version: r.GetVersionInfo(), Nonce: r.GetNonce(), Resources: len(res)}
	for i := range res {
		s.Info.Bytes += res[i].size
	}
	u := update{typeURL: r.GetTypeUrl(), version: r.GetVersionInfo(), nonce: r.GetNonce(), items: res}
	t, ok := typeOf(r.GetTypeUrl())
	if ok {
		m.types[t].nonce = r.GetNonce()
	}
	if !ok || !m.types[t].subscribed {
		u.unwatched = ackUnwatched
		if ok && len(res) == 0 {
			m.types[t].version = r.GetVersionInfo() // an empty response is accepted (see ack)
		}
		return u
	}
	u.t = t
	// A named CDS or LDS resource left out is gone too (grpc-go).
	u.full = t.wildcard()
	for i := range res {
		w := &res[i]
		if w.typeURL != r.GetTypeUrl() {
			u.err = fmt.Errorf("resource type %s does not match the response type %s", w.typeURL, r.GetTypeUrl())
		} else if !w.nameOK {
			u.err = fmt.Errorf("%s resource %d does not decode", validate.ShortType(r.GetTypeUrl()), i)
		}
		if u.err != nil {
			u.items = res[:i]
			break
		}
	}
	return u
}
