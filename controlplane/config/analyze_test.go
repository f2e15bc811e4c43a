package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	cfgs, err := Decode("mesh.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Analyze(cfgs) {
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

func TestCheckPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", docs(seYAML("x", "x.com"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"))
	write("b/b.yaml", seYAML("x", "other.com")) // x again: a.yaml came first
	write("c.yaml", "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: why}\nspec:\n  ports: [{number: 80, name: http}]\n")
	write(".hidden/d.yaml", "not: [valid")
	write("notes.txt", "ignored")
	r := CheckPaths([]string{dir, filepath.Join(dir, "a.yaml"), filepath.Join(dir, "missing")}, Decoder{})
	if len(r.Files) != 3 {
		t.Errorf("files = %v, want a.yaml, b/b.yaml, c.yaml once each", r.Files)
	}
	if len(r.Configs) != 1 || r.Configs[0].Key() != seKey("x") || r.Configs[0].Source != filepath.Join(dir, "a.yaml") {
		t.Errorf("configs = %v, want x from a.yaml", r.Configs)
	}
	var errs []string
	for _, e := range r.Errors {
		errs = append(errs, e.Error())
	}
	all := strings.Join(errs, "\n")
	for _, want := range []string{"missing: no such file", "b.yaml: ServiceEntry default/x is already defined in " + filepath.Join(dir, "a.yaml"), "c.yaml:4: ServiceEntry default/why: spec.hosts: is required"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors lack %q:\n%s", want, all)
		}
	}
	if len(r.Errors) != 3 {
		t.Errorf("%d errors, want 3:\n%s", len(r.Errors), all)
	}
	if len(r.Skipped) != 1 || r.Skipped[0].Kind != "ConfigMap" {
		t.Errorf("skipped = %v", r.Skipped)
	}
}
