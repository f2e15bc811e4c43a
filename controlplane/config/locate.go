package config

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdslab/xdslab/controlplane/config/validate"
)

// locator maps a path in one document to a line of its file. The document's YAML is parsed
// (with line numbers) only when an error needs a line, so good input is parsed once.
type locator struct {
	src       []byte // the document's text
	firstLine int    // file line of src[0]
	docLine   int    // file line of the document's first content
	parsed    bool
	root      *yaml.Node
}

// line returns the file line of the deepest element of p found in the document (the key's line
// for an object member), or the document's first line.
func (l *locator) line(p validate.Path) int {
	if !l.parsed {
		l.parsed = true
		var doc yaml.Node
		if err := yaml.Unmarshal(l.src, &doc); err == nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
			l.root = doc.Content[0]
		}
	}
	n := l.root
	if n == nil {
		return l.docLine
	}
	best := n.Line
	for _, e := range p {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		var next *yaml.Node
		switch e := e.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				break
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == e {
					best = n.Content[i].Line
					next = n.Content[i+1]
					break
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && e >= 0 && e < len(n.Content) {
				next = n.Content[e]
				best = next.Line
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return best + l.firstLine - 1
}

// jsonPathAt returns the path of the JSON token that starts at or spans byte offset off of js:
// an object key's path when off is on a key, else the value's path.
func jsonPathAt(js []byte, off int) validate.Path {
	type frame struct {
		object    bool
		expectKey bool
		key       string
		index     int
	}
	var stack []frame
	cur := func() validate.Path {
		p := make(validate.Path, 0, len(stack))
		for _, f := range stack {
			if f.object {
				p = append(p, f.key)
			} else {
				p = append(p, f.index)
			}
		}
		return p
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF || len(stack) == 0 {
				return nil
			}
			return cur()
		}
		end := int(dec.InputOffset())
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].object && stack[top].expectKey
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:top]
			if end > off {
				return cur()
			}
			if top > 0 && stack[top-1].object {
				stack[top-1].expectKey = true
			}
			continue
		}
		if isKey {
			stack[top].key, _ = tok.(string)
			stack[top].expectKey = false
			if end > off {
				return cur()
			}
			continue
		}
		if top >= 0 && !stack[top].object {
			stack[top].index++
		}
		if d, ok := tok.(json.Delim); ok { // '{' or '['
			if end > off {
				return cur()
			}
			stack = append(stack, frame{object: d == '{', expectKey: d == '{', index: -1})
			continue
		}
		if end > off {
			return cur()
		}
		if top >= 0 && stack[top].object {
			stack[top].expectKey = true
		}
	}
}

// byteOffset converts a 1-based line and rune column (protojson's error position) to a byte
// offset in b.
func byteOffset(b []byte, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return len(b)
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(b); c++ {
		_, size := utf8.DecodeRune(b[off:])
		off += size
	}
	return off
}

// fieldsAt returns the JSON names of the fields of the message that holds the last element of
// p (a path inside a spec of type md), for "did you mean" hints.
func fieldsAt(md protoreflect.MessageDescriptor, p validate.Path) []string {
	if len(p) == 0 {
		return nil
	}
	if md = messageAt(md, p[:len(p)-1]); md == nil {
		return nil
	}
	fs := md.Fields()
	out := make([]string, fs.Len())
	for i := range out {
		out[i] = fs.Get(i).JSONName()
	}
	return out
}

// messageAt walks path p (JSON or proto field names, list indexes, map keys) down from md and
// returns the message type it ends in, or nil where p leaves messages or names no field.
func messageAt(md protoreflect.MessageDescriptor, p validate.Path) protoreflect.MessageDescriptor {
	skipMapKey := false
	for _, e := range p {
		name, ok := e.(string)
		if skipMapKey || !ok { // a map key or a list index: stays on the element type
			skipMapKey = false
			continue
		}
		fd := fieldNamed(md, name)
		if fd == nil {
			return nil
		}
		if fd.IsMap() {
			fd, skipMapKey = fd.MapValue(), true
		}
		if fd.Message() == nil {
			return nil
		}
		md = fd.Message()
	}
	return md
}

// fieldNamed finds a field by its JSON name or its proto name.
func fieldNamed(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByJSONName(name); fd != nil {
		return fd
	}
	return md.Fields().ByName(protoreflect.Name(name))
}

// enumValuesAt returns the names of the enum values the field at path p (a field, or an element
// of a repeated field) takes, or nil where p names no enum field.
func enumValuesAt(md protoreflect.MessageDescriptor, p validate.Path) []string {
	for len(p) > 0 {
		if _, isIndex := p[len(p)-1].(int); !isIndex {
			break
		}
		p = p[:len(p)-1]
	}
	if len(p) == 0 {
		return nil
	}
	name, ok := p[len(p)-1].(string)
	if md = messageAt(md, p[:len(p)-1]); !ok || md == nil {
		return nil
	}
	fd := fieldNamed(md, name)
	if fd == nil || fd.IsMap() || fd.Enum() == nil {
		return nil
	}
	vs := fd.Enum().Values()
	out := make([]string, vs.Len())
	for i := range out {
		out[i] = string(vs.Get(i).Name())
	}
	return out
}
