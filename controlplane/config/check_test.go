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
