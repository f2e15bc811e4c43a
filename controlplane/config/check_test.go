package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	for _, want := range []string{"missing: no such file", "b.yaml:1: ServiceEntry default/x is already defined in " + filepath.Join(dir, "a.yaml") + ":1:", "c.yaml:4: ServiceEntry default/why: spec.hosts: is required"} {
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

// TestDecodeSkipsOthersFields: the objects of other kinds are skipped whatever their top-level
// fields (a ConfigMap's data, a Secret's stringData), not failed as unknown fields; an Istio
// kind's unknown top-level field is still an error.
func TestDecodeSkipsOthersFields(t *testing.T) {
	in := docs("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata: {a: b}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\ntype: Opaque\n",
		"apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: x}\ndata: {a: b}\nspec: {hosts: [x.com], ports: [{number: 80, name: http}]}\n")
	res, err := Decoder{}.DecodeAll("m.yaml", []byte(in))
	if len(res.Skipped) != 2 || res.Skipped[0].Kind != "ConfigMap" || res.Skipped[1].Kind != "Secret" {
		t.Errorf("skipped = %v, want the ConfigMap and the Secret", res.Skipped)
	}
	if err == nil || !strings.Contains(err.Error(), `m.yaml:15: data: unknown field "data"`) || strings.Count(err.Error(), "unknown field") != 1 {
		t.Errorf("error %v, want only the ServiceEntry's data at line 15", err)
	}
}

// TestCheckPathsFindingLines: a finding between objects names the line of its field, found
// in the object's document by kind, namespace and name.
func TestCheckPathsFindingLines(t *testing.T) {
	dir := t.TempDir()
	root := "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: root, namespace: shop}\nspec:\n  hosts: [shop.example.com]\n  http:\n" +
		"  - route: [{destination: {host: shop.example.com}}]\n    match: [{uri: {prefix: /a}}]\n" +
		"  - match: [{uri: {prefix: /b}}]\n    delegate: {name: missing}\n"
	other := "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: root, namespace: other}\nspec:\n  hosts: [o.example.com]\n  http:\n  - route: [{destination: {host: o.example.com}}]\n"
	p := filepath.Join(dir, "vs.yaml")
	if err := os.WriteFile(p, []byte(docs(other, root)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := CheckPaths([]string{p}, Decoder{})
	if len(r.Findings) != 1 {
		t.Fatalf("findings = %v, want the missing delegate", r.Findings)
	}
	// other takes 7 lines and the separator one: root's http[1].delegate is line 8+10.
	if got := r.Findings[0].String(); !strings.HasPrefix(got, p+":18: VirtualService shop/root: spec.http[1].delegate: ") {
		t.Errorf("finding %q, want it at line 18", got)
	}
}

// TestCheckPathsFindingLinesInList: a finding of an object inside a List is at its field's
// line in the List's item, as the decoder recorded the object.
func TestCheckPathsFindingLinesInList(t *testing.T) {
	dir := t.TempDir()
	list := "apiVersion: v1\nkind: List\nitems:\n" +
		"- apiVersion: networking.istio.io/v1\n  kind: VirtualService\n  metadata: {name: root, namespace: listed}\n" +
		"  spec:\n    hosts: [l.example.com]\n    http:\n    - match: [{uri: {prefix: /b}}]\n      delegate: {name: missing}\n"
	p := filepath.Join(dir, "list.yaml")
	if err := os.WriteFile(p, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	r := CheckPaths([]string{p}, Decoder{})
	if len(r.Findings) != 1 {
		t.Fatalf("findings = %v, want the missing delegate", r.Findings)
	}
	if got := r.Findings[0].String(); !strings.HasPrefix(got, p+":11: VirtualService listed/root: spec.http[0].delegate: ") {
		t.Errorf("finding %q, want it at line 11", got)
	}
}
