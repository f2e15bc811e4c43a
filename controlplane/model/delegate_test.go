package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/istioconfig"
)

// TestMergeDelegatesGateways: match gateways are compared as istiod compares them, each side's
// short names resolved in its own namespace first ("gw" and "./gw" of namespace a are a/gw), so
// a delegate route on the root route's gateway is kept, and one on another gateway dropped.
func TestMergeDelegatesGateways(t *testing.T) {
	vs := func(name, ns string, spec *networking.VirtualService) *istioconfig.Config {
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: name, Namespace: ns}, Spec: spec}
	}
	route := func(gws ...string) *networking.HTTPRoute {
		return &networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{{Gateways: gws}},
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "shop"}}}}
	}
	tests := []struct {
		name         string
		rootGateways []string
		delegateNS   string
		delegate     []string
		want         []string // the merged route's match gateways; nil: dropped
	}{
		{"short names in one namespace", []string{"gw"}, "a", []string{"gw"}, []string{"a/gw"}},
		{"root short, delegate qualified", []string{"gw"}, "b", []string{"a/gw"}, []string{"a/gw"}},
		{"root ./, delegate short in the same namespace", []string{"./gw"}, "a", []string{"gw"}, []string{"a/gw"}},
		{"delegate ./ in its own namespace", []string{"a/gw"}, "b", []string{"./gw"}, nil},
		{"delegate ./ in the root's namespace", []string{"a/gw"}, "a", []string{"./gw"}, []string{"a/gw"}},
		{"another gateway", []string{"gw"}, "a", []string{"other"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := vs("root", "a", &networking.VirtualService{Hosts: []string{"shop.example.com"}, Gateways: []string{"a/gw"},
				Http: []*networking.HTTPRoute{{Match: []*networking.HTTPMatchRequest{{Gateways: tt.rootGateways}},
					Delegate: &networking.Delegate{Name: "d", Namespace: tt.delegateNS}}}})
			d := vs("d", tt.delegateNS, &networking.VirtualService{Http: []*networking.HTTPRoute{route(tt.delegate...)}})
			out, issues := MergeDelegates([]*istioconfig.Config{root, d})
			if len(out) != 1 {
				t.Fatalf("got %d VirtualServices, want the root", len(out))
			}
			http := out[0].Spec.(*networking.VirtualService).GetHttp()
			if tt.want == nil {
				if len(http) != 0 || len(issues) != 1 {
					t.Fatalf("routes %v, issues %v: want the delegate route dropped", http, issues)
				}
				return
			}
			if len(http) != 1 || len(issues) != 0 {
				t.Fatalf("routes %v, issues %v: want one merged route", http, issues)
			}
			if diff := cmp.Diff(tt.want, http[0].GetMatch()[0].GetGateways()); diff != "" {
				t.Errorf("merged match gateways (-want +got):\n%s", diff)
			}
			// The root is not modified.
			if got := root.Spec.(*networking.VirtualService).GetHttp()[0].GetMatch()[0].GetGateways(); !cmp.Equal(got, tt.rootGateways) {
				t.Errorf("root's gateways became %v", got)
			}
		})
	}
}
