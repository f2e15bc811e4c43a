package model

import (
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

func TestExportedTo(t *testing.T) {
	tests := []struct {
		exportTo []string
		from     string
		want     bool
	}{
		{nil, "other", true},
		{[]string{"*"}, "other", true},
		{[]string{"."}, "shop", true},
		{[]string{"."}, "other", false},
		{[]string{"~"}, "shop", false},
		{[]string{"team-a"}, "team-a", true},
		{[]string{"team-a"}, "shop", false},
		{[]string{".", "team-a"}, "team-a", true},
		{[]string{".", "team-a"}, "team-b", false},
	}
	for _, tc := range tests {
		if got := ExportedTo(tc.exportTo, "shop", tc.from); got != tc.want {
			t.Errorf("ExportedTo(%v, shop, %s) = %v, want %v", tc.exportTo, tc.from, got, tc.want)
		}
	}
}

func sidecarCfg(ns, name string, age time.Duration, sel map[string]string) *istioconfig.Config {
	sc := &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}}
	if sel != nil {
		sc.WorkloadSelector = &networking.WorkloadSelector{Labels: sel}
	}
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Namespace: ns, Name: name,
		CreationTimestamp: time.Unix(1000, 0).Add(-age)}, Spec: sc}
}

func TestSelectSidecar(t *testing.T) {
	all := []*istioconfig.Config{
		sidecarCfg("istio-system", "mesh-default", time.Hour, nil),
		sidecarCfg("istio-system", "selected-elsewhere", time.Hour, map[string]string{"app": "web"}),
		sidecarCfg("shop", "ns-default", time.Minute, nil),
		sidecarCfg("shop", "ns-default-older", 2*time.Minute, nil),
		sidecarCfg("shop", "web", time.Minute, map[string]string{"app": "web"}),
		sidecarCfg("shop", "web-v2", 2*time.Minute, map[string]string{"app": "web", "version": "v2"}),
		{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Namespace: "shop", Name: "not-a-sidecar"}, Spec: &networking.Gateway{}},
	}
	tests := []struct {
		name   string
		ns     string
		labels map[string]string
		want   string
	}{
		{"selector match beats the namespace default", "shop", map[string]string{"app": "web"}, "web"},
		{"the oldest of several matching selectors", "shop", map[string]string{"app": "web", "version": "v2"}, "web-v2"},
		{"no match: the oldest namespace default", "shop", map[string]string{"app": "db"}, "ns-default-older"},
		{"no Sidecar in the namespace: the root default", "other", map[string]string{"app": "web"}, "mesh-default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SelectSidecar(all, tc.ns, tc.labels, "istio-system")
			if got == nil || got.Name != tc.want {
				t.Errorf("got %v, want %s", got, tc.want)
			}
		})
	}
	if got := SelectSidecar(all[2:], "other", nil, "istio-system"); got != nil {
		t.Errorf("no root default: got %s, want nil (the whole mesh)", got.Name)
	}
}

func TestSidecarImports(t *testing.T) {
	sc := &networking.Sidecar{Egress: []*networking.IstioEgressListener{
		{Hosts: []string{"./*", "istio-system/*", "~./secret.shop.svc.cluster.local"}},
		{Port: &networking.SidecarPort{Number: 443}, Hosts: []string{"*/*.example.com", "~/internal.example.com",
			"team-a/ratings.team-a.svc.cluster.local", "~istio-system/istiod.istio-system.svc.cluster.local"}},
		{Hosts: []string{"~/*", "team-b/*"}}, // "~/*" excludes everything this listener names
	}}
	tests := []struct {
		name, host, ns string
		exportTo       []string
		want           bool
	}{
		{"own namespace via ./*", "reviews.shop.svc.cluster.local", "shop", nil, true},
		{"named namespace", "istiod.istio-system.svc.cluster.local", "istio-system", nil, true},
		{"other namespace not listed", "db.team-b.svc.cluster.local", "team-b", nil, false},
		{"wildcard suffix in any namespace", "api.example.com", "external", nil, true},
		{"the suffix alone does not match", "example.com", "external", nil, false},
		{"exact host in a namespace", "ratings.team-a.svc.cluster.local", "team-a", nil, true},
		{"another host of that namespace", "other.team-a.svc.cluster.local", "team-a", nil, false},
		{"listed but not exported to shop", "api.example.com", "external", []string{"."}, false},
		{"exported to shop by name", "api.example.com", "external", []string{"shop"}, true},
		{"case-insensitive", "API.Example.com", "external", nil, true},
		{"excluded in its namespace (~./host)", "secret.shop.svc.cluster.local", "shop", nil, false},
		{"excluded in any namespace (~/host)", "internal.example.com", "external", nil, false},
		{"excluded in one listener, imported by another", "istiod.istio-system.svc.cluster.local", "istio-system", nil, true},
		{"~/* beside an import in one listener", "db.team-b.svc.cluster.local", "team-b", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SidecarImports(sc, "shop", tc.host, tc.ns, tc.exportTo); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if !SidecarImports(nil, "shop", "x.team-b.svc.cluster.local", "team-b", nil) {
		t.Error("no Sidecar: every exported service is visible")
	}
	if SidecarImports(nil, "shop", "x.team-b.svc.cluster.local", "team-b", []string{"~"}) {
		t.Error("no Sidecar: a service exported nowhere is still hidden")
	}
}

func TestParseEgressHost(t *testing.T) {
	tests := []struct {
		in     string
		want   EgressHost
		wantOK bool
	}{
		{"./*", EgressHost{Namespace: "shop", Host: "*"}, true},
		{"*/a.com", EgressHost{Namespace: "*", Host: "a.com"}, true},
		{"~/*", EgressHost{Namespace: "*", Host: "*", Exclude: true}, true},
		{"~team-a/x.com", EgressHost{Namespace: "team-a", Host: "x.com", Exclude: true}, true},
		{"~./x", EgressHost{Namespace: "shop", Host: "x", Exclude: true}, true},
		{"~*/x", EgressHost{Namespace: "*", Host: "x", Exclude: true}, true},
		{"team-a/*.b.com", EgressHost{Namespace: "team-a", Host: "*.b.com"}, true},
		{"a.com", EgressHost{}, false},
		{"ns/", EgressHost{}, false},
	}
	for _, tc := range tests {
		got, ok := ParseEgressHost(tc.in, "shop")
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("ParseEgressHost(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
	if egressImports([]EgressHost{{Namespace: "*", Host: "*", Exclude: true}}, "a.com", "x", 0) {
		t.Error("~/* must import nothing")
	}
}

// FuzzParseEgressHost: any string parses or is refused without a panic; a parsed entry keeps
// the host text after the first slash, and matching never panics.
func FuzzParseEgressHost(f *testing.F) {
	for _, s := range []string{"./*", "*/*.a.com", "~/*", "ns/x", "x", "/", "a/b/c"} {
		f.Add(s, "web.shop.svc.cluster.local")
	}
	f.Fuzz(func(t *testing.T, s, host string) {
		e, ok := ParseEgressHost(s, "shop")
		if !ok {
			return
		}
		if i := strings.IndexByte(s, '/'); i < 0 || e.Host != s[i+1:] || e.Host == "" {
			t.Fatalf("ParseEgressHost(%q) = %+v", s, e)
		}
		_ = e.Matches(host, "shop")
	})
}
