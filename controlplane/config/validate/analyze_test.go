package validate_test

import (
	"strings"
	"testing"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/controlplane/config/validate"
)

func TestAnalyzeSubsets(t *testing.T) {
	in := docs(
		"apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: reviews, namespace: shop}\nspec:\n  host: reviews\n  subsets: [{name: v1, labels: {version: v1}}]\n",
		// Routes to v1 (defined, by the short name in the same namespace and by the FQDN),
		// v2 (not defined) and a subset of a host without any DestinationRule.
		"apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: reviews, namespace: shop}\nspec:\n  hosts: [reviews]\n  http:\n"+
			"  - route:\n    - destination: {host: reviews, subset: v1}\n      weight: 50\n    - destination: {host: reviews.shop.svc.cluster.local, subset: v2}\n      weight: 50\n"+
			"  - route:\n    - destination: {host: ratings, subset: v1}\n    mirror: {host: reviews.shop.svc.cluster.local, subset: v1}\n",
		// The same short name in another namespace is another host.
		"apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: reviews, namespace: other}\nspec:\n  hosts: [reviews]\n  tcp:\n  - route:\n    - destination: {host: reviews, subset: v1}\n",
	)
	cfgs, err := config.Decode("mesh.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range validate.Analyze(cfgs) {
		got = append(got, f.String())
	}
	want := []string{
		`mesh.yaml: VirtualService other/reviews: spec.tcp[0].route[0].destination.subset: subset "v1" of host reviews: no DestinationRule defines subsets for this host`,
		`mesh.yaml: VirtualService shop/reviews: spec.http[0].route[1].destination.subset: subset "v2" of host reviews.shop.svc.cluster.local is not defined by any DestinationRule`,
		`mesh.yaml: VirtualService shop/reviews: spec.http[1].route[0].destination.subset: subset "v1" of host ratings: no DestinationRule defines subsets`,
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

// docs joins YAML documents into one stream.
func docs(ds ...string) string { return strings.Join(ds, "---\n") }
