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

// TestAnalyzeDelegates: what istiod's VirtualService merge drops and only logs.
func TestAnalyzeDelegates(t *testing.T) {
	vs := func(ns, name, spec string) string {
		return "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n" + spec
	}
	in := docs(
		vs("front", "root", "  hosts: [shop.front.svc.cluster.local]\n  http:\n"+
			"  - match: [{uri: {prefix: /cart}}]\n    delegate: {name: cart, namespace: team}\n"+
			"  - delegate: {name: missing}\n"+
			"  - delegate: {name: hosted}\n"+
			"  - delegate: {name: private, namespace: team}\n"),
		// /cart/v2 lies within /cart, /orders does not: that route is left out.
		vs("team", "cart", "  http:\n  - match: [{uri: {prefix: /cart/v2}}]\n    route: [{destination: {host: cart-v2}}]\n  - match: [{uri: {prefix: /orders}}]\n    route: [{destination: {host: orders}}]\n"),
		vs("front", "hosted", "  hosts: [hosted.example.com]\n  http:\n  - route: [{destination: {host: hosted.example.com}}]\n"),
		vs("team", "private", "  exportTo: [.]\n  http:\n  - route: [{destination: {host: cart}}]\n"),
		vs("team", "orphan", "  http:\n  - route: [{destination: {host: cart}}]\n"),
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
		`mesh.yaml: VirtualService front/root: spec.http[0].delegate: the matches of route 1 of delegate team/cart are not within the root route's`,
		`mesh.yaml: VirtualService front/root: spec.http[1].delegate: delegate VirtualService front/missing does not exist: this route is dropped`,
		`mesh.yaml: VirtualService front/root: spec.http[2].delegate: VirtualService front/hosted has hosts, so it is not a delegate: this route is dropped`,
		`mesh.yaml: VirtualService front/root: spec.http[3].delegate: delegate VirtualService team/private is not exported to the root's namespace front`,
		`mesh.yaml: VirtualService team/orphan: spec.hosts: is empty, so this is a delegate VirtualService, and no VirtualService with hosts delegates to it`,
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

func TestParsePath(t *testing.T) {
	for _, s := range []string{"spec", "spec.http[0].delegate", "spec.http[2].match[1].headers.x-user", "spec.a[0][1].b"} {
		p, ok := validate.ParsePath(s)
		if !ok || p.String() != s {
			t.Errorf("ParsePath(%q) = %v, %v; String() %q", s, p, ok, p.String())
		}
	}
	for _, s := range []string{"", "spec..a", "spec.a[x]", "spec.a[0", "spec.a[0]b"} {
		if _, ok := validate.ParsePath(s); ok {
			t.Errorf("ParsePath(%q) ok, want not", s)
		}
	}
}
