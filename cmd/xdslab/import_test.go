package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/bench/run"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/simulator"
)

// TestImportExample: xdslab import on the example dump writes the checked-in scenario, which
// loads, and the simulator built from it has the dump's services, endpoint counts per service
// and Istio objects.
func TestImportExample(t *testing.T) {
	t.Chdir("../..")
	out := filepath.Join(t.TempDir(), "imported.yaml")
	var stdout, stderr bytes.Buffer
	if err := runImport(&stdout, &stderr, []string{"examples/import/dump"}, importOptions{out: out, name: "imported"}); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"11 services, 23 endpoints in 3 namespaces, 11 Istio objects", "not modelled (counted, left out): ConfigMap ×1\n", "wrote " + out} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("examples/import/imported.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, golden) {
		t.Error("xdslab import examples/import/dump differs from examples/import/imported.yaml (go test ./internal/kubedump -run TestGolden -update)")
	}
	sc, err := scenarios.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulator.New(run.SimConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	// The dump's ready endpoints per service, counted from its EndpointSlices by hand.
	want := map[string]int{
		"bookinfo/productpage": 2, "bookinfo/details": 2, "bookinfo/reviews": 5, "bookinfo/ratings": 2,
		"shop/frontend": 2, "shop/cart": 2, "shop/checkout": 2, "shop/payments": 2, "shop/redis": 1,
		"istio-system/istiod": 1, "istio-system/istio-ingressgateway": 2,
	}
	got2 := map[string]int{}
	verbatim := 0
	for _, c := range sim.Initial() {
		if c.Labels[simulator.ServiceLabel] == "" {
			verbatim++
			continue
		}
		got2[c.Namespace+"/"+c.Name] = len(c.Spec.(*networking.ServiceEntry).Endpoints)
	}
	if len(got2) != len(want) {
		t.Errorf("simulated services %v, want %v", got2, want)
	}
	for k, n := range want {
		if got2[k] != n {
			t.Errorf("%s: %d endpoints simulated, want %d", k, got2[k], n)
		}
	}
	// The dump's Istio objects, its AuthorizationPolicy and RequestAuthentication among them
	// (the control plane generates RBAC and JWT filters from them).
	if verbatim != 11 {
		t.Errorf("%d verbatim objects simulated, want 11", verbatim)
	}
}

// TestImportBadDump: a malformed dump exits 2 naming file:line and the fix; a kind the lab
// does not model is only counted.
func TestImportBadDump(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Service\nmetadata:\n  namespace: a\nspec: {ports: [{port: 80}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := runCLI(t.Context(), []string{"import", bad}); code != exitUsage {
		t.Errorf("bad dump: exit %d, want %d", code, exitUsage)
	}
	var stdout, stderr bytes.Buffer
	err := runImport(&stdout, &stderr, []string{bad}, importOptions{name: "x"})
	if err == nil || !strings.Contains(err.Error(), bad+":3: Service: Service without metadata.name; give it metadata.name") {
		t.Errorf("error %v, want %s:3 and the fix", err, bad)
	}
	if code := runCLI(t.Context(), []string{"import", filepath.Join(dir, "missing.yaml")}); code != exitUsage {
		t.Errorf("missing file: exit %d, want %d", code, exitUsage)
	}
	if code := runCLI(t.Context(), []string{"import", dir, "--salt", "s"}); code != exitUsage {
		t.Errorf("--salt without --anonymize: exit %d, want %d", code, exitUsage)
	}
	if code := runCLI(t.Context(), []string{"import", "--name", "Bad_Name", "../../examples/import/dump"}); code != exitUsage {
		t.Errorf("bad --name: exit %d, want %d", code, exitUsage)
	}
}

// TestImportBugReport: an extracted istioctl bug-report's cluster files (no extension) are read
// from a directory.
func TestImportBugReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bug-report", "cluster")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"k8s-resources":   "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: a}, spec: {ports: [{name: http, port: 80}]}}\n",
		"crs":             "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: networking.istio.io/v1, kind: DestinationRule, metadata: {name: web, namespace: a}, spec: {host: web}}\n",
		"secrets":         "NAME   TYPE   DATA   AGE\nx      Opaque 1      1d\n", // a table: not read
		"kubectl-version": "Client Version: v1.34.0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := runImport(&stdout, &stderr, []string{filepath.Dir(dir)}, importOptions{name: "br"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "1 services, 0 endpoints in 1 namespaces, 1 Istio objects") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if _, err := scenarios.LoadBytes("br.yaml", stdout.Bytes()); err != nil {
		t.Fatal(err)
	}
}
