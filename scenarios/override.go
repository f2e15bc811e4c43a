package scenarios

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/scenarios/units"
)

// Clone returns a deep copy of s (for parameter sweeps that vary one scenario).
func (s *Scenario) Clone() *Scenario {
	c := *s
	c.Churn = slices.Clone(s.Churn)
	for i := range c.Churn {
		c.Churn[i].At = slices.Clone(c.Churn[i].At)
		if d := c.Churn[i].Delta; d != nil {
			dd := *d
			c.Churn[i].Delta = &dd
		}
	}
	c.Clients = slices.Clone(s.Clients)
	for i := range c.Clients {
		// A client's maps and lists too: Set on a clone (a tune point) wrote through them into
		// the original and every other point.
		cl := &c.Clients[i]
		cl.NamespaceCounts = maps.Clone(cl.NamespaceCounts)
		cl.Targets = slices.Clone(cl.Targets)
		cl.Node.Labels = maps.Clone(cl.Node.Labels)
	}
	if m := s.Topology.Mesh; m != nil {
		mc := *m
		mc.Services = slices.Clone(m.Services)
		for i := range mc.Services {
			ms := &mc.Services[i]
			ms.Ports = slices.Clone(ms.Ports)
			ms.Endpoints = slices.Clone(ms.Endpoints)
			for j := range ms.Endpoints {
				ms.Endpoints[j].Labels = maps.Clone(ms.Endpoints[j].Labels)
			}
		}
		c.Topology.Mesh = &mc
	}
	c.Thresholds = maps.Clone(s.Thresholds)
	for k, v := range c.Thresholds {
		c.Thresholds[k] = slices.Clone(v)
	}
	c.setKeys = maps.Clone(s.setKeys)
	return &c
}

// Set assigns one field by its path, with the value written as in a scenario file:
//
//	s.Set("controlPlane.debounce.minQuiet", "50ms")
//	s.Set("clients[1].count", "200")
//	s.Set("topology.endpointsPerService", "{dist: exp, mean: 4}")
//	s.Set("clients[0].ackDelay.mean", "3ms")
//
// It then completes and validates the scenario; on error the scenario is left as it was
// (the change is made on a deep copy, taken over only when it validates). This is how `xdslab
// tune --param` and command-line overrides vary a scenario.
func (s *Scenario) Set(path, value string) error {
	c := s.Clone()
	if err := c.set(path, value); err != nil {
		return err
	}
	*s = *c
	return nil
}

// set is Set on s itself, which it may leave half changed on error.
func (s *Scenario) set(path, value string) error {
	fail := func(msg, fix string) error {
		return Errors{{File: "--set", Path: path, Msg: msg, Fix: fix}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return fail("invalid value "+strconv.Quote(value)+": "+strings.TrimPrefix(err.Error(), "yaml: "), "write the value as in a scenario file")
	}
	node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		node = doc.Content[0]
	}
	segs, err := splitPath(path)
	if err != nil {
		return fail(err.Error(), `write a path such as controlPlane.debounce.minQuiet or clients[0].count`)
	}
	v := reflect.ValueOf(s).Elem()
	walked := ""
	for i, seg := range segs {
		last := i == len(segs)-1
		for v.Kind() == reflect.Pointer { // churn[i].delta, topology.mesh
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		switch {
		case seg.index >= 0:
			if v.Kind() != reflect.Slice {
				return fail(walked+" is not a list", "remove ["+itoa(seg.index)+"]")
			}
			if seg.index >= v.Len() {
				return fail(walked+" has "+itoa(v.Len())+" entries", "use an index below "+itoa(v.Len()))
			}
			v = v.Index(seg.index)
			walked += "[" + itoa(seg.index) + "]"
		case v.Type() == timeDistType || v.Type() == distSpecType:
			if !last || !slices.Contains(units.DistKeys(), seg.name) {
				return fail("unknown distribution field "+strconv.Quote(seg.name), suggest.Fix(seg.name, units.DistKeys()))
			}
			// Set one parameter by decoding the distribution with that key replaced.
			cur := dist2node(v.Interface(), v.Type() == timeDistType)
			setKey(cur, seg.name, node)
			d := newDecoder("--set")
			d.decode(cur, v, walked, 0)
			if len(d.errs) > 0 {
				return valueErrors(d.errs)
			}
			return s.revalidate()
		case v.Kind() == reflect.Map:
			if !last {
				return fail("a threshold takes a list of expressions", "set thresholds."+seg.name+" to a list: ['p(99)<1s']")
			}
			m := v
			if m.IsNil() {
				m.Set(reflect.MakeMap(m.Type()))
			}
			d := newDecoder("--set")
			wrapped := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: seg.name}, node}}
			tmp := reflect.New(m.Type()).Elem()
			d.decode(wrapped, tmp, walked, 0)
			if len(d.errs) > 0 {
				return valueErrors(d.errs)
			}
			m.SetMapIndex(reflect.ValueOf(seg.name), tmp.MapIndex(reflect.ValueOf(seg.name)))
			return s.revalidate()
		case v.Kind() == reflect.Struct:
			idx, ok := fieldIndex(v.Type())[seg.name]
			if !ok {
				return fail("unknown field "+strconv.Quote(seg.name)+" in "+orTop(walked), suggest.Fix(seg.name, fieldNames(v.Type())))
			}
			v = v.Field(idx)
			walked = join(walked, seg.name)
		default:
			return fail(walked+" has no field "+strconv.Quote(seg.name), "shorten the path to "+walked)
		}
	}
	d := newDecoder("--set")
	d.decode(node, v, walked, 0)
	if len(d.errs) > 0 {
		return valueErrors(d.errs)
	}
	if segs[0].name == "clients" {
		s.setClients(segs, node)
	}
	return s.revalidate()
}

// setClients keeps the bootstrap profiles true after Set wrote path segs (under clients) with
// node: a profile field Set wrote is written, as in a file, and a group whose profile Set
// wrote (alone, or in a whole group or list) takes the profile's values for the fields
// neither the file nor Set wrote.
func (s *Scenario) setClients(segs []pathSeg, node *yaml.Node) {
	written := func(i int, m *yaml.Node) {
		if m == nil || m.Kind != yaml.MappingNode {
			return
		}
		for k := 0; k+1 < len(m.Content); k += 2 {
			if key := m.Content[k].Value; slices.Contains(bootstrapFields, key) {
				s.markSet(i, key)
			}
		}
	}
	// A group Set replaced whole is written only as far as the new value goes: what the file
	// wrote for the group it replaced no longer counts.
	replaced := func(i int, el *yaml.Node) {
		g := "clients[" + itoa(i) + "]"
		for k := range s.setKeys {
			if strings.HasPrefix(k, g+".") {
				delete(s.setKeys, k)
			}
		}
		s.markSet(i, "")
		written(i, el)
		s.applyBootstrapOf(i)
	}
	switch {
	case len(segs) == 1 && node.Kind == yaml.SequenceNode: // clients=[...]
		for i, el := range node.Content {
			if i < len(s.Clients) {
				replaced(i, el)
			}
		}
	case len(segs) == 2 && segs[1].index >= 0: // clients[i]={...}
		replaced(segs[1].index, node)
	case len(segs) == 3 && segs[1].index >= 0 && segs[2].name == "bootstrap":
		s.applyBootstrapOf(segs[1].index) // the profile's values, but for what was written
	case len(segs) == 3 && segs[1].index >= 0 && slices.Contains(bootstrapFields, segs[2].name):
		s.markSet(segs[1].index, segs[2].name)
	}
}

// markSet records that Set wrote client group i's field key, or with key "" the whole group.
func (s *Scenario) markSet(i int, key string) {
	if s.setKeys == nil {
		s.setKeys = map[string]bool{}
	}
	k := "clients[" + itoa(i) + "]"
	if key != "" {
		k += "." + key
	}
	s.setKeys[k] = true
}

// valueErrors drops the positions of errors in a value given to Set: line 1, column N of
// the value alone read as "--set:1:1", a place in no file.
func valueErrors(errs Errors) Errors {
	for _, e := range errs {
		e.Line, e.Col = 0, 0
	}
	return errs
}

func orTop(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

func (s *Scenario) revalidate() error {
	s.Complete()
	return s.Validate()
}

type pathSeg struct {
	name  string
	index int // >= 0 for [i]
}

// splitPath splits "a.b[2].c" into segments.
func splitPath(p string) ([]pathSeg, error) {
	if p == "" {
		return nil, errorString("empty path")
	}
	var out []pathSeg
	for _, part := range strings.Split(p, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" && len(out) == 0 {
			return nil, errorString("path starts with an index")
		}
		if name != "" {
			out = append(out, pathSeg{name: name, index: -1})
		} else if rest == "" {
			return nil, errorString("empty path element in " + strconv.Quote(p))
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil || i < 0 {
				return nil, errorString("bad index in " + strconv.Quote(part))
			}
			out = append(out, pathSeg{index: i})
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil, errorString("bad index in " + strconv.Quote(part))
			}
		}
	}
	return out, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// dist2node renders a distribution as a mapping node (time parameters in seconds).
func dist2node(v any, isTime bool) *yaml.Node {
	var n yaml.Node
	var src any = v
	if isTime {
		src = v.(units.TimeDist).Spec() // numbers are seconds, which a time dist accepts
	}
	_ = n.Encode(src)
	return &n
}

// setKey replaces or adds key in mapping node m.
func setKey(m *yaml.Node, key string, val *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = val
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, val)
}
