package machine

import (
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// TestDecodeFailureRejectsWholeResponse: a resource failing its own PGV constraints fails as
// Envoy decodes the response (before any callback): nothing of it is applied, no EDS request
// goes out, only the NACK, in SotW and in Delta.
func TestDecodeFailureRejectsWholeResponse(t *testing.T) {
	bad := fetest.EDSCluster("c1")
	bad.ConnectTimeout = durationpb.New(-time.Second)

	m := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	s := m.OnSotw(sotwResp(t, C, "2", "n2", bad, fetest.EDSCluster("c2"), fetest.EDSCluster("c3")), t0)
	wantReqs(t, "SotW", s.Sotw, "CDS(1,n2,[],nack)")
	if m.Resource(C, "c3") != nil || !proto.Equal(m.Resource(C, "c1"), fetest.EDSCluster("c1")) || s.Applied {
		t.Errorf("SotW: a response Envoy fails to decode was applied (c3 held: %v)", m.Resource(C, "c3") != nil)
	}

	d := deltaFull(t, Config{Nack: policy.Nack{Realistic: true}})
	s = d.OnDelta(deltaResp(t, C, "e", nil, bad, fetest.EDSCluster("c3")), t0)
	if len(s.Delta) != 1 || s.Delta[0].GetErrorDetail() == nil || d.Resource(C, "c3") != nil || s.Applied {
		t.Errorf("Delta: requests %v, c3 held %v: want the NACK alone, nothing applied", s.Delta, d.Resource(C, "c3") != nil)
	}
}

// TestSotwDuplicateAppliesFirstCopy: CdsApiHelper applies the first copy of a name a SotW
// response repeats and the other clusters, then NACKs ("duplicate cluster X found"); Delta
// rejects a duplicate name whole (DeltaSubscriptionState).
func TestSotwDuplicateAppliesFirstCopy(t *testing.T) {
	first := fetest.EDSCluster("c3")
	second := fetest.EDSCluster("c3")
	second.ConnectTimeout = durationpb.New(7 * time.Second)
	m := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	s := m.OnSotw(sotwResp(t, C, "2", "n2", fetest.EDSCluster("c1"), first, second, fetest.EDSCluster("c4")), t0)
	wantReqs(t, "SotW", s.Sotw, "EDS(1,b,[c1 c3 c4])", "CDS(1,n2,[],nack)")
	if !s.Info.Nacked || !strings.Contains(s.Info.Error, "duplicate cluster c3 found") {
		t.Errorf("error %q, want the duplicate", s.Info.Error)
	}
	if !proto.Equal(m.Resource(C, "c3"), first) || m.Resource(C, "c4") == nil || m.Resource(C, "c2") != nil {
		t.Errorf("want the first c3 and c4 applied, c2 removed")
	}

	d := deltaFull(t, Config{Nack: policy.Nack{Realistic: true}})
	s = d.OnDelta(deltaResp(t, C, "e", nil, first, second, fetest.EDSCluster("c4")), t0)
	if len(s.Delta) != 1 || s.Delta[0].GetErrorDetail() == nil || d.Resource(C, "c3") != nil || d.Resource(C, "c4") != nil {
		t.Errorf("Delta: requests %v: want the NACK alone, nothing applied", s.Delta)
	}
}

// TestBuildFailureRejectsOneResource: what Envoy rejects building a cluster (an EDS cluster
// asking for a cluster-provided LB), a listener (no filter chains) or a route configuration
// (one domain in two virtual hosts) NACKs the response; CDS and LDS apply the others.
func TestBuildFailureRejectsOneResource(t *testing.T) {
	m := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	provided := fetest.EDSCluster("c1")
	provided.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
	s := m.OnSotw(sotwResp(t, C, "2", "n2", provided, fetest.EDSCluster("c2"), fetest.EDSCluster("c3")), t0)
	wantReqs(t, "CDS", s.Sotw, "EDS(1,b,[c1 c2 c3])", "CDS(1,n2,[],nack)")
	if !strings.Contains(s.Info.Error, "cluster c1: cluster manager: cluster provided LB specified") ||
		m.Resource(C, "c3") == nil || !proto.Equal(m.Resource(C, "c1"), fetest.EDSCluster("c1")) {
		t.Errorf("CDS: error %q, c3 held %v: want c1 rejected alone", s.Info.Error, m.Resource(C, "c3") != nil)
	}

	bare := fetest.RDSListener(t, "l2", 81)
	s = m.OnSotw(sotwResp(t, L, "2", "n3", fetest.RDSListener(t, "l1", 80, "r1"), bare, fetest.RDSListener(t, "l3", 82, "r1")), t0)
	if !strings.Contains(s.Info.Error, "no filter chains specified") || m.Resource(L, "l3") == nil || m.Resource(L, "l2") != nil {
		t.Errorf("LDS: error %q: want l2 rejected alone", s.Info.Error)
	}

	dup := fetest.Route("r1", "h", "c1")
	dup.VirtualHosts = append(dup.VirtualHosts, fetest.Route("r1", "h", "c2").VirtualHosts[0])
	s = m.OnSotw(sotwResp(t, R, "2", "n4", dup), t0)
	if !strings.Contains(s.Info.Error, "Only unique values for domains are permitted") || s.Applied {
		t.Errorf("RDS: error %q, applied %v: want the duplicate domain rejected", s.Info.Error, s.Applied)
	}

	// Without realistic rejection the same resources are applied.
	m = warmedMachine(t, Config{})
	if s = m.OnSotw(sotwResp(t, C, "2", "n2", provided), t0); s.Info.Nacked {
		t.Errorf("not realistic: NACKed %q", s.Info.Error)
	}
}

// TestHashWeightsOverflowNacked: an assignment whose host weights overflow is NACKed (nothing
// applied) when a ring hash cluster uses it, accepted for a round robin one.
func TestHashWeightsOverflowNacked(t *testing.T) {
	heavy := fetest.CLA("c1", "10.0.0.1", 80)
	heavy.Endpoints[0].LbEndpoints = append(heavy.Endpoints[0].LbEndpoints, proto.Clone(heavy.Endpoints[0].LbEndpoints[0]).(*endpointv3.LbEndpoint))
	for _, e := range heavy.Endpoints[0].LbEndpoints {
		e.LoadBalancingWeight = wrapperspb.UInt32(1 << 31)
	}
	for _, lb := range []clusterv3.Cluster_LbPolicy{clusterv3.Cluster_RING_HASH, clusterv3.Cluster_ROUND_ROBIN} {
		m := newTestMachine(t, Config{Nack: policy.Nack{Realistic: true}})
		m.Start(t0)
		c := fetest.EDSCluster("c1")
		c.LbPolicy = lb
		m.OnSotw(sotwResp(t, C, "1", "a", c), t0)
		s := m.OnSotw(sotwResp(t, E, "1", "b", heavy), t0)
		if want := lb == clusterv3.Cluster_RING_HASH; s.Info.Nacked != want || (m.Resource(E, "c1") == nil) == !want {
			t.Errorf("%v: NACKed %v (%s), held %v; want NACKed %v", lb, s.Info.Nacked, s.Info.Error, m.Resource(E, "c1") != nil, want)
		} else if want && !strings.Contains(s.Info.Error, "The sum of weights of all upstream hosts in a locality exceeds 4294967295") {
			t.Errorf("error %q", s.Info.Error)
		}
	}
}

// TestSotwUnwatchedDecodeFailure: Envoy's SotW mux decodes every resource of a response, the
// ones it does not watch too: one failing its PGV constraints rejects the response. Its Delta
// mux decodes only the watched ones.
func TestSotwUnwatchedDecodeFailure(t *testing.T) {
	bad := fetest.CLA("zz", "10.0.0.9", 80)
	bad.Endpoints[0].LbEndpoints[0].LoadBalancingWeight = wrapperspb.UInt32(0) // PGV: gte 1
	m := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	s := m.OnSotw(sotwResp(t, E, "2", "n2", fetest.CLA("c1", "10.0.0.5", 80), bad), t0)
	if !s.Info.Nacked || !strings.Contains(s.Info.Error, "zz") || s.Applied {
		t.Errorf("SotW: NACKed %v (%q), applied %v: want the response rejected", s.Info.Nacked, s.Info.Error, s.Applied)
	}
	d := deltaFull(t, Config{Nack: policy.Nack{Realistic: true}})
	s = d.OnDelta(deltaResp(t, E, "e", nil, fetest.CLA("c1", "10.0.0.5", 80), bad), t0)
	if s.Info.Nacked || !s.Applied {
		t.Errorf("Delta: NACKed %v (%q), applied %v: want the watched assignment applied", s.Info.Nacked, s.Info.Error, s.Applied)
	}
}

// TestPipeListeners: a listener on a unix domain socket (a pipe address, as istiod binds a
// Sidecar egress listener's unix socket) is accepted; a second one on the same socket is
// rejected as Envoy rejects a duplicate address, the first kept.
func TestPipeListeners(t *testing.T) {
	onPipe := func(name, path string) *listenerv3.Listener {
		l := fetest.RDSListener(t, name, 0, "r1")
		l.Address = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path}}}
		return l
	}
	m := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
	s := m.OnSotw(sotwResp(t, L, "2", "n2", onPipe("unix:///var/run/a.sock_0", "/var/run/a.sock"), onPipe("unix://@b_0", "@b")), t0)
	if s.Info.Nacked {
		t.Fatalf("pipe listeners NACKed: %q", s.Info.Error)
	}
	s = m.OnSotw(sotwResp(t, L, "3", "n3", onPipe("unix:///var/run/a.sock_0", "/var/run/a.sock"), onPipe("again", "/var/run/a.sock")), t0)
	if !strings.Contains(s.Info.Error, "duplicate address pipe:/var/run/a.sock") || m.Resource(L, "again") != nil || m.Resource(L, "unix:///var/run/a.sock_0") == nil {
		t.Errorf("error %q: want the second listener on the socket rejected, the first kept", s.Info.Error)
	}
}

// TestListenerAddressConflicts: Envoy refuses a listener that takes an address another one
// holds, its own or an additional one, whether or not either binds it (a dual-stack sidecar's
// wildcard listener has :: beside 0.0.0.0: a listener on :: and the same port is refused).
func TestListenerAddressConflicts(t *testing.T) {
	at := func(name, ip string, port uint32, bound bool, also ...string) *listenerv3.Listener {
		l := fetest.RDSListener(t, name, 0, "r1")
		l.Address = &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}
		for _, a := range also {
			l.AdditionalAddresses = append(l.AdditionalAddresses, &listenerv3.AdditionalAddress{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: a, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}})
		}
		if !bound {
			l.BindToPort = wrapperspb.Bool(false)
		}
		return l
	}
	for _, tc := range []struct {
		name    string
		second  *listenerv3.Listener
		wantErr string // "" for accepted
	}{
		{"another port", at("0.0.0.0_81", "0.0.0.0", 81, false, "::"), ""},
		{"the additional address, not bound", at("::_80", "::", 80, false), "duplicate address [::]:80 as listener 0.0.0.0_80"},
		{"the additional address, bound", at("::_80", "::", 80, true), "duplicate address [::]:80 as listener 0.0.0.0_80"},
		{"the address as an additional one", at("10.0.0.1_80", "10.0.0.1", 80, false, "0.0.0.0"), "duplicate address 0.0.0.0:80 as listener 0.0.0.0_80"},
		{"the address written otherwise", at("other", "0:0::0", 80, false), "duplicate address [::]:80 as listener 0.0.0.0_80"},
		{"another IP", at("127.0.0.1_80", "127.0.0.1", 80, false, "::1"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
			first := at("0.0.0.0_80", "0.0.0.0", 80, false, "::")
			s := m.OnSotw(sotwResp(t, L, "2", "n2", first, tc.second), t0)
			switch {
			case tc.wantErr == "" && s.Info.Nacked:
				t.Errorf("NACKed %q, want both listeners accepted", s.Info.Error)
			case tc.wantErr != "" && !strings.Contains(s.Info.Error, tc.wantErr):
				t.Errorf("error %q, want %q", s.Info.Error, tc.wantErr)
			case tc.wantErr != "" && (m.Resource(L, tc.second.GetName()) != nil || m.Resource(L, "0.0.0.0_80") == nil):
				t.Errorf("want %s rejected and 0.0.0.0_80 kept", tc.second.GetName())
			}
		})
	}
}

// TestListenerAddressesHeld: a listener a response changes keeps its addresses while its new
// copy warms (and for good when the change is refused), as Envoy's old copy serves until then:
// another listener may not take them in the same response; a changed listener is held against
// its own old copy when its addresses change and its sockets do not; a port-0 address is
// compared only with listeners that do not bind.
func TestListenerAddressesHeld(t *testing.T) {
	at := func(name string, bound bool, addrs ...string) *listenerv3.Listener {
		l := fetest.RDSListener(t, name, 0, "r1")
		sock := func(hp string) *corev3.Address {
			host, port, _ := strings.Cut(hp, "|")
			n, _ := strconv.Atoi(port)
			return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(n)}}}}
		}
		l.Address = sock(addrs[0])
		for _, a := range addrs[1:] {
			l.AdditionalAddresses = append(l.AdditionalAddresses, &listenerv3.AdditionalAddress{Address: sock(a)})
		}
		if !bound {
			l.BindToPort = wrapperspb.Bool(false)
		}
		return l
	}
	for _, tc := range []struct {
		name    string
		first   []proto.Message // listeners applied first
		second  []proto.Message // the response under test
		wantErr string          // "" for accepted
	}{
		{"a listener moves, another takes its old address",
			[]proto.Message{at("x", false, "10.0.0.1|80")},
			[]proto.Message{at("y", false, "10.0.0.1|80"), at("x", false, "10.0.0.2|80")},
			"listener y: duplicate address 10.0.0.1:80 as listener x"},
		{"a listener moves to a new address",
			[]proto.Message{at("x", false, "10.0.0.1|80")},
			[]proto.Message{at("x", false, "10.0.0.2|80")}, ""},
		{"a listener keeps one of its addresses and changes the other",
			[]proto.Message{at("x", false, "0.0.0.0|80", "::|80")},
			[]proto.Message{at("x", false, "10.0.0.1|80", "::|80")},
			"listener x: duplicate address [::]:80 as listener x"},
		{"a listener changes nothing but its chains",
			[]proto.Message{at("x", false, "0.0.0.0|80", "::|80")},
			[]proto.Message{at("x", false, "::|80", "0.0.0.0|80")}, ""},
		{"a listener adds an address (new sockets)",
			[]proto.Message{at("x", false, "0.0.0.0|80")},
			[]proto.Message{at("x", false, "0.0.0.0|80", "::|80")}, ""},
		{"port 0: a binding listener's is its own",
			[]proto.Message{at("a", true, "127.0.0.1|0")},
			[]proto.Message{at("a", true, "127.0.0.1|0"), at("b", false, "127.0.0.1|0")}, ""},
		{"port 0: one that does not bind holds it",
			[]proto.Message{at("a", false, "127.0.0.1|0")},
			[]proto.Message{at("a", false, "127.0.0.1|0"), at("b", true, "127.0.0.1|0")},
			"listener b: duplicate address 127.0.0.1:0 as listener a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := warmedMachine(t, Config{Nack: policy.Nack{Realistic: true}})
			if s := m.OnSotw(sotwResp(t, L, "2", "n2", tc.first...), t0); s.Info.Nacked {
				t.Fatalf("first response NACKed: %q", s.Info.Error)
			}
			s := m.OnSotw(sotwResp(t, L, "3", "n3", tc.second...), t0)
			switch {
			case tc.wantErr == "" && s.Info.Nacked:
				t.Errorf("NACKed %q, want accepted", s.Info.Error)
			case tc.wantErr != "" && !strings.Contains(s.Info.Error, tc.wantErr):
				t.Errorf("error %q, want %q", s.Info.Error, tc.wantErr)
			}
		})
	}
}
