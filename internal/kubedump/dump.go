package kubedump

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xdslab/xdslab/scenarios"
)

// File is one input file of a dump.
type File struct {
	// Name names the file in errors (its path as the user gave it).
	Name string
	Data []byte
}

// Object is one Kubernetes object of a dump, with where it was written.
type Object struct {
	File       string
	Line       int
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Raw is the whole object as decoded (maps, lists, strings, numbers, booleans).
	Raw  map[string]any
	node *yaml.Node
}

// String names the object as errors do: "Kind namespace/name".
func (o *Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// lineOf returns the line of the value at the path of mapping keys under the object (the
// object's line when the path is not written).
func (o *Object) lineOf(keys ...string) int {
	n := o.node
	line := o.Line
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
				line = n.Content[i].Line
				break
			}
		}
		n = next
	}
	return line
}

// Dump is every object of a dump, in file order.
type Dump struct {
	// Files names every file read, in order.
	Files   []string
	Objects []*Object
}

// Error is one problem in a dump, "file:line: Kind ns/name: msg; fix": the scenario loader's
// error, its Path naming the object (Kind ns/name) and Col unused.
type Error = scenarios.Error

// Errors is every problem found, sorted by file and line.
type Errors = scenarios.Errors

// maxErrors caps the errors reported for one dump.
const maxErrors = 100

type errList struct{ es Errors }

func (l *errList) add(file string, line int, obj, fix, format string, a ...any) {
	if len(l.es) < maxErrors {
		l.es = append(l.es, &Error{File: file, Line: line, Path: obj, Msg: fmt.Sprintf(format, a...), Fix: fix})
	}
}

func (l *errList) at(o *Object, line int, fix, format string, a ...any) {
	l.add(o.File, line, o.String(), fix, format, a...)
}

func (l *errList) err() error {
	if len(l.es) == 0 {
		return nil
	}
	sort.SliceStable(l.es, func(i, j int) bool {
		if l.es[i].File != l.es[j].File {
			return l.es[i].File < l.es[j].File
		}
		return l.es[i].Line < l.es[j].Line
	})
	return l.es
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse reads every file of a dump: YAML documents (or JSON, which is YAML), each an object or
// a list (kind List, or any kind ending in List, with items). It reports every malformed
// document and object at once; an object needs apiVersion, kind and metadata.name, and a
// namespaced dump (kubectl get -A) gives every object its metadata.namespace.
func Parse(files []File) (*Dump, error) {
	d := &Dump{}
	var errs errList
	for _, f := range files {
		d.Files = append(d.Files, f.Name)
		parseFile(f, d, &errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return d, nil
}

func parseFile(f File, d *Dump, errs *errList) {
	data := bytes.TrimPrefix(f.Data, []byte("\xef\xbb\xbf"))
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			line, msg := 0, err.Error()
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				line, _ = strconv.Atoi(m[1])
				msg = m[2]
			} else if rest, ok := strings.CutPrefix(msg, "yaml: "); ok && !scenarios.YAMLReaderError(rest) {
				// The YAML parser leaves the line out when it is the stream's first.
				line, msg = 1, rest
			}
			errs.add(f.Name, line, "", "fix the YAML (kubectl get ... -o yaml writes it well-formed; was the file cut or edited?)", "malformed YAML: %s", msg)
			return // the decoder cannot resynchronize after a syntax error
		}
		n := &doc
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				continue
			}
			n = n.Content[0]
		}
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			continue // an empty document
		}
		if bad, line := plain(n, 0); bad != "" {
			errs.add(f.Name, line, "", "write the dump with kubectl get ... -o yaml, which uses neither", "%s", bad)
			continue
		}
		parseObject(f.Name, n, d, errs, true)
	}
}

func parseObject(file string, n *yaml.Node, d *Dump, errs *errList, allowList bool) {
	const objFix = "each document (and each item of a List) is a Kubernetes object with apiVersion, kind and metadata"
	if n.Kind != yaml.MappingNode {
		errs.add(file, n.Line, "", objFix, "expected an object (a mapping), got %s", describe(n))
		return
	}
	var raw map[string]any
	if err := n.Decode(&raw); err != nil {
		errs.add(file, n.Line, "", "fix the YAML", "cannot read the object: %v", err)
		return
	}
	o := &Object{File: file, Line: n.Line, Raw: raw, node: n}
	o.APIVersion, _ = raw["apiVersion"].(string)
	o.Kind, _ = raw["kind"].(string)
	if o.Kind == "" {
		errs.add(file, n.Line, "", objFix, "object without kind")
		return
	}
	if items, isList := raw["items"]; allowList && (o.Kind == "List" || strings.HasSuffix(o.Kind, "List")) && isList {
		var itemsNode *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "items" {
				itemsNode = n.Content[i+1]
			}
		}
		if items == nil {
			return // an empty list: kubectl prints items: []
		}
		if itemsNode == nil || itemsNode.Kind != yaml.SequenceNode {
			errs.add(file, n.Line, "", "write items as a list of objects", "%s items is not a list", o.Kind)
			return
		}
		for _, it := range itemsNode.Content {
			parseObject(file, it, d, errs, false)
		}
		return
	}
	if o.APIVersion == "" {
		errs.add(file, n.Line, o.Kind, objFix, "object without apiVersion")
		return
	}
	meta, _ := raw["metadata"].(map[string]any)
	o.Name, _ = meta["name"].(string)
	o.Namespace, _ = meta["namespace"].(string)
	if o.Name == "" {
		errs.add(file, o.lineOf("metadata"), o.Kind, "give it metadata.name (kubectl get -o yaml always does; was the object edited?)", "%s without metadata.name", o.Kind)
		return
	}
	d.Objects = append(d.Objects, o)
}

// maxDepth bounds the nesting of a document (Kubernetes objects nest a few dozen levels).
const maxDepth = 100

// plain checks that a document has no aliases (kubectl never writes them, and they would let a
// few bytes expand to gigabytes) and nests at most maxDepth levels; it returns the problem and
// its line.
func plain(n *yaml.Node, depth int) (string, int) {
	if depth > maxDepth {
		return fmt.Sprintf("nesting deeper than %d levels", maxDepth), n.Line
	}
	if n.Kind == yaml.AliasNode {
		return "YAML alias *" + n.Value, n.Line
	}
	for _, c := range n.Content {
		if bad, line := plain(c, depth+1); bad != "" {
			return bad, line
		}
	}
	return "", 0
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "the value " + strconv.Quote(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

// decodeInto reads an object into a typed value (k8s.io/api types, by their JSON names).
func decodeInto(o *Object, v any) error {
	js, err := json.Marshal(o.Raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(js, v)
}
