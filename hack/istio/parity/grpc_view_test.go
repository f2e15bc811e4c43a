package parity

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestProjectGRPC: the gRPC view folds istiod's and xdslab's route configuration names, drops
// what grpc-go does not read (the listener's address, Envoy's retry conditions and host
// predicates, IP domains) and keeps the domains' ports, which grpc-go matches.
func TestProjectGRPC(t *testing.T) {
	dump := func(rdsName, retryOn string, domains []string, address bool) *Dump {
		h, err := anypb.New(&hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3},
			RouteConfigName: rdsName,
		}}})
		if err != nil {
			t.Fatal(err)
		}
		l := &listenerv3.Listener{Name: "web.app:80", ApiListener: &listenerv3.ApiListener{ApiListener: h}}
		if address {
			l.Address = &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "240.0.0.1"}}}
		}
		rp := &routev3.RetryPolicy{RetryOn: retryOn, NumRetries: wrapperspb.UInt32(2)}
		if address { // istiod's extras
			rp.HostSelectionRetryMaxAttempts = 5
		}
		r := &routev3.RouteConfiguration{Name: rdsName, VirtualHosts: []*routev3.VirtualHost{{Domains: domains, Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}, RetryPolicy: rp}},
		}}}}}
		return &Dump{Listeners: map[string]*listenerv3.Listener{l.Name: l}, Routes: map[string]*routev3.RouteConfiguration{rdsName: r}}
	}
	istio := dump("outbound|80||web.app.svc.cluster.local", "connect-failure,unavailable,cancelled", []string{"web.app:80", "240.0.0.1:80", "web.app.svc.cluster.local.:80"}, true)
	ours := dump("web.app.svc.cluster.local:80", "cancelled, unavailable", []string{"web.app:80"}, false)
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(ours)); len(ds) > 0 {
		t.Errorf("differences:\n%s", Format(ds))
	}
	// A domain without its port is a difference for grpc-go.
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(dump("web.app.svc.cluster.local:80", "cancelled,unavailable", []string{"web.app"}, false))); len(ds) == 0 {
		t.Error("a domain without its port made no difference")
	}
	// So is a retry on another gRPC status.
	if ds := Diff(ProjectGRPC(istio), ProjectGRPC(dump("web.app.svc.cluster.local:80", "internal", []string{"web.app:80"}, false))); len(ds) == 0 {
		t.Error("another retry status made no difference")
	}
}
