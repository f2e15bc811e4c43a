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
