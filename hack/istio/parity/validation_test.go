package parity_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/istioconfig"
)

// mutation sets one field of a corpus object (or removes it) and asks whether the result is
// valid. path is dotted from the object's root, with [i] for a list index (i may be the list's
// length, to append); missing maps on the way are created. value is YAML; "~delete" removes the
// field. base picks the object (namespace/name) among the corpus's objects of kind, else the
// first of them in file order.
type mutation struct {
	kind, base, path, value string
	// differs says why istiod and xdslab decide this mutation differently, on purpose: the
	// test then requires that they do (a difference that went away must leave the list).
	differs string
	// errAt is the field xdslab's error must name when the mutation makes another field
	// wrong (a unix socket address and the entry's ports); empty: the mutated one.
	errAt string
}

// fileCase is a whole file both sides read, for what a file holds beside its objects (document
// markers, Lists).
type fileCase struct {
	name, yaml string
	differs    string
}

// TestValidationWithIstio checks xdslab's decoder and validation against istiod's file source
// (crd.ParseInputs, which runs each schema's ValidateConfig: a file with an invalid object is
// refused whole): each mutation changes one field of a corpus object, and both must admit or
// both refuse the result. What it prints for a difference is each side's verdict and error.
// xdslab's refusal must also name the field to fix: the mutated one or one that holds it
// (errAt when the mutation makes another field wrong). istiod's messages are prose, so which
// field they blame is not compared.
//
//	go test -count=1 -run TestValidationWithIstio ./parity/
func TestValidationWithIstio(t *testing.T) {
	objs := corpusObjects(t)
	for _, m := range slices.Concat(validationMutations, validationMutations2, validationMutations3) {
		name := m.kind + " " + m.path + "=" + m.value
		t.Run(name, func(t *testing.T) {
			base := pickBase(objs, m)
			if base == nil {
				t.Fatalf("no corpus %s%s to mutate", m.kind, cond(m.base != "", " "+m.base, ""))
			}
			obj := deepCopy(base)
			if err := setPath(obj, m.path, m.value); err != nil {
				t.Fatalf("%s %s: %v", m.kind, objName(base), err)
			}
			y, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			oerr := compareVerdicts(t, string(y), m.differs)
			// A refusal names the field to fix: the mutated one, or one that holds it.
			if oerr != nil && m.differs == "" {
				if at := cmp.Or(m.errAt, m.path); !namesPathOrAncestor(oerr.Error(), at) {
					t.Errorf("xdslab refuses the mutation without naming %s or a field that holds it: %v", at, oerr)
				}
			}
		})
	}
	for _, f := range validationFiles {
		t.Run("file "+f.name, func(t *testing.T) {
			_ = compareVerdicts(t, f.yaml, f.differs)
		})
	}
}

// compareVerdicts decodes y on both sides and fails when they disagree (unless differs says
// why they must) or agree although differs says they should not; it returns xdslab's error.
func compareVerdicts(t *testing.T, y, differs string) error {
	t.Helper()
	icfgs, _, ierr := crd.ParseInputs(y)
	odec, oerr := config.Decoder{}.DecodeAll("mutated.yaml", []byte(y))
	istioOK, oursOK := ierr == nil, oerr == nil
	// Both admit: they must read the same objects of the kinds xdslab reads too (a file
	// source that stops early admits the file and drops the rest).
	var iobjs, oobjs []string
	for _, c := range icfgs {
		if !slices.Contains(istioconfig.Kinds(), istioconfig.Kind(c.GroupVersionKind.Kind)) {
			continue // a kind xdslab does not read (it skips the document)
		}
		iobjs = append(iobjs, c.GroupVersionKind.Kind+" "+cmp.Or(c.Namespace, config.DefaultNamespace)+"/"+c.Name)
	}
	for _, c := range odec.Configs {
		oobjs = append(oobjs, string(c.Kind)+" "+c.Namespace+"/"+c.Name)
	}
	slices.Sort(iobjs)
	slices.Sort(oobjs)
	if istioOK && oursOK && !slices.Equal(iobjs, oobjs) {
		istioOK = false // a difference: report it as one
		ierr = fmt.Errorf("both admit, but istiod reads %q and xdslab %q", iobjs, oobjs)
	}
	switch {
	case istioOK == oursOK && differs != "":
		t.Errorf("istiod and xdslab now agree (admitted: %v; %v; %v), but the test lists a difference (%s): remove it from the list\n%s", istioOK, ierr, oerr, differs, y)
	case istioOK != oursOK && differs == "":
		t.Errorf("istiod admits: %v (%v); xdslab admits: %v (%v)\n%s", istioOK, ierr, oursOK, oerr, y)
	}
	return oerr
}

func cond(b bool, a, c string) string {
	if b {
		return a
	}
	return c
}

// corpusObjects reads every document of testdata/mesh, in file order.
func corpusObjects(t *testing.T) []map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "mesh", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := kubeyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var m map[string]any
			if err := d.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m != nil {
				out = append(out, m)
			}
		}
	}
	return out
}

func objName(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	n, _ := md["name"].(string)
	return ns + "/" + n
}

// pickBase returns the object m mutates: of m.kind, named m.base if set, and holding every
// list index m.path names (so a path into a route or a server finds an object that has it).
func pickBase(objs []map[string]any, m mutation) map[string]any {
	for _, o := range objs {
		if o["kind"] != m.kind || (m.base != "" && objName(o) != m.base) {
			continue
		}
		if setPath(deepCopy(o), m.path, m.value) == nil {
			return o
		}
	}
	return nil
}

func deepCopy(o map[string]any) map[string]any {
	b, err := yaml.Marshal(o)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// setPath sets (or, for "~delete", removes) the field path names in o.
func setPath(o map[string]any, path, value string) error {
	var v any
	del := value == "~delete"
	if !del {
		if err := yaml.Unmarshal([]byte(value), &v); err != nil {
			return err
		}
	}
	var cur any = o
	segs := splitPath(path)
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if del {
					delete(c, s)
				} else {
					c[s] = v
				}
				return nil
			}
			next, ok := c[s]
			if !ok || next == nil {
				if _, isIdx := index(segs[i+1]); isIdx {
					return errors.New("no list " + s)
				}
				next = map[string]any{}
				c[s] = next
			}
			cur = next
		case []any:
			n, ok := index(s)
			if !ok || n > len(c) || (n == len(c) && !last) {
				return errors.New("no index " + s)
			}
			if last {
				switch {
				case del:
					return errors.New("cannot delete a list item")
				case n == len(c):
					// Appending needs the parent to hold the new slice: not supported.
					return errors.New("cannot append")
				default:
					c[n] = v
				}
				return nil
			}
			cur = c[n]
		default:
			return errors.New("not a map or list at " + s)
		}
	}
	return nil
}

func splitPath(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ".") {
		for {
			open := strings.Index(part, "[")
			if open < 0 {
				break
			}
			if open > 0 {
				out = append(out, part[:open])
			}
			end := strings.Index(part, "]")
			out = append(out, part[open:end+1])
			part = part[end+1:]
		}
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

func index(s string) (int, bool) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return 0, false
	}
	n, err := strconv.Atoi(s[1 : len(s)-1])
	return n, err == nil
}

// namesPathOrAncestor says whether msg names path (dotted, with [i]) or one of the fields that
// hold it, the top level (spec) excepted.
func namesPathOrAncestor(msg, path string) bool {
	for p := path; strings.ContainsAny(p, ".["); {
		if strings.Contains(msg, p) {
			return true
		}
		p = p[:strings.LastIndexAny(p, ".[")]
	}
	return strings.Contains(msg, path)
}
