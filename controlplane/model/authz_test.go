package model

import (
	"testing"

	"github.com/xdslab/xdslab/istioconfig"
	securityapi "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
)

// Which proxies an AuthorizationPolicy selects: root namespace or the proxy's, selector a subset
// of its labels, no targetRef; a proxyless gRPC workload too (its server listeners' RBAC), but
// no RequestAuthentication selects it.
func TestAuthorizationPolicySelects(t *testing.T) {
	ap := func(ns string, sel map[string]string, target bool) *istioconfig.Config {
		spec := &securityapi.AuthorizationPolicy{}
		if sel != nil {
			spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: sel}
		}
		if target {
			spec.TargetRefs = []*typev1beta1.PolicyTargetReference{{Kind: "Service", Name: "a"}}
		}
		return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindAuthorizationPolicy, Name: "p", Namespace: ns}, Spec: spec}
	}
	web := &Proxy{Type: SidecarProxy, Namespace: "app", Labels: map[string]string{"app": "web", "v": "1"}}
	router := &Proxy{Type: Router, Namespace: "gw", Labels: map[string]string{"istio": "ingressgateway"}}
	grpc := &Proxy{Type: SidecarProxy, Namespace: "app", Labels: map[string]string{"app": "web"}, Generator: GeneratorGRPC}
	tests := []struct {
		name string
		c    *istioconfig.Config
		p    *Proxy
		want bool
		ra   bool // what RequestAuthenticationSelects says of the same scope
	}{
		{"namespace-wide", ap("app", nil, false), web, true, true},
		{"mesh-wide", ap(RootNamespace, nil, false), web, true, true},
		{"mesh-wide reaches routers", ap(RootNamespace, nil, false), router, true, true},
		{"other namespace", ap("shop", nil, false), web, false, false},
		{"selector subset", ap("app", map[string]string{"app": "web"}, false), web, true, true},
		{"selector mismatch", ap("app", map[string]string{"app": "web", "v": "2"}, false), web, false, false},
		{"root selector applies in any namespace", ap(RootNamespace, map[string]string{"istio": "ingressgateway"}, false), router, true, true},
		{"targetRef", ap("app", nil, true), web, false, false},
		{"proxyless gRPC", ap("app", nil, false), grpc, true, false},
		{"nil config", nil, web, false, false},
	}
	for _, tt := range tests {
		if got := AuthorizationPolicySelects(tt.c, tt.p); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
		// A RequestAuthentication with the same scope selects the same proxies.
		var ra *istioconfig.Config
		if tt.c != nil {
			ap := tt.c.Spec.(*securityapi.AuthorizationPolicy)
			ra = &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindRequestAuthentication, Name: "r", Namespace: tt.c.Namespace},
				Spec: &securityapi.RequestAuthentication{Selector: ap.Selector, TargetRefs: ap.TargetRefs}}
		}
		if got := RequestAuthenticationSelects(ra, tt.p); got != tt.ra {
			t.Errorf("RequestAuthentication %s: %v, want %v", tt.name, got, tt.ra)
		}
		if tt.c != nil && (RequestAuthenticationSelects(tt.c, tt.p) || AuthorizationPolicySelects(ra, tt.p)) {
			t.Errorf("%s: a selector function accepted the other kind", tt.name)
		}
	}
}

func TestParseJwksURI(t *testing.T) {
	for _, tc := range []struct {
		uri, host string
		port      int
		err       bool
	}{
		{"https://k.example.com/keys", "k.example.com", 443, false},
		{"http://k.example.com/keys", "k.example.com", 80, false},
		{"https://k.example.com:8443/keys", "k.example.com", 8443, false},
		{"ftp://k.example.com/keys", "", 0, true},
		{"https://k.example.com:x/keys", "", 0, true},
		{"::", "", 0, true},
	} {
		host, port, err := ParseJwksURI(tc.uri)
		if (err != nil) != tc.err || host != tc.host || port != tc.port {
			t.Errorf("ParseJwksURI(%q) = %q %d %v", tc.uri, host, port, err)
		}
	}
}
