package validate

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestMayHoldAny: a message type may hold a packed message when an Any is reachable from it
// through its fields, across cycles; Struct's cycle and leaf types hold none.
func TestMayHoldAny(t *testing.T) {
	for _, tc := range []struct {
		msg  proto.Message
		want bool
	}{
		{&anypb.Any{}, true},
		{&clusterv3.Cluster{}, true},
		{&endpointv3.ClusterLoadAssignment{}, true}, // an endpoint's typed_filter_metadata
		{&corev3.Metadata{}, true},
		{&structpb.Struct{}, false}, // Struct, Value and ListValue refer to each other
		{&structpb.Value{}, false},
		{&corev3.Address{}, false},
		{&durationpb.Duration{}, false},
	} {
		md := tc.msg.ProtoReflect().Descriptor()
		if got := mayHoldAny(md); got != tc.want {
			t.Errorf("mayHoldAny(%s) = %v, want %v", md.FullName(), got, tc.want)
		}
	}
}

// TestDeepReachesNestedAnys: the walk skips what can hold no Any, never an Any itself: one
// deep in an assignment's endpoints is still unpacked and validated.
func TestDeepReachesNestedAnys(t *testing.T) {
	invalid, err := anypb.New(&corev3.Address{}) // no address set: ValidateAll rejects it
	if err != nil {
		t.Fatal(err)
	}
	valid, err := anypb.New(&corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/p"}}})
	if err != nil {
		t.Fatal(err)
	}
	garbage := &anypb.Any{TypeUrl: valid.TypeUrl, Value: []byte{0xff}}
	cla := func(typed *anypb.Any) *endpointv3.ClusterLoadAssignment {
		md := &corev3.Metadata{
			FilterMetadata:      map[string]*structpb.Struct{"istio": {Fields: map[string]*structpb.Value{"workload": structpb.NewStringValue("w")}}},
			TypedFilterMetadata: map[string]*anypb.Any{"x": typed},
		}
		ep := &endpointv3.LbEndpoint{Metadata: md, HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/e"}}}}}}
		return &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{ep}}}}
	}
	if err := Deep(cla(valid)); err != nil {
		t.Errorf("a valid nested Any: %v", err)
	}
	if err := Deep(cla(invalid)); err == nil || !strings.Contains(err.Error(), "Address") {
		t.Errorf("an invalid Address in an endpoint's typed metadata: %v, want its error", err)
	}
	if err := Deep(cla(garbage)); err == nil || !strings.Contains(err.Error(), "typed_config") {
		t.Errorf("an Any that does not decode: %v, want an error", err)
	}
}

// TestDeepDynamicForwardProxy: the dynamic forward proxy cluster type and its HTTP and SNI
// filters (istiod's DYNAMIC_DNS ServiceEntries) are unpacked and validated, not skipped as
// unknown types: a DNS cache config without a name, which Envoy rejects, is an error. The
// configs are encoded by hand so that only the package's own imports can register them.
func TestDeepDynamicForwardProxy(t *testing.T) {
	const prefix = "type.googleapis.com/envoy.extensions."
	unnamed := []byte{0x0a, 0x00}                // dns_cache_config {}
	named := []byte{0x0a, 0x03, 0x0a, 0x01, 'c'} // dns_cache_config {name: "c"}
	cluster := func(v []byte) proto.Message {
		return &clusterv3.Cluster{Name: "outbound|80||*.example.com", LbPolicy: clusterv3.Cluster_CLUSTER_PROVIDED,
			ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
				Name: "envoy.clusters.dynamic_forward_proxy", TypedConfig: &anypb.Any{TypeUrl: prefix + "clusters.dynamic_forward_proxy.v3.ClusterConfig", Value: v}}}}
	}
	filter := func(typ string) func(v []byte) proto.Message {
		return func(v []byte) proto.Message {
			return &listenerv3.Listener{Name: "0.0.0.0_80", FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
				Name: "f", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: prefix + typ, Value: v}},
			}}}}}
		}
	}
	for name, build := range map[string]func([]byte) proto.Message{
		"cluster":     cluster,
		"http filter": filter("filters.http.dynamic_forward_proxy.v3.FilterConfig"),
		"sni filter":  filter("filters.network.sni_dynamic_forward_proxy.v3.FilterConfig"),
	} {
		if err := Deep(build(named)); err != nil {
			t.Errorf("%s with a named cache: %v", name, err)
		}
		if err := Deep(build(unnamed)); err == nil || !strings.Contains(err.Error(), "Name") {
			t.Errorf("%s with an unnamed cache: %v, want its validation error", name, err)
		}
	}
}
