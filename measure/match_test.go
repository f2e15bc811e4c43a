package measure

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/probe"
)

// mtClient is a synthetic client for driving the matcher without a stream.
type mtClient struct {
	index     int
	group, ns string
	subs      map[string]bool // typeURL + "/" + name
	view      mtView
	// warming maps typeURL/name of a resource not yet in effect to the copy in effect
	// (nil: none).
	warming  map[string]proto.Message
	unsynced bool // holds no accepted state yet (a fresh process)
	named    bool // NamedOnly (a proxyless gRPC client)
	ptype    string
	seq      uint64
	// delta: responses are Delta; nackNext: the next response is rejected whole (nothing
	// applied); got: the types a response arrived for since the process started.
	delta, nackNext bool
	got             map[string]bool
}

// info is what the client's hooks pass: the synthetic client is its own state.
func (c *mtClient) info() probe.ClientInfo {
	return probe.ClientInfo{Index: c.index, Group: c.group, Namespace: c.ns, ProxyType: c.ptype, NamedOnly: c.named, State: c}
}

func (c *mtClient) Subscribed(typeURL, name string) bool {
	return c.subs[typeURL+"/"+name]
}
func (c *mtClient) Resource(typeURL, name string) proto.Message {
	return c.view.Resource(typeURL, name)
}
func (c *mtClient) Effective(typeURL, name string) proto.Message {
	if prev, ok := c.warming[typeURL+"/"+name]; ok {
		return prev
	}
	return c.view.Resource(typeURL, name)
}
func (c *mtClient) Synced(string) bool { return !c.unsynced }

// mtView is a client's accepted resources by typeURL/name.
type mtView map[string]proto.Message

func (v mtView) Resource(typeURL, name string) proto.Message { return v[typeURL+"/"+name] }

func mtCLA(name string, addrs ...string) *endpointv3.ClusterLoadAssignment {
	c := &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{}}}
	for _, a := range addrs {
		c.Endpoints[0].LbEndpoints = append(c.Endpoints[0].LbEndpoints, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: a, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80},
				}}},
			}},
		})
	}
	return c
}

// push applies a response to the synthetic client and calls the matcher's hooks in the order
// a real client does: Response, Applied, AckSent. A nil message in set removes the resource.
func (c *mtClient) push(m *Matcher, typeURL string, recv, ack time.Time, set map[string]proto.Message) probe.ResponseInfo {
	c.seq++
	r := probe.ResponseInfo{Seq: c.seq, TypeURL: typeURL, Recv: recv, Delta: c.delta, First: !c.got[typeURL]}
	if c.got == nil {
		c.got = map[string]bool{}
	}
	c.got[typeURL] = true
	if c.view == nil {
		c.view = mtView{}
	}
	if c.nackNext { // rejected whole: nothing applied, the type still unsynced
		c.nackNext = false
		r.Nacked, r.Fresh = true, c.unsynced
		m.Response(c.info(), r)
		m.Applied(c.info(), r, c)
		if !ack.IsZero() {
			m.AckSent(c.info(), r, ack)
		}
		return r
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := typeURL + "/" + name
		prev := c.view[k]
		msg := set[name]
		if proto.Equal(prev, msg) {
			continue // identical: not a change
		}
		r.Touched = append(r.Touched, probe.Touched{Name: name, Prev: prev})
		if msg == nil {
			delete(c.view, k)
		} else {
			c.view[k] = msg
		}
	}
	r.Fresh = c.unsynced
	c.unsynced = false
	m.Response(c.info(), r)
	m.Applied(c.info(), r, c)
	if !ack.IsZero() {
		m.AckSent(c.info(), r, ack)
	}
	return r
}

func present(cluster, addr string) probe.Predicate {
	return probe.Predicate{Op: probe.EndpointPresent, Resource: cluster, Address: addr, Port: 80}
}

func count(cluster string, n int) probe.Predicate {
	return probe.Predicate{Op: probe.EndpointCount, Resource: cluster, Count: n}
}

func absent(cluster, addr string) probe.Predicate {
	return probe.Predicate{Op: probe.EndpointAbsent, Resource: cluster, Address: addr, Port: 80}
}

var mtBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return mtBase.Add(time.Duration(ms) * time.Millisecond) }

// mtNow is the matcher's clock in these tests: every expectation is registered at mtBase, before
// the synthetic responses.
func mtNow() time.Time { return mtBase }

func TestMatcherLatencyIsRecvMinusT0(t *testing.T) {
	m := NewMatcher(MatcherConfig{KeepLatencies: true, Now: mtNow})
	a := &mtClient{index: 0, group: "g", ns: "ns-0"}
	b := &mtClient{index: 1, group: "g", ns: "ns-0"}
	m.Track(0, "g", "ns-0")
	m.Track(1, "g", "ns-0")
	if _, err := m.Expect(probe.Expectation{EventID: 7, Kind: "endpoint-add", T0: at(100),
		All: []probe.Predicate{present("c1", "10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	// An unrelated CDS response does not count even though nothing is decided yet; an EDS
	// response without the endpoint does not either.
	a.push(m, resource.ClusterType, at(105), at(106), nil)
	a.push(m, resource.EndpointType, at(110), at(111), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.9")})
	a.push(m, resource.EndpointType, at(150), at(175), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	b.push(m, resource.EndpointType, at(130), at(131), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	// A later response that still satisfies it does not count twice.
	a.push(m, resource.EndpointType, at(300), at(301), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1", "10.0.0.2")})

	res := m.Results()
	if len(res.Events) != 1 {
		t.Fatalf("events = %d, want 1", len(res.Events))
	}
	e := res.Events[0]
	want := EventResult{EventID: 7, Kind: "endpoint-add", T0: at(100), Reached: 2, Observed: 2, Acked: 2,
		Convergence: 50 * time.Millisecond, AckConvergence: 75 * time.Millisecond,
		MinLatency: 30 * time.Millisecond, MeanLatency: 40 * time.Millisecond,
		Latencies: []time.Duration{30 * time.Millisecond, 50 * time.Millisecond}}
	if !mtEqual(e, want) {
		t.Errorf("event result\n got %+v\nwant %+v", e, want)
	}
	h := res.PushLatency["endpoint-add"]
	if h == nil || h.TotalCount() != 2 || h.Max() < 50000 || h.Max() > 50100 {
		t.Errorf("push latency histogram: %v", h)
	}
	if res.AckLatencyAll.TotalCount() != 2 {
		t.Errorf("ack latencies = %d, want 2", res.AckLatencyAll.TotalCount())
	}
	if res.Convergence.TotalCount() != 1 {
		t.Errorf("convergence samples = %d, want 1", res.Convergence.TotalCount())
	}
}

func mtEqual(a, b EventResult) bool {
	if len(a.Latencies) != len(b.Latencies) {
		return false
	}
	for i := range a.Latencies {
		if a.Latencies[i] != b.Latencies[i] {
			return false
		}
	}
	a.Latencies, b.Latencies = nil, nil
	return a.EventID == b.EventID && a.Kind == b.Kind && a.T0.Equal(b.T0) && a.Reached == b.Reached &&
		a.Observed == b.Observed && a.Superseded == b.Superseded && a.Missed == b.Missed &&
		a.Unresolved == b.Unresolved && a.Acked == b.Acked && a.EarlyReceives == b.EarlyReceives &&
		a.AlreadyHeld == b.AlreadyHeld && a.Censored == b.Censored &&
		a.Convergence == b.Convergence && a.AckConvergence == b.AckConvergence &&
		a.MinLatency == b.MinLatency && a.MeanLatency == b.MeanLatency
}

// addThenRemove tracks a, b and c, registers an endpoint add (t0 0 ms) and its removal (t0
// 10 ms), and scripts: a sees the add, then b claims the add (a hook) but the server coalesces
// add+remove, so b holds the remove's state when it claims it and never was in the add's; a
// and b then see the removal; c never hears anything.
func addThenRemove(t *testing.T, m *Matcher, a, b, c *mtClient) {
	t.Helper()
	for _, cl := range []*mtClient{a, b, c} {
		m.Track(cl.index, cl.group, cl.ns)
		cl.push(m, resource.EndpointType, at(0), time.Time{}, map[string]proto.Message{"c1": mtCLA("c1")})
	}
	add := probe.Expectation{EventID: 1, Kind: "add", T0: at(0), All: []probe.Predicate{present("c1", "10.0.0.1")}}
	del := probe.Expectation{EventID: 2, Kind: "remove", T0: at(10), All: []probe.Predicate{absent("c1", "10.0.0.1")}}
	if _, err := m.Expect(add); err != nil {
		t.Fatal(err)
	}
	a.push(m, resource.EndpointType, at(5), time.Time{}, map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	b.push(m, resource.ClusterType, at(6), time.Time{}, nil)
	if _, err := m.Expect(del); err != nil {
		t.Fatal(err)
	}
	a.push(m, resource.EndpointType, at(30), time.Time{}, map[string]proto.Message{"c1": mtCLA("c1")})
	b.push(m, resource.EndpointType, at(40), time.Time{}, map[string]proto.Message{"c1": mtCLA("c1")})
}

func TestMatcherSupersededAndMissed(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	a := &mtClient{index: 0, group: "g", ns: "default"}
	b := &mtClient{index: 1, group: "g", ns: "default"}
	c := &mtClient{index: 2, group: "g", ns: "default"} // never hears anything
	addThenRemove(t, m, a, b, c)

	if n := m.Outstanding(); n != 2 {
		t.Errorf("outstanding = %d, want 2 (client 2 never saw either event)", n)
	}
	res := m.Results()
	got := []EventResult{res.Events[0], res.Events[1]}
	want := []EventResult{
		{EventID: 1, Kind: "add", T0: at(0), Reached: 3, Observed: 1, Superseded: 1, Missed: 1, Censored: true,
			Convergence: 5 * time.Millisecond, MinLatency: 5 * time.Millisecond, MeanLatency: 5 * time.Millisecond},
		{EventID: 2, Kind: "remove", T0: at(10), Reached: 3, Observed: 1, AlreadyHeld: 1, Missed: 1, Censored: true,
			Convergence: 20 * time.Millisecond, MinLatency: 20 * time.Millisecond, MeanLatency: 20 * time.Millisecond},
	}
	for i := range want {
		if !mtEqual(got[i], want[i]) {
			t.Errorf("event %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	for i, e := range got {
		if !slices.Equal(e.MissedBy, []int{2}) {
			t.Errorf("event %d missed by %v, want client 2", i, e.MissedBy)
		}
	}
	if res.Observed != 2 || res.Superseded != 1 || res.Missed != 2 || res.AlreadyHeld != 1 {
		t.Errorf("totals observed/held/superseded/missed = %d/%d/%d/%d, want 2/1/1/2", res.Observed, res.AlreadyHeld, res.Superseded, res.Missed)
	}
	if res.Convergence.TotalCount() != 2 {
		t.Errorf("convergence samples = %d, want 2: an event some client missed is in it (censored)", res.Convergence.TotalCount())
	}
}

// TestMatcherMissedByNamesLowest: an event missed by many clients names the lowest indices,
// whatever order the shards hold them in.
func TestMatcherMissedByNamesLowest(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow, Shards: 3})
	for _, i := range []int{9, 3, 7, 1, 5, 11} {
		m.Track(i, "g", "default")
	}
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "add", T0: at(0), All: []probe.Predicate{present("c1", "10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	e := m.Results().Events[0]
	if e.Missed != 6 || !slices.Equal(e.MissedBy, []int{1, 3, 5}) {
		t.Errorf("missed %d by %v, want 6 by [1 3 5]", e.Missed, e.MissedBy)
	}
}

// TestMatcherProbesByGroup: the observation classes split by client group sum to the totals,
// resolved ones (observed, superseded, already held) and those still outstanding (missed)
// alike (bench's TestFleetMetricsProbesByGroup checks their summary rows).
func TestMatcherProbesByGroup(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	a := &mtClient{index: 0, group: "sotw", ns: "default"}
	b := &mtClient{index: 1, group: "delta", ns: "default"}
	c := &mtClient{index: 2, group: "delta", ns: "default"} // never hears anything
	addThenRemove(t, m, a, b, c)

	res := m.Results()
	want := map[string]ProbeCounts{
		"sotw":  {Observed: 2},
		"delta": {Superseded: 1, AlreadyHeld: 1, Missed: 2},
	}
	if len(res.ProbesByGroup) != len(want) {
		t.Errorf("ProbesByGroup = %+v, want %+v", res.ProbesByGroup, want)
	}
	var sum ProbeCounts
	for g, w := range want {
		if got := res.ProbesByGroup[g]; got != w {
			t.Errorf("group %s: %+v, want %+v", g, got, w)
		}
		sum = sum.plus(res.ProbesByGroup[g])
	}
	if tot := (ProbeCounts{res.Observed, res.AlreadyHeld, res.Superseded, res.Missed, res.Unresolved}); sum != tot {
		t.Errorf("groups sum to %+v, totals are %+v", sum, tot)
	}
}

// mtWant is one event's expected classification.
type mtWant struct {
	observed, held, superseded, missed int
	push, recv                         time.Duration // largest push (in effect) / receive latency
	censored                           bool
}

func eds(set ...any) map[string]proto.Message {
	out := map[string]proto.Message{}
	for i := 0; i < len(set); i += 2 {
		out[set[i].(string)] = set[i+1].(proto.Message)
	}
	return out
}

// mtRoutes is a route configuration with one virtual host per host, routing to its cluster
// (host, cluster pairs).
func mtRoutes(pairs ...string) *routev3.RouteConfiguration {
	rc := &routev3.RouteConfiguration{Name: "http.80"}
	for i := 0; i < len(pairs); i += 2 {
		rc.VirtualHosts = append(rc.VirtualHosts, &routev3.VirtualHost{Name: pairs[i], Domains: []string{pairs[i]},
			Routes: []*routev3.Route{{Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: pairs[i+1]}}}}}})
	}
	return rc
}

func lbCluster(name string, p clusterv3.Cluster_LbPolicy) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, LbPolicy: p}
}

// TestMatcherClasses drives one client through scripted responses and checks how each event
// is classified (issue 11: superseded only when the client never saw the state, no false
// match, already-held events get no latency, in effect after warming).
func TestMatcherClasses(t *testing.T) {
	cds, edsT := resource.ClusterType, resource.EndpointType
	lb := func(v string) probe.Predicate {
		return probe.Predicate{Op: probe.ClusterLbPolicy, Resource: "c1", Value: v}
	}
	// A restore, then a zone failure whose sampled predicates read another cluster: its
	// change of the restored cluster is in Rest.
	restoreThenFailure := []probe.Expectation{
		{EventID: 1, Kind: "flap-restore", T0: at(0), All: []probe.Predicate{count("c1", 2), present("c1", "10.0.0.2")}},
		{EventID: 2, Kind: "zone-failure", T0: at(70), All: []probe.Predicate{count("c2", 1), absent("c2", "10.0.0.5")},
			Rest: []probe.Predicate{count("c1", 1), absent("c1", "10.0.0.1")}},
	}
	// Gateway re-bindings: hosts h-a and h-b to c1 and c2, then h-b to c3 420 ms later.
	rdsT := resource.RouteType
	route := func(host, cluster string) probe.Predicate {
		return probe.Predicate{Op: probe.RouteTo, Resource: "http.80", Host: host, Cluster: cluster}
	}
	rebindTwice := []probe.Expectation{
		{EventID: 78, Kind: "config-change", T0: at(0), All: []probe.Predicate{route("h-a", "c1"), route("h-b", "c2")}},
		{EventID: 87, Kind: "config-change", T0: at(420), All: []probe.Predicate{route("h-b", "c3")}},
	}
	// An endpoint restored, then its service deleted (service-delete's predicate: its cluster
	// absent) 85 ms later.
	const svcA, svcB = "outbound|80||a", "outbound|80||b"
	restoreThenDelete := []probe.Expectation{
		{EventID: 1, Kind: "endpoint-flap", T0: at(0), All: []probe.Predicate{count(svcA, 2), present(svcA, "10.0.0.2")}},
		{EventID: 2, Kind: "service-delete", T0: at(85), All: []probe.Predicate{{Op: probe.ClusterAbsent, Resource: svcA}}},
	}
	restoreThenFailureInitial := eds("c1", mtCLA("c1", "10.0.0.1"), "c2", mtCLA("c2", "10.0.0.5", "10.0.0.6"))
	cases := []struct {
		name   string
		events []probe.Expectation
		// script runs after the initial state is pushed; expect(i) registers events[i].
		initial map[string]proto.Message
		script  func(m *Matcher, c *mtClient, expect func(int))
		want    []mtWant
	}{{
		name: "a slow removal arriving after its restore was registered is observed",
		events: []probe.Expectation{
			{EventID: 1, Kind: "flap-remove", T0: at(0), All: []probe.Predicate{absent("c1", "10.0.0.1")}},
			{EventID: 2, Kind: "flap-restore", T0: at(1000), All: []probe.Predicate{present("c1", "10.0.0.1")}},
		},
		initial: eds("c1", mtCLA("c1", "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			expect(0)
			expect(1)
			c.push(m, edsT, at(1500), time.Time{}, eds("c1", mtCLA("c1")))
			c.push(m, edsT, at(2100), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1")))
		},
		want: []mtWant{{observed: 1, push: 1500 * time.Millisecond, recv: 1500 * time.Millisecond},
			{observed: 1, push: 1100 * time.Millisecond, recv: 1100 * time.Millisecond}},
	}, {
		// A restore, then a zone failure over two clusters, then a removal on the second before
		// the client saw the failure: one response shows the end state. The failure never holds
		// as a whole (the removal moved the second cluster on), but its count of the first holds:
		// the client is past the restore's state there, so the restore is superseded, not missed.
		name: "a state passed on its subject by a later event that never holds whole is superseded",
		events: []probe.Expectation{
			{EventID: 1, Kind: "flap-restore", T0: at(0), All: []probe.Predicate{count("c1", 2), present("c1", "10.0.0.2")}},
			{EventID: 2, Kind: "zone-failure", T0: at(10), All: []probe.Predicate{count("c1", 1), absent("c1", "10.0.0.1"), count("c2", 1), absent("c2", "10.0.0.5")}},
			{EventID: 3, Kind: "flap-remove", T0: at(20), All: []probe.Predicate{count("c2", 0), absent("c2", "10.0.0.6")}},
		},
		initial: eds("c1", mtCLA("c1", "10.0.0.1"), "c2", mtCLA("c2", "10.0.0.5", "10.0.0.6")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			expect(0)
			expect(1)
			expect(2)
			c.push(m, edsT, at(500), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.2"), "c2", mtCLA("c2")))
		},
		// The restore and the failure reach the client with the response that passes them: their
		// push latency runs to it.
		want: []mtWant{{superseded: 1, push: 500 * time.Millisecond}, {superseded: 1, push: 490 * time.Millisecond}, {observed: 1, push: 480 * time.Millisecond, recv: 480 * time.Millisecond}},
	}, {
		// A restore, then 70 ms later a zone failure whose sampled predicates read another
		// cluster: its change of the restored cluster is in Rest. One response shows both. The
		// restore's state was never there to see: it is superseded, not missed.
		name:    "a state a later event changed beyond its sampled predicates is superseded",
		events:  restoreThenFailure,
		initial: restoreThenFailureInitial,
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			expect(0)
			expect(1)
			c.push(m, edsT, at(300), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.2"), "c2", mtCLA("c2", "10.0.0.6")))
		},
		want: []mtWant{{superseded: 1, push: 300 * time.Millisecond}, {observed: 1, push: 230 * time.Millisecond, recv: 230 * time.Millisecond}},
	}, {
		// The same two events, but the response carries the cluster as it was before the restore
		// (a push computed before it): the failure's Rest does not hold there, so the client is
		// not past the restore, and it is missed when the client never gets it.
		name:    "a state older than the restore does not pass it through a later event's Rest",
		events:  restoreThenFailure,
		initial: restoreThenFailureInitial,
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			expect(0)
			expect(1)
			c.push(m, edsT, at(300), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1"), "c2", mtCLA("c2", "10.0.0.6")))
		},
		want: []mtWant{{missed: 1, censored: true}, {observed: 1, push: 230 * time.Millisecond, recv: 230 * time.Millisecond}},
	}, {
		// Four scale changes within a debounce, one push of the last: the first three were held
		// back as long as the last one's push took, and the figures keep it (the worst case
		// must not vanish into "superseded").
		name: "changes a debounce held back keep their latency to the push that passed them",
		events: []probe.Expectation{
			{EventID: 1, Kind: "scale", T0: at(0), All: []probe.Predicate{count("c1", 2)}},
			{EventID: 2, Kind: "scale", T0: at(60), All: []probe.Predicate{count("c1", 3)}},
			{EventID: 3, Kind: "scale", T0: at(120), All: []probe.Predicate{count("c1", 4)}},
			{EventID: 4, Kind: "scale", T0: at(180), All: []probe.Predicate{count("c1", 5)}},
		},
		initial: eds("c1", mtCLA("c1", "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			for i := range 4 {
				expect(i)
			}
			c.push(m, edsT, at(282), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5")))
		},
		want: []mtWant{{superseded: 1, push: 282 * time.Millisecond}, {superseded: 1, push: 222 * time.Millisecond},
			{superseded: 1, push: 162 * time.Millisecond}, {observed: 1, push: 102 * time.Millisecond, recv: 102 * time.Millisecond}},
	}, {
		name: "a merged flap: the restore already holds, the removal is superseded, no latency",
		events: []probe.Expectation{
			{EventID: 1, Kind: "flap-remove", T0: at(0), All: []probe.Predicate{absent("c1", "10.0.0.1")}},
			{EventID: 2, Kind: "flap-restore", T0: at(50), All: []probe.Predicate{present("c1", "10.0.0.1")}},
		},
		initial: eds("c1", mtCLA("c1", "10.0.0.1"), "c2", mtCLA("c2")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			expect(0)
			expect(1)
			// An unrelated cluster's assignment changes 7s later: it observes nothing.
			c.push(m, edsT, at(7050), time.Time{}, eds("c2", mtCLA("c2", "10.0.0.9")))
		},
		want: []mtWant{{superseded: 1}, {held: 1}},
	}, {
		name: "a state brought back by a later event belongs to the later event",
		events: []probe.Expectation{
			{EventID: 1, Kind: "flap-remove", T0: at(0), All: []probe.Predicate{absent("c1", "10.0.0.1")}},
			{EventID: 2, Kind: "flap-restore", T0: at(50), All: []probe.Predicate{present("c1", "10.0.0.1")}},
			{EventID: 3, Kind: "flap-remove", T0: at(40000), All: []probe.Predicate{absent("c1", "10.0.0.1")}},
		},
		initial: eds("c1", mtCLA("c1", "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			expect(0)
			expect(1) // merged with the removal: the client never sees it absent
			m.touch(c.info())
			expect(2)
			c.push(m, edsT, at(40100), time.Time{}, eds("c1", mtCLA("c1")))
		},
		want: []mtWant{{superseded: 1}, {held: 1}, {observed: 1, push: 100 * time.Millisecond, recv: 100 * time.Millisecond}},
	}, {
		name: "only a response touching the subject observes",
		events: []probe.Expectation{
			{EventID: 1, Kind: "endpoint-add", T0: at(0), All: []probe.Predicate{present("c1", "10.0.0.1")}},
		},
		initial: eds("c1", mtCLA("c1"), "c2", mtCLA("c2")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			expect(0)
			c.push(m, edsT, at(100), time.Time{}, eds("c2", mtCLA("c2", "10.0.0.9")))
			c.push(m, edsT, at(200), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1")))
		},
		want: []mtWant{{observed: 1, push: 200 * time.Millisecond, recv: 200 * time.Millisecond}},
	}, {
		name: "a warming cluster is received at CDS and in effect at its assignment",
		events: []probe.Expectation{
			{EventID: 1, Kind: "lb-change", T0: at(0), All: []probe.Predicate{lb("LEAST_REQUEST")}},
		},
		initial: nil,
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, map[string]proto.Message{"c1": lbCluster("c1", clusterv3.Cluster_ROUND_ROBIN)})
			expect(0)
			c.warming = map[string]proto.Message{cds + "/c1": lbCluster("c1", clusterv3.Cluster_ROUND_ROBIN)}
			c.push(m, cds, at(100), time.Time{}, map[string]proto.Message{"c1": lbCluster("c1", clusterv3.Cluster_LEAST_REQUEST)})
			c.warming = nil // the assignment warms it
			c.push(m, edsT, at(300), time.Time{}, nil)
		},
		want: []mtWant{{observed: 1, push: 300 * time.Millisecond, recv: 100 * time.Millisecond}},
	}, {
		name: "a warming timeout brings a received cluster into effect",
		events: []probe.Expectation{
			{EventID: 1, Kind: "lb-change", T0: at(0), All: []probe.Predicate{lb("LEAST_REQUEST")}},
		},
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, map[string]proto.Message{"c1": lbCluster("c1", clusterv3.Cluster_ROUND_ROBIN)})
			expect(0)
			c.warming = map[string]proto.Message{cds + "/c1": lbCluster("c1", clusterv3.Cluster_ROUND_ROBIN)}
			c.push(m, cds, at(100), time.Time{}, map[string]proto.Message{"c1": lbCluster("c1", clusterv3.Cluster_LEAST_REQUEST)})
			c.push(m, edsT, at(200), time.Time{}, eds("c9", mtCLA("c9"))) // still warming
			c.warming = nil
			m.effect(c.info(), at(15100))
		},
		want: []mtWant{{observed: 1, push: 15100 * time.Millisecond, recv: 100 * time.Millisecond}},
	}, {
		name: "received but never in effect is missed",
		events: []probe.Expectation{
			{EventID: 1, Kind: "lb-change", T0: at(0), All: []probe.Predicate{lb("LEAST_REQUEST")}},
		},
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, map[string]proto.Message{"c1": lbCluster("c1", clusterv3.Cluster_ROUND_ROBIN)})
			expect(0)
			c.warming = map[string]proto.Message{cds + "/c1": lbCluster("c1", clusterv3.Cluster_ROUND_ROBIN)}
			c.push(m, cds, at(100), time.Time{}, map[string]proto.Message{"c1": lbCluster("c1", clusterv3.Cluster_LEAST_REQUEST)})
		},
		want: []mtWant{{missed: 1, recv: 100 * time.Millisecond, censored: true}},
	}, {
		name: "a fresh process holds nothing: an absent endpoint is observed, not already held",
		events: []probe.Expectation{
			{EventID: 1, Kind: "endpoint-remove", T0: at(0), All: []probe.Predicate{absent("c1", "10.0.0.1")}},
		},
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.unsynced = true
			expect(0)
			m.touch(c.info()) // Connected after a restart: claims with an empty state
			c.push(m, edsT, at(400), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.2")))
		},
		want: []mtWant{{observed: 1, push: 400 * time.Millisecond, recv: 400 * time.Millisecond}},
	}, {
		name: "a fresh process claiming at its first response is not already held",
		events: []probe.Expectation{
			{EventID: 1, Kind: "endpoint-remove", T0: at(0), All: []probe.Predicate{absent("c1", "10.0.0.1")}},
		},
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.unsynced = true
			expect(0)
			c.push(m, edsT, at(300), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.2")))
		},
		want: []mtWant{{observed: 1, push: 300 * time.Millisecond, recv: 300 * time.Millisecond}},
	}, {
		// An endpoint restored, then its service deleted 85 ms later, inside one debounce: one
		// push removes the cluster. The restore's state was never there to see: the deletion
		// passed it, and it keeps its latency to the response that showed the deletion.
		name:    "a change of a service its deletion passed is superseded",
		events:  restoreThenDelete,
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}))
			expect(0)
			expect(1)
			c.push(m, cds, at(300), time.Time{}, map[string]proto.Message{svcA: nil})
		},
		want: []mtWant{{superseded: 1, push: 300 * time.Millisecond}, {observed: 1, push: 215 * time.Millisecond, recv: 215 * time.Millisecond}},
	}, {
		name:    "a change of a service seen before its deletion is observed",
		events:  restoreThenDelete,
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}))
			expect(0)
			c.push(m, edsT, at(50), time.Time{}, eds(svcA, mtCLA(svcA, "10.0.0.1", "10.0.0.2")))
			expect(1)
			c.push(m, cds, at(300), time.Time{}, map[string]proto.Message{svcA: nil})
		},
		want: []mtWant{{observed: 1, push: 50 * time.Millisecond, recv: 50 * time.Millisecond}, {observed: 1, push: 215 * time.Millisecond, recv: 215 * time.Millisecond}},
	}, {
		// A real miss stays a miss: the deletion never reaches the client, so neither does
		// anything pass the restore.
		name:    "a change of a service whose deletion never came is missed, and so is the deletion",
		events:  restoreThenDelete,
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}))
			expect(0)
			expect(1)
			c.push(m, cds, at(300), time.Time{}, eds(svcB, &clusterv3.Cluster{Name: svcB}))
		},
		want: []mtWant{{missed: 1, censored: true}, {missed: 1, censored: true}},
	}, {
		name: "another service's deletion passes nothing",
		events: []probe.Expectation{
			restoreThenDelete[0],
			{EventID: 2, Kind: "service-delete", T0: at(85), All: []probe.Predicate{{Op: probe.ClusterAbsent, Resource: svcB}}},
		},
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1"), svcB, mtCLA(svcB, "10.0.0.9")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}, svcB, &clusterv3.Cluster{Name: svcB}))
			expect(0)
			expect(1)
			c.push(m, cds, at(300), time.Time{}, map[string]proto.Message{svcB: nil})
		},
		want: []mtWant{{missed: 1, censored: true}, {observed: 1, push: 215 * time.Millisecond, recv: 215 * time.Millisecond}},
	}, {
		// A route change to a subset of the service, then its deletion: the virtual host goes
		// with the service, so the route can never be seen.
		name: "a route change of a service its deletion passed is superseded",
		events: []probe.Expectation{
			{EventID: 1, Kind: "config-change", T0: at(0), All: []probe.Predicate{{Op: probe.RouteTo, Resource: "80", Host: "a", Cluster: "outbound|80|v2|a"}}},
			restoreThenDelete[1],
		},
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}))
			expect(0)
			expect(1)
			c.push(m, cds, at(300), time.Time{}, map[string]proto.Message{svcA: nil})
		},
		want: []mtWant{{superseded: 1, push: 300 * time.Millisecond}, {observed: 1, push: 215 * time.Millisecond, recv: 215 * time.Millisecond}},
	}, {
		// The client restarts (a new process: it holds nothing) after the deletion was
		// registered; its first CDS response is its whole config, without the cluster. That
		// response never names the deleted cluster, yet it shows it absent: the deletion is
		// observed there, and the restore it passed superseded.
		name:    "a deletion a restarted client's first full config shows is observed",
		events:  restoreThenDelete,
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}, svcB, &clusterv3.Cluster{Name: svcB}))
			expect(0)
			expect(1)
			c.view, c.unsynced = mtView{}, true
			c.push(m, cds, at(400), time.Time{}, eds(svcB, &clusterv3.Cluster{Name: svcB}))
		},
		want: []mtWant{{superseded: 1, push: 400 * time.Millisecond}, {observed: 1, push: 315 * time.Millisecond, recv: 315 * time.Millisecond}},
	}, {
		// A restarted client rejects its first CDS response: it holds nothing, but not because
		// the server removed anything. The deletion is not observed there.
		name:    "a rejected first full config observes no deletion",
		events:  restoreThenDelete[1:],
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}, svcB, &clusterv3.Cluster{Name: svcB}))
			expect(0)
			c.view, c.unsynced, c.nackNext, c.got = mtView{}, true, true, nil
			c.push(m, cds, at(400), time.Time{}, eds(svcB, &clusterv3.Cluster{Name: svcB}))
		},
		want: []mtWant{{missed: 1, censored: true}},
	}, {
		// Delta: after a rejected first response the stream goes on with increments; the next
		// one (another cluster's change) is not the whole set and shows nothing absent.
		name:    "a Delta increment after a rejected first response observes no deletion",
		events:  restoreThenDelete[1:],
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}, svcB, &clusterv3.Cluster{Name: svcB}))
			expect(0)
			c.view, c.unsynced, c.nackNext, c.got, c.delta = mtView{}, true, true, nil, true
			c.push(m, cds, at(400), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}))
			c.push(m, cds, at(500), time.Time{}, eds(svcB, &clusterv3.Cluster{Name: svcB, AltStatName: "changed"}))
		},
		want: []mtWant{{missed: 1, censored: true}},
	}, {
		name:    "a deletion a restarted client's first full config lacks is missed",
		events:  restoreThenDelete[1:],
		initial: eds(svcA, mtCLA(svcA, "10.0.0.1")),
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, cds, at(0), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}, svcB, &clusterv3.Cluster{Name: svcB}))
			expect(0)
			c.view, c.unsynced = mtView{}, true
			c.push(m, cds, at(400), time.Time{}, eds(svcA, &clusterv3.Cluster{Name: svcA}, svcB, &clusterv3.Cluster{Name: svcB}))
		},
		want: []mtWant{{missed: 1, censored: true}},
	}, {
		// ingress-churn on istiod: a gateway re-binding of two hosts, then 420 ms later another
		// re-binding of one of them; istiod's debounce (full pushes under endpoint churn) puts
		// both in one push, which shows the later binding of the shared host. The earlier event
		// can never be seen there: superseded, with its latency to that push.
		name:   "a host re-bound again before any push is superseded",
		events: rebindTwice,
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, rdsT, at(0), time.Time{}, map[string]proto.Message{"http.80": mtRoutes("h-a", "c0", "h-b", "c0")})
			expect(0)
			expect(1)
			c.push(m, rdsT, at(1300), time.Time{}, map[string]proto.Message{"http.80": mtRoutes("h-a", "c1", "h-b", "c3")})
		},
		want: []mtWant{{superseded: 1, push: 1300 * time.Millisecond}, {observed: 1, push: 880 * time.Millisecond, recv: 880 * time.Millisecond}},
	}, {
		name:   "a host re-binding pushed before the next one is observed",
		events: rebindTwice,
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, rdsT, at(0), time.Time{}, map[string]proto.Message{"http.80": mtRoutes("h-a", "c0", "h-b", "c0")})
			expect(0)
			c.push(m, rdsT, at(300), time.Time{}, map[string]proto.Message{"http.80": mtRoutes("h-a", "c1", "h-b", "c2")})
			expect(1)
			c.push(m, rdsT, at(1300), time.Time{}, map[string]proto.Message{"http.80": mtRoutes("h-a", "c1", "h-b", "c3")})
		},
		want: []mtWant{{observed: 1, push: 300 * time.Millisecond, recv: 300 * time.Millisecond}, {observed: 1, push: 880 * time.Millisecond, recv: 880 * time.Millisecond}},
	}, {
		name:   "a host re-binding never pushed is missed",
		events: rebindTwice[:1],
		script: func(m *Matcher, c *mtClient, expect func(int)) {
			c.push(m, rdsT, at(0), time.Time{}, map[string]proto.Message{"http.80": mtRoutes("h-a", "c0", "h-b", "c0")})
			expect(0)
			c.push(m, rdsT, at(1300), time.Time{}, map[string]proto.Message{"http.80": mtRoutes("h-a", "c1", "h-b", "c0")})
		},
		want: []mtWant{{missed: 1, censored: true}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMatcher(MatcherConfig{Now: mtNow})
			c := &mtClient{index: 0, group: "g", ns: "default"}
			m.Track(0, "g", "default")
			if tc.initial != nil {
				c.push(m, edsT, at(0), time.Time{}, tc.initial)
			}
			tc.script(m, c, func(i int) {
				if _, err := m.Expect(tc.events[i]); err != nil {
					t.Fatal(err)
				}
			})
			res := m.Results()
			if len(res.Events) != len(tc.want) {
				t.Fatalf("events = %d, want %d", len(res.Events), len(tc.want))
			}
			for i, w := range tc.want {
				e := res.Events[i]
				got := mtWant{observed: e.Observed, held: e.AlreadyHeld, superseded: e.Superseded, missed: e.Missed,
					push: e.Convergence, recv: e.ReceiveConvergence, censored: e.Censored}
				if e.Censored {
					got.push = 0 // the censored bound depends on when Results runs
				}
				if got != w {
					t.Errorf("event %d (%s): got %+v, want %+v", e.EventID, e.Kind, got, w)
				}
				if e.Observed == 0 && e.MinLatency != 0 && w.push == 0 {
					t.Errorf("event %d: latency %v without an observation", e.EventID, e.MinLatency)
				}
			}
			n := int64(0)
			for _, w := range tc.want {
				n += int64(w.observed)
				if w.superseded > 0 && w.push > 0 && !w.censored {
					n += int64(w.superseded) // passed by a response: a latency each
				}
			}
			if got := res.PushLatencyAll.TotalCount(); got != n {
				t.Errorf("push latency samples = %d, want %d (one per observation and per client that a response moved past the event, none for held)", got, n)
			}
			if got, want := m.PushLatency(), res.PushLatencyAll; !got.Equals(want) {
				t.Errorf("PushLatency holds %d samples (max %d), Results %d (max %d): they must be the same histogram",
					got.TotalCount(), got.Max(), want.TotalCount(), want.Max())
			}
		})
	}
}

// TestMatcherConvergenceOneOwner: every event some client observed or missed enters its
// kind's convergence histogram (a missed one censored at Results time), and the overall
// histogram is the merge of the per-kind ones.
func TestMatcherConvergenceOneOwner(t *testing.T) {
	now := at(0)
	m := NewMatcher(MatcherConfig{Now: func() time.Time { return now }})
	a := &mtClient{index: 0, group: "g", ns: "default"}
	b := &mtClient{index: 1, group: "g", ns: "default"}
	for _, c := range []*mtClient{a, b} {
		m.Track(c.index, c.group, c.ns)
		c.push(m, resource.EndpointType, at(0), time.Time{}, eds("c1", mtCLA("c1"), "c2", mtCLA("c2")))
	}
	for _, e := range []probe.Expectation{
		{EventID: 1, Kind: "add", T0: at(0), All: []probe.Predicate{present("c1", "10.0.0.1")}},
		{EventID: 2, Kind: "scale", T0: at(0), All: []probe.Predicate{present("c2", "10.0.0.2")}},
	} {
		if _, err := m.Expect(e); err != nil {
			t.Fatal(err)
		}
	}
	a.push(m, resource.EndpointType, at(50), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1"), "c2", mtCLA("c2", "10.0.0.2")))
	b.push(m, resource.EndpointType, at(80), time.Time{}, eds("c2", mtCLA("c2", "10.0.0.2"))) // b misses event 1
	now = at(5000)
	res := m.Results()
	e1, e2 := res.Events[0], res.Events[1]
	if !e1.Censored || e1.Missed != 1 || e1.Convergence != 5*time.Second {
		t.Errorf("event 1: %+v, want censored at 5s with 1 missed", e1)
	}
	if e2.Censored || e2.Convergence != 80*time.Millisecond {
		t.Errorf("event 2: %+v, want 80ms", e2)
	}
	if len(res.ConvergenceByKind) != 2 {
		t.Fatalf("kinds = %v", res.ConvergenceByKind)
	}
	merged := NewLatencyHistogram()
	for _, h := range res.ConvergenceByKind {
		merged.Merge(h)
	}
	if res.Convergence.TotalCount() != 2 || !res.Convergence.Equals(merged) {
		t.Errorf("overall convergence is not the merge of the per-kind ones")
	}
	if got := res.ConvergenceByKind["add"].Max(); got < 4_990_000 {
		t.Errorf("add convergence max %dµs, want the censored 5s", got)
	}
}

func TestMatcherReach(t *testing.T) {
	eds := resource.EndpointType
	clients := []*mtClient{
		{index: 0, group: "sidecars", ns: "ns-0", subs: map[string]bool{eds + "/c1": true}},
		{index: 1, group: "sidecars", ns: "ns-1"},
		{index: 2, group: "gateways", ns: "ns-0", ptype: "router", subs: map[string]bool{eds + "/c1": true}},
		{index: 3, group: "sidecars", ns: "ns-0"},                                           // not a watcher
		{index: 4, group: "sidecars", ns: "ns-0", subs: map[string]bool{eds + "/c1": true}}, // silent
	}
	tests := []struct {
		name                                  string
		reach                                 probe.Reach
		observed, missed, unresolved, reached int
	}{
		{"everyone", probe.Reach{}, 4, 1, 0, 5},
		{"group", probe.Reach{Groups: []string{"gateways"}}, 1, 0, 0, 1},
		{"namespace", probe.Reach{Namespaces: []string{"ns-0"}}, 3, 1, 0, 4},
		{"group and namespace", probe.Reach{Groups: []string{"sidecars"}, Namespaces: []string{"ns-1"}}, 1, 0, 0, 1},
		{"watchers", probe.Reach{WatchersOnly: true}, 2, 0, 1, 2},
		{"watchers in ns-1 (the router watches)", probe.Reach{WatchersOnly: true, Namespaces: []string{"ns-1"}}, 1, 0, 0, 1},
		{"sidecar watchers in ns-1", probe.Reach{WatchersOnly: true, Namespaces: []string{"ns-1"}, ProxyType: probe.ProxySidecar}, 0, 0, 0, 0},
		{"routers", probe.Reach{ProxyType: probe.ProxyRouter}, 1, 0, 0, 1},
		{"sidecars", probe.Reach{ProxyType: probe.ProxySidecar}, 3, 1, 0, 4},
		// Sidecar scoping does not apply to routers: a namespace reach keeps them.
		{"routers ignore namespaces", probe.Reach{Namespaces: []string{"ns-1"}}, 2, 0, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMatcher(MatcherConfig{Shards: 2, Now: mtNow})
			for _, c := range clients {
				c.view, c.seq = nil, 0
				m.Track(c.index, c.group, c.ns)
			}
			if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "k", T0: at(0), Reach: tc.reach,
				All: []probe.Predicate{present("c1", "10.0.0.1")}}); err != nil {
				t.Fatal(err)
			}
			for _, c := range clients[:4] {
				c.push(m, eds, at(10), at(11), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
			}
			e := m.Results().Events[0]
			if e.Observed != tc.observed || e.Missed != tc.missed || e.Unresolved != tc.unresolved || e.Reached != tc.reached {
				t.Errorf("observed/missed/unresolved/reached = %d/%d/%d/%d, want %d/%d/%d/%d",
					e.Observed, e.Missed, e.Unresolved, e.Reached, tc.observed, tc.missed, tc.unresolved, tc.reached)
			}
		})
	}
}

// TestMatcherPredicateReach: an event on services of two namespaces under Sidecar scoping
// (probe.Reach.PredicateNamespaces) holds each sidecar to the predicates of the services its
// namespace sees: a client that gets only its own service's assignment observes the event, with
// its own latency; a client that sees neither service is not reached; a router is held to both.
func TestMatcherPredicateReach(t *testing.T) {
	eds := resource.EndpointType
	onlyA := &mtClient{index: 0, group: "g", ns: "ns-a"}
	onlyB := &mtClient{index: 1, group: "g", ns: "ns-b"}
	both := &mtClient{index: 2, group: "g", ns: "ns-ab"}
	neither := &mtClient{index: 3, group: "g", ns: "ns-c"}
	router := &mtClient{index: 4, group: "gw", ns: "ns-c", ptype: probe.ProxyRouter}
	lagging := &mtClient{index: 5, group: "g", ns: "ns-a"} // never gets it: missed
	m := NewMatcher(MatcherConfig{Shards: 2, KeepLatencies: true, Now: mtNow})
	for _, c := range []*mtClient{onlyA, onlyB, both, neither, router, lagging} {
		m.Track(c.index, c.group, c.ns)
		c.view = mtView{eds + "/a": mtCLA("a", "10.0.0.1")} // before the event: a has the endpoint
	}
	reach := probe.Reach{Namespaces: []string{"ns-a", "ns-ab", "ns-b"},
		PredicateNamespaces: [][]string{{"ns-a", "ns-ab"}, {"ns-ab", "ns-b"}}}
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "zone-failure", T0: at(0), Reach: reach,
		All: []probe.Predicate{absent("a", "10.0.0.1"), present("b", "10.0.0.2")}}); err != nil {
		t.Fatal(err)
	}
	onlyA.push(m, eds, at(10), at(11), map[string]proto.Message{"a": mtCLA("a", "10.0.0.9")})
	onlyB.push(m, eds, at(20), at(21), map[string]proto.Message{"b": mtCLA("b", "10.0.0.2")})
	both.push(m, eds, at(30), at(31), map[string]proto.Message{"a": mtCLA("a", "10.0.0.9")})
	both.push(m, eds, at(40), at(41), map[string]proto.Message{"b": mtCLA("b", "10.0.0.2")}) // both hold now
	neither.push(m, eds, at(50), at(51), map[string]proto.Message{"x": mtCLA("x", "10.0.0.7")})
	router.push(m, eds, at(55), at(56), map[string]proto.Message{"a": mtCLA("a", "10.0.0.9")})
	router.push(m, eds, at(60), at(61), map[string]proto.Message{"b": mtCLA("b", "10.0.0.2")})
	lagging.push(m, eds, at(70), at(71), map[string]proto.Message{"a": mtCLA("a", "10.0.0.1", "10.0.0.3")})
	e := m.Results().Events[0]
	if e.Observed != 4 || e.Missed != 1 || e.Reached != 5 {
		t.Errorf("observed/missed/reached = %d/%d/%d, want 4/1/5 (ns-c's sidecar is not reached)", e.Observed, e.Missed, e.Reached)
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond}
	if len(e.Latencies) != len(want) {
		t.Fatalf("latencies %v, want %v", e.Latencies, want)
	}
	for i := range want {
		if e.Latencies[i] != want[i] {
			t.Errorf("latencies %v, want %v", e.Latencies, want)
			break
		}
	}
	if !e.Censored {
		t.Error("an event a client missed is not censored")
	}
}

// TestMatcherNamedOnlyReach: a proxyless gRPC client asks for its clusters by name, so an event
// on a cluster it never requested does not target it: not missed, not reached (an Envoy
// sidecar, subscribed to every cluster through wildcard CDS, is reached by every event).
func TestMatcherNamedOnlyReach(t *testing.T) {
	eds := resource.EndpointType
	watcher := &mtClient{index: 0, group: "grpc", ns: "ns-0", named: true, subs: map[string]bool{eds + "/c1": true}}
	other := &mtClient{index: 1, group: "grpc", ns: "ns-0", named: true, subs: map[string]bool{eds + "/c2": true}}
	silent := &mtClient{index: 2, group: "grpc", ns: "ns-0", named: true, subs: map[string]bool{eds + "/c2": true}}
	m := NewMatcher(MatcherConfig{Shards: 2, Now: mtNow})
	for _, c := range []*mtClient{watcher, other, silent} {
		m.TrackNamed(c.index, c.group, c.ns, c.named)
	}
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "k", T0: at(0),
		All: []probe.Predicate{present("c1", "10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	watcher.push(m, eds, at(10), at(11), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	other.push(m, eds, at(12), at(13), map[string]proto.Message{"c2": mtCLA("c2", "10.0.0.9")})
	e := m.Results().Events[0]
	if e.Observed != 1 || e.Missed != 0 || e.Reached != 1 || e.Unresolved != 1 {
		t.Errorf("observed/missed/reached/unresolved = %d/%d/%d/%d, want 1/0/1/1 (the silent client's reach is unresolved)",
			e.Observed, e.Missed, e.Reached, e.Unresolved)
	}
}

func TestMatcherT0SetAfterObservation(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	a := &mtClient{index: 0, group: "g", ns: "default"}
	m.Track(0, "g", "default")
	h, err := m.Expect(probe.Expectation{EventID: 3, Kind: "add", All: []probe.Predicate{present("c1", "10.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	// The push and its ACK arrive before the simulator got to SetT0.
	a.push(m, resource.EndpointType, at(20), at(25), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	if n := m.Outstanding(); n != 0 {
		t.Errorf("outstanding = %d, want 0: the observation counts before T0 is known", n)
	}
	if err := h.SetT0(at(5)); err != nil {
		t.Fatal(err)
	}
	if err := h.SetT0(at(6)); err == nil {
		t.Error("second SetT0 succeeded")
	}
	e := m.Results().Events[0]
	if e.Convergence != 15*time.Millisecond || e.AckConvergence != 20*time.Millisecond || !e.T0.Equal(at(5)) {
		t.Errorf("convergence %v ack %v t0 %v, want 15ms 20ms %v", e.Convergence, e.AckConvergence, e.T0, at(5))
	}

	// A T0 later than the receive time clamps to 0 and is reported.
	h2, err := m.Expect(probe.Expectation{EventID: 4, Kind: "add", All: []probe.Predicate{present("c1", "10.0.0.2")}})
	if err != nil {
		t.Fatal(err)
	}
	a.push(m, resource.EndpointType, at(30), time.Time{}, map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.2")})
	if err := h2.SetT0(at(31)); err != nil {
		t.Fatal(err)
	}
	e = m.Results().Events[1]
	if e.EarlyReceives != 1 || e.Convergence != 0 || e.Observed != 1 {
		t.Errorf("early receive: %+v", e)
	}
}

func TestMatcherTrackedLaterIsNotInReach(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "k", T0: at(0), All: []probe.Predicate{present("c1", "10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	m.Track(0, "g", "default")
	a := &mtClient{index: 0, group: "g", ns: "default"}
	a.push(m, resource.EndpointType, at(10), at(11), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	if e := m.Results().Events[0]; e.Reached != 0 || e.Observed != 0 {
		t.Errorf("a client started after the event was reached: %+v", e)
	}
}

func TestMatcherExpectValidates(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	if _, err := m.Expect(probe.Expectation{EventID: 1}); err == nil {
		t.Error("an expectation without predicates was accepted")
	}
	if _, err := m.Expect(probe.Expectation{EventID: 1, All: []probe.Predicate{{Op: "bogus", Resource: "x"}}}); err == nil {
		t.Error("an unknown op was accepted")
	}
}

func TestMatcherDrain(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	a := &mtClient{index: 0, group: "g", ns: "default"}
	m.Track(0, "g", "default")
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "k", T0: at(0), All: []probe.Predicate{present("c1", "10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := m.Drain(ctx, time.Millisecond); n != 1 || err == nil {
		t.Errorf("Drain on a done context = %d, %v; want 1 outstanding and an error", n, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.push(m, resource.EndpointType, at(10), at(11), map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if n, err := m.Drain(ctx2, time.Millisecond); n != 0 || err != nil {
		t.Errorf("Drain = %d, %v; want 0, nil", n, err)
	}
	<-done
}

// TestMatcherWithdraw: an event whose change the sink failed to make is withdrawn: clients that
// claimed it and clients that had not yet are no longer held to it, Drain does not wait for it
// and Results leaves it out, while the events around it are matched as before.
func TestMatcherWithdraw(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	a := &mtClient{index: 0, group: "g", ns: "default"}
	b := &mtClient{index: 1, group: "g", ns: "default"}
	for _, cl := range []*mtClient{a, b} {
		m.Track(cl.index, cl.group, cl.ns)
		cl.push(m, resource.EndpointType, at(0), time.Time{}, map[string]proto.Message{"c1": mtCLA("c1")})
	}
	failed, err := m.Expect(probe.Expectation{EventID: 1, Kind: "add", All: []probe.Predicate{present("c1", "10.0.0.9")}})
	if err != nil {
		t.Fatal(err)
	}
	a.push(m, resource.ClusterType, at(1), time.Time{}, nil) // a claims event 1; b has not
	failed.Withdraw()
	failed.Withdraw() // twice is harmless
	if _, err := m.Expect(probe.Expectation{EventID: 2, Kind: "add", T0: at(2), All: []probe.Predicate{present("c1", "10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	if n := m.Outstanding(); n != 2 {
		t.Fatalf("outstanding = %d, want 2 (event 2 at both clients; the withdrawn event at none)", n)
	}
	for i, cl := range []*mtClient{a, b} {
		cl.push(m, resource.EndpointType, at(10+i), time.Time{}, map[string]proto.Message{"c1": mtCLA("c1", "10.0.0.1")})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := m.Drain(ctx, time.Millisecond); n != 0 || err != nil {
		t.Fatalf("Drain = %d, %v; want 0, nil: a withdrawn event is not awaited", n, err)
	}
	res := m.Results()
	if len(res.Events) != 1 || res.Events[0].EventID != 2 || !res.Events[0].Complete() || res.Events[0].Observed != 2 {
		t.Fatalf("results = %+v, want only event 2, observed by both clients", res.Events)
	}
	if res.Missed != 0 {
		t.Errorf("missed = %d, want 0", res.Missed)
	}
}

// TestMatcherHeldByResponseReadLate: a client claims a restore at a hook before it reads a
// response it received before the restore was registered, and that response shows the
// restore's state (a push of the state before the removal, from a lagging control plane). The
// client held the restore's state when it was registered: already held, and the removal it
// never saw is superseded — neither is missed.
func TestMatcherHeldByResponseReadLate(t *testing.T) {
	now := at(0)
	m := NewMatcher(MatcherConfig{Now: func() time.Time { return now }})
	c := &mtClient{index: 0, group: "g", ns: "default"}
	m.Track(0, "g", "default")
	c.push(m, resource.EndpointType, at(0), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1", "10.0.0.2", "10.0.0.9")))
	now = at(100)
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "flap-remove", T0: at(100), All: []probe.Predicate{count("c1", 1), absent("c1", "10.0.0.2")}}); err != nil {
		t.Fatal(err)
	}
	now = at(120)
	m.touch(c.info())
	now = at(200)
	if _, err := m.Expect(probe.Expectation{EventID: 2, Kind: "flap-restore", T0: at(200), All: []probe.Predicate{count("c1", 2), present("c1", "10.0.0.2")}}); err != nil {
		t.Fatal(err)
	}
	now = at(210)
	m.touch(c.info()) // claims the restore over the state before the response received at 150
	c.push(m, resource.EndpointType, at(150), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1", "10.0.0.2")))
	res := m.Results()
	want := []mtWant{{superseded: 1}, {held: 1}}
	for i, w := range want {
		e := res.Events[i]
		got := mtWant{observed: e.Observed, held: e.AlreadyHeld, superseded: e.Superseded, missed: e.Missed,
			push: e.Convergence, recv: e.ReceiveConvergence, censored: e.Censored}
		if got != w {
			t.Errorf("event %d (%s): got %+v, want %+v", e.EventID, e.Kind, got, w)
		}
	}
}

// TestMatcherScratchSets: the subject sets a response fills are empty for the next one, and
// one grown past maxScratch by a response carrying hundreds of events is let go; every event
// of both pushes is observed.
func TestMatcherScratchSets(t *testing.T) {
	m := NewMatcher(MatcherConfig{Now: mtNow})
	c := &mtClient{index: 0, group: "g", ns: "default"}
	m.Track(0, "g", "default")
	s := m.shard(0)
	push := func(first, n, recvMs int) {
		t.Helper()
		set := map[string]proto.Message{}
		for k := first; k < first+n; k++ {
			name := fmt.Sprint("c", k)
			if _, err := m.Expect(probe.Expectation{EventID: uint64(k + 1), Kind: "add", T0: mtBase,
				All: []probe.Predicate{present(name, "10.0.0.1")}}); err != nil {
				t.Fatal(err)
			}
			set[name] = mtCLA(name, "10.0.0.1")
		}
		c.push(m, resource.EndpointType, at(recvMs), at(recvMs+1), set)
	}
	push(0, maxScratch+44, 10)
	if s.shown != nil {
		t.Fatalf("after %d events: the shard keeps a subject set of %d", maxScratch+44, len(s.shown))
	}
	push(maxScratch+44, 10, 20)
	if s.shown == nil || len(s.shown) != 0 {
		t.Fatalf("after 10 events: subject set %v, want kept and empty", s.shown)
	}
	res := m.Results()
	if res.Observed != maxScratch+54 {
		t.Fatalf("%d of %d events observed", res.Observed, maxScratch+54)
	}
}

// TestMatcherMovedByHeldLaterEvent: an event held when claimed, over the state before a
// response that was received before it was registered and read after, no longer holds after
// that response; but its predicates on one subject do. The client has moved past every earlier
// state of that subject, so an earlier event waiting for another state of it is superseded,
// not left to be missed. (No event registered before the response was received shows it:
// movedPast alone would not know.)
func TestMatcherMovedByHeldLaterEvent(t *testing.T) {
	now := at(0)
	m := NewMatcher(MatcherConfig{Now: func() time.Time { return now }})
	c := &mtClient{index: 0, group: "g", ns: "default"}
	m.Track(0, "g", "default")
	c.push(m, resource.EndpointType, at(0), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1", "10.0.0.2")))
	now = at(100)
	if _, err := m.Expect(probe.Expectation{EventID: 1, Kind: "add", T0: at(100), All: []probe.Predicate{present("c1", "10.0.0.7")}}); err != nil {
		t.Fatal(err)
	}
	now = at(120)
	m.touch(c.info())
	now = at(200)
	if _, err := m.Expect(probe.Expectation{EventID: 2, Kind: "pair", T0: at(200),
		All: []probe.Predicate{absent("c1", "10.0.0.7"), present("c1", "10.0.0.2")}}); err != nil {
		t.Fatal(err)
	}
	now = at(210)
	m.touch(c.info()) // claims event 2, held over the state before the response received at 150
	c.push(m, resource.EndpointType, at(150), time.Time{}, eds("c1", mtCLA("c1", "10.0.0.1", "10.0.0.3")))
	res := m.Results()
	if e := res.Events[0]; e.Superseded != 1 || e.Observed != 0 || e.Missed != 0 {
		t.Errorf("event 1: observed %d, superseded %d, missed %d; want superseded: the client moved past 10.0.0.7's absence it waited to end",
			e.Observed, e.Superseded, e.Missed)
	}
}
