package validate_test

import (
	"strings"
	"testing"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/config/validate"
)

func TestAnalyzeGatewayRefs(t *testing.T) {
	in := docs(
		"apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: ingress, namespace: istio-system}\nspec:\n  selector: {istio: ingressgateway}\n  servers:\n  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: ['*/*.example.com']\n",
		// Bound by namespace/name, the legacy form and mesh (fine); a missing gateway by
		// namespace/name, a bare name resolved in the VirtualService's namespace, and in a match.
		"apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: app, namespace: shop}\nspec:\n  hosts: [app.example.com]\n"+
			"  gateways: [istio-system/ingress, ingress.istio-system.svc.cluster.local, mesh, istio-system/egress, ingress]\n"+
			"  http:\n  - match: [{gateways: [istio-system/other]}]\n    route:\n    - destination: {host: app}\n",
	)
	cfgs, err := config.Decode("gw.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range validate.Analyze(cfgs) {
		got = append(got, f.String())
	}
	want := []string{
		`gw.yaml: VirtualService shop/app: spec.gateways[3]: gateway "istio-system/egress" (istio-system/egress) is not defined by any Gateway`,
		`gw.yaml: VirtualService shop/app: spec.gateways[4]: gateway "ingress" (shop/ingress) is not defined by any Gateway`,
		`gw.yaml: VirtualService shop/app: spec.http[0].match[0].gateways[0]: gateway "istio-system/other" (istio-system/other) is not defined`,
	}
	if len(got) != len(want) {
		t.Fatalf("findings:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}

func TestAnalyzeGatewayPorts(t *testing.T) {
	gw := func(name, selector, servers string) string {
		return "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: " + name + ", namespace: istio-system}\nspec:\n  selector: " + selector + "\n  servers:\n" + servers
	}
	const (
		http80   = "  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: ['*']\n"
		tcp80    = "  - port: {number: 80, name: tcp, protocol: TCP}\n    hosts: ['*']\n"
		pass443  = "  - port: {number: 443, name: tls, protocol: TLS}\n    hosts: ['*']\n    tls: {mode: PASSTHROUGH}\n"
		tcp443   = "  - port: {number: 443, name: tcp, protocol: TCP}\n    hosts: ['*']\n"
		http81   = "  - port: {number: 81, name: http-81, protocol: HTTP}\n    hosts: ['*']\n"
		https443 = "  - port: {number: 443, name: https, protocol: HTTPS}\n    hosts: [a.example.com]\n    tls: {mode: SIMPLE, credentialName: a-cert}\n"
	)
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"same selector, HTTP and TCP on one port", []string{
			gw("a", "{istio: ingressgateway}", http80), gw("b", "{istio: ingressgateway}", tcp80)},
			[]string{`Gateway istio-system/b: spec.servers[0].port.number: port 80 is TCP here but HTTP in Gateway istio-system/a (servers[0]), and a router labelled istio=ingressgateway gets both`}},
		{"one Gateway, passthrough and TCP", []string{gw("a", "{istio: ingressgateway}", pass443+tcp443)},
			[]string{`Gateway istio-system/a: spec.servers[1].port.number: port 443 is TCP here but TLS passthrough in the same Gateway`}},
		{"overlapping selectors", []string{
			gw("a", "{istio: ingressgateway}", http80), gw("b", "{app: edge}", tcp80)},
			[]string{`port 80 is TCP here but HTTP in Gateway istio-system/a (servers[0]), and a router labelled app=edge,istio=ingressgateway gets both`}},
		{"disjoint selectors", []string{
			gw("a", "{istio: ingressgateway}", http80), gw("b", "{istio: egressgateway}", tcp80)}, nil},
		{"HTTPS and TLS passthrough share a port (SNI)", []string{
			gw("a", "{istio: ingressgateway}", https443), gw("b", "{istio: ingressgateway}", pass443)}, nil},
		{"same kind or other port", []string{
			gw("a", "{istio: ingressgateway}", http80+http81), gw("b", "{istio: ingressgateway}", http80)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgs, err := config.Decode("gw.yaml", []byte(docs(tc.in...)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range validate.Analyze(cfgs) {
				got = append(got, f.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i := range tc.want {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("finding %d:\n got %s\nwant …%s…", i, got[i], tc.want[i])
				}
			}
		})
	}
}
