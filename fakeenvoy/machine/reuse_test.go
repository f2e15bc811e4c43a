package machine

import (
	"reflect"
	"slices"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/probe"
)

// TestOnSotwReadToSameSteps: a machine handed one reused Step for every response
// (OnSotwReadTo) takes the same steps as one given a new Step each time (OnSotwRead): the same
// requests, the same response info (touched lists included), the same flags; and once it has
// sent a request in a place of its list, it reuses that request there.
func TestOnSotwReadToSameSteps(t *testing.T) {
	bad := fetest.CLA("c2", "10.0.0.9", 80)
	bad.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().Address = ""
	responses := []struct {
		name string
		resp *discoveryv3.DiscoveryResponse
		nack bool // the response is rejected
	}{
		{"clusters", sotwResp(t, C, "1", "a", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")), false},
		{"endpoints", sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80)), false},
		{"listener", sotwResp(t, L, "1", "c", fetest.RDSListener(t, "l1", 80, "r1")), false},
		{"routes", sotwResp(t, R, "1", "d", fetest.Route("r1", "h", "c1")), false},
		{"one endpoint changes", sotwResp(t, E, "2", "e", fetest.CLA("c1", "10.0.0.3", 80)), false},
		{"it changes again", sotwResp(t, E, "3", "f", fetest.CLA("c1", "10.0.0.4", 80)), false},
		{"the same again", sotwResp(t, E, "4", "g", fetest.CLA("c1", "10.0.0.4", 80)), false},
		{"an invalid one", sotwResp(t, E, "5", "h", bad), true},
		{"a cluster goes", sotwResp(t, C, "2", "i", fetest.EDSCluster("c1")), false},
		{"endpoints after it", sotwResp(t, E, "6", "j", fetest.CLA("c1", "10.0.0.5", 80)), false},
		{"an unknown type", &discoveryv3.DiscoveryResponse{TypeUrl: "type.googleapis.com/x.Y", VersionInfo: "1", Nonce: "k"}, false},
	}
	in := NewInterner()
	cfg := Config{Interner: in, Nack: policy.Nack{Realistic: true}}
	fresh, reused := newTestMachine(t, cfg), newTestMachine(t, cfg)
	fresh.Start(t0)
	reused.Start(t0)
	ccfg := withShellDefaults(cfg)
	nack, err := ccfg.Nack.Compile()
	if err != nil {
		t.Fatal(err)
	}
	ccfg.Nack = nack
	codec := &Codec{interner: in, mode: ccfg.checkMode()}
	read := func(r *discoveryv3.DiscoveryResponse) (*discoveryv3.DiscoveryResponse, Resources) {
		got := &discoveryv3.DiscoveryResponse{}
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(mustMarshal(t, r))}, got); err != nil {
			t.Fatal(err)
		}
		res, ok := codec.LastRead()
		if !ok {
			t.Fatalf("the codec left %s to proto", r.GetTypeUrl())
		}
		return got, res
	}
	var st Step
	var sent []*discoveryv3.DiscoveryRequest // what st's list held after the last response
	for i, tc := range responses {
		at := t0.Add(time.Duration(i) * time.Second)
		r, res := read(tc.resp)
		want := fresh.OnSotwRead(r, res, at)
		r, res = read(tc.resp)
		reused.OnSotwReadTo(&st, r, res, at)
		got := st
		if !slices.EqualFunc(got.Sotw, want.Sotw, func(a, b *discoveryv3.DiscoveryRequest) bool { return proto.Equal(a, b) }) {
			t.Errorf("%s: requests %q, want %q", tc.name, reqSummary(got.Sotw), reqSummary(want.Sotw))
		}
		for j := range min(len(got.Sotw), len(sent)) {
			if got.Sotw[j] != sent[j] {
				t.Errorf("%s: request %d is a new one, want the one sent there before reused", tc.name, j)
			}
		}
		if want.Info.Nacked != tc.nack {
			t.Fatalf("%s: NACKed %v, want %v", tc.name, want.Info.Nacked, tc.nack)
		}
		gi, wi := got.Info, want.Info
		if !slices.Equal(gi.Touched, wi.Touched) {
			t.Errorf("%s: touched %v, want %v", tc.name, gi.Touched, wi.Touched)
		}
		gi.Touched, wi.Touched = nil, nil
		if !reflect.DeepEqual(gi, wi) {
			t.Errorf("%s: info %+v, want %+v", tc.name, gi, wi)
		}
		got.Sotw, want.Sotw, got.Info, want.Info, got.reuse = nil, nil, gi, wi, false
		if !stepsEqual(got, want) {
			t.Errorf("%s: step %+v, want %+v", tc.name, got, want)
		}
		sent = slices.Clone(st.Sotw)
	}
}

// stepsEqual compares two steps without their requests and info.
func stepsEqual(a, b Step) bool {
	return a.Response == b.Response && a.Acked == b.Acked && a.Applied == b.Applied &&
		slices.Equal(a.Timeouts, b.Timeouts) && a.FirstFull == b.FirstFull && a.Resynced == b.Resynced &&
		a.Resync == b.Resync && a.Delay == b.Delay && a.Disconnect == b.Disconnect && len(a.Delta) == len(b.Delta)
}

// TestPushTouchedShared: clients that apply the same push, read from the memo, to the same
// held copies report one touched list (the run's); a client whose held copy differs reports
// its own, equal in names.
func TestPushTouchedShared(t *testing.T) {
	in := NewInterner()
	cfg := Config{Interner: in}
	initial := sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.1", 80), fetest.CLA("c2", "10.0.0.2", 80))
	other := sotwResp(t, E, "1", "b", fetest.CLA("c1", "10.0.0.7", 80), fetest.CLA("c2", "10.0.0.2", 80))
	push := sotwResp(t, E, "2", "c", fetest.CLA("c1", "10.0.0.3", 80))
	touched := func(held *discoveryv3.DiscoveryResponse) []probe.Touched {
		m := newTestMachine(t, cfg)
		m.Start(t0)
		m.OnSotw(sotwResp(t, C, "1", "a", fetest.EDSCluster("c1"), fetest.EDSCluster("c2")), t0)
		codec := &Codec{interner: in, mode: withShellDefaults(cfg).checkMode()}
		var st Step
		for _, r := range []*discoveryv3.DiscoveryResponse{held, push} {
			got := &discoveryv3.DiscoveryResponse{}
			if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(mustMarshal(t, r))}, got); err != nil {
				t.Fatal(err)
			}
			res, _ := codec.LastRead()
			m.OnSotwReadTo(&st, got, res, t0)
		}
		if len(st.Info.Touched) != 1 || st.Info.Touched[0].Name != "c1" {
			t.Fatalf("the push touched %v, want c1", st.Info.Touched)
		}
		return st.Info.Touched
	}
	first, second, third := touched(initial), touched(initial), touched(initial)
	if &third[0] != &second[0] {
		t.Errorf("the third client's touched list is not the one the second reported")
	}
	if first[0].Prev != third[0].Prev {
		t.Errorf("the clients held different copies of c1 before the push")
	}
	if own := touched(other); &own[0] == &third[0] || own[0].Prev == third[0].Prev {
		t.Errorf("a client that held another copy of c1 reports the others' list")
	}
}
