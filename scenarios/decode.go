package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/scenarios/threshold"
	"github.com/xdslab/xdslab/scenarios/units"
)

// The decoder walks yaml.v3 nodes (which carry line and column) onto Go values by reflection,
// using the `yaml` tags. It never stops at the first problem: every error is collected with its
// position. It does not use yaml.v3's own struct decoding, which stops at the first error and
// cannot suggest the nearest key.

var (
	durationType  = reflect.TypeFor[units.Duration]()
	rateType      = reflect.TypeFor[units.Rate]()
	timeDistType  = reflect.TypeFor[units.TimeDist]()
	distSpecType  = reflect.TypeFor[dist.Spec]()
	thresholdType = reflect.TypeFor[threshold.Threshold]()
	protocolsType = reflect.TypeFor[Protocols]()
	clientType    = reflect.TypeFor[Client]()
	scenarioType  = reflect.TypeFor[Scenario]()
)

// Limits that keep hostile input (alias bombs, deep nesting) cheap: an alias bomb costs what the
// largest file allowed costs (about a second). The node and byte limits leave room for an
// imported mesh (topology.mesh): a service with two ports and three endpoint groups is about
// 30 decoded nodes and 460 bytes, so about 30,000 services fit.
const (
	maxNodes = 1_000_000
	maxDepth = 64
	maxBytes = 32 << 20
)

type decoder struct {
	file   string
	errs   Errors
	at     map[string]pos
	budget int
	// failed lists the paths of decoding errors; validation errors at or under them, or at
	// their parent, are consequences (the value kept its default) and are not reported.
	failed []string
	// keyHome maps a key name to the paths (schema-level) where it is valid, for "belongs under".
	keyHome map[string][]string
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, at: map[string]pos{}, budget: maxNodes}
}

// fail records an error at node n.
func (d *decoder) fail(n *yaml.Node, path, fix, format string, args ...any) {
	d.failed = append(d.failed, path)
	if len(d.errs) >= maxErrors {
		return
	}
	e := &Error{File: d.file, Path: path, Msg: fmt.Sprintf(format, args...), Fix: fix}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// describe says what a node is, for "expected X, got Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "the string " + strconv.Quote(n.Value)
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
		return "the value " + strconv.Quote(n.Value) + " tagged " + n.ShortTag()
	}
	return "an unexpected node"
}

// deref follows aliases, charging the budget; it returns nil when the input is too large.
func (d *decoder) deref(n *yaml.Node, path string, depth int) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
		depth++
		if depth > maxDepth {
			d.fail(n, path, "flatten the anchors", "aliases nest too deep")
			return nil
		}
	}
	d.budget--
	if d.budget == 0 {
		d.fail(n, path, "shorten the file or use fewer aliases", "scenario expands to more than %d YAML nodes", maxNodes)
	}
	if d.budget <= 0 || n == nil {
		return nil
	}
	return n
}

// decode decodes node n onto v (which holds the default) at path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, depth int) {
	if depth > maxDepth {
		d.fail(n, path, "flatten the document", "nesting deeper than %d levels", maxDepth)
		return
	}
	if n = d.deref(n, path, depth); n == nil {
		return
	}
	null := n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
	d.at[path] = pos{line: n.Line, col: n.Column, block: n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0, null: null}
	if null {
		return // an empty value keeps the default
	}
	t := v.Type()
	switch t {
	case durationType:
		if dur, ok := d.duration(n, path); ok {
			v.Set(reflect.ValueOf(dur))
		}
		return
	case rateType:
		if !d.scalar(n, path, "a rate such as \"20/s\"", `write a rate such as "20/s", "30/m" or "2/h"`) {
			return
		}
		r, fix, err := units.ParseRate(n.Value)
		if err != nil {
			d.fail(n, path, fix, "%v", err)
			return
		}
		v.Set(reflect.ValueOf(r))
		return
	case timeDistType:
		if s, ok := d.dist(n, path, true, depth); ok {
			v.Set(reflect.ValueOf(units.TimeDist(s)))
		}
		return
	case distSpecType:
		if s, ok := d.dist(n, path, false, depth); ok {
			v.Set(reflect.ValueOf(s))
		}
		return
	case thresholdType:
		if !d.scalar(n, path, "a threshold expression such as 'p(99)<500ms'", "quote the expression: 'p(99)<500ms'") {
			return
		}
		th, err := threshold.Parse(n.Value)
		if err != nil {
			d.fail(n, path, threshold.Fix(err), "invalid threshold %q: %v", n.Value, err)
			return
		}
		v.Set(reflect.ValueOf(th))
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		if !v.IsNil() {
			nv.Elem().Set(v.Elem())
		}
		d.decode(n, nv.Elem(), path, depth) // path already recorded; harmless to record again
		v.Set(nv)
	case reflect.Struct:
		if t == protocolsType {
			v.Set(reflect.Zero(t)) // a written mix replaces the default mix as a whole
		}
		d.structure(n, v, path, depth)
	case reflect.Slice:
		d.slice(n, v, path, depth)
	case reflect.Map:
		d.mapping(n, v, path, depth)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			fix := "write a string"
			if n.Kind == yaml.ScalarNode {
				fix = "quote it: \"" + n.Value + "\""
			}
			d.fail(n, path, fix, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.fail(n, path, "write true or false (unquoted)", "expected true or false, got %s", describe(n))
			return
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			d.fail(n, path, "write true or false (unquoted)", "invalid boolean %q", n.Value)
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Uint64:
		d.integer(n, v, path)
	case reflect.Float64:
		if f, ok := d.number(n, path); ok {
			v.SetFloat(f)
		}
	default:
		d.fail(n, path, "", "internal: no decoder for %s", t)
	}
}

// scalar checks that n is a scalar.
func (d *decoder) scalar(n *yaml.Node, path, want, fix string) bool {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, fix, "expected %s, got %s", want, describe(n))
		return false
	}
	return true
}

func (d *decoder) duration(n *yaml.Node, path string) (units.Duration, bool) {
	const fix = `write a duration such as "250ms", "5s" or "1m30s"`
	if !d.scalar(n, path, "a duration such as \"5s\"", fix) {
		return 0, false
	}
	dur, fx, err := units.ParseDuration(n.Value)
	if err != nil {
		d.fail(n, path, fx, "%v", err)
		return 0, false
	}
	return dur, true
}

func (d *decoder) number(n *yaml.Node, path string) (float64, bool) {
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
		fix := "write a number"
		if n.Kind == yaml.ScalarNode && tag == "!!str" {
			if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
				fix = "remove the quotes"
			}
		}
		d.fail(n, path, fix, "expected a number, got %s", describe(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(n, path, "write a finite number", "invalid number %q", n.Value)
		return 0, false
	}
	return f, true
}

func (d *decoder) integer(n *yaml.Node, v reflect.Value, path string) {
	f, ok := d.number(n, path)
	if !ok {
		return
	}
	if f != math.Trunc(f) {
		d.fail(n, path, "write a whole number", "expected a whole number, got %s", n.Value)
		return
	}
	// Integers beyond 2^53 lose precision as floats; decode them exactly.
	if n.ShortTag() == "!!int" {
		if v.Kind() == reflect.Uint64 {
			var u uint64
			if err := n.Decode(&u); err != nil {
				d.fail(n, path, "write a whole number >= 0 (at most 18446744073709551615)", "%s is out of range", n.Value)
				return
			}
			v.SetUint(u)
			return
		}
		var i int64
		if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
			d.fail(n, path, "write a smaller whole number", "%s is out of range", n.Value)
			return
		}
		v.SetInt(i)
		return
	}
	switch {
	case v.Kind() == reflect.Uint64:
		if f < 0 || f >= 1<<64 {
			d.fail(n, path, "write a whole number >= 0", "%s is out of range", n.Value)
			return
		}
		v.SetUint(uint64(f))
	default:
		if f < math.MinInt64 || f >= 1<<63 || v.OverflowInt(int64(f)) {
			d.fail(n, path, "write a smaller whole number", "%s is out of range", n.Value)
			return
		}
		v.SetInt(int64(f))
	}
}

// pairs returns the key/value pairs of a mapping with merge keys (<<) expanded first, so that
// explicit keys override merged ones. Non-string keys are reported.
func (d *decoder) pairs(n *yaml.Node, path string, depth int) [][2]*yaml.Node {
	var merged, own [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			src := d.deref(val, path, depth)
			if src == nil {
				continue
			}
			var maps []*yaml.Node
			switch src.Kind {
			case yaml.MappingNode:
				maps = []*yaml.Node{src}
			case yaml.SequenceNode:
				for _, m := range src.Content {
					if m = d.deref(m, path, depth); m != nil {
						maps = append(maps, m)
					}
				}
			}
			for _, m := range maps {
				if m.Kind != yaml.MappingNode {
					d.fail(m, path, "merge a mapping: <<: *anchor", "<< merges %s", describe(m))
					continue
				}
				if depth+1 > maxDepth {
					d.fail(m, path, "flatten the anchors", "merges nest too deep")
					continue
				}
				merged = append(merged, d.pairs(m, path, depth+1)...)
			}
			continue
		}
		own = append(own, [2]*yaml.Node{k, val})
	}
	seen := map[string]*yaml.Node{}
	for _, kv := range own {
		k := kv[0]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "use a plain name as the key", "a key must be a name, got %s", describe(k))
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.fail(k, path, fmt.Sprintf("remove one of them (the first is at line %d)", prev.Line), "key %q given twice", k.Value)
			// The first is kept and checked like any value: this has no consequences to
			// suppress (every other threshold went unchecked after a key given twice under
			// thresholds).
			d.failed = d.failed[:len(d.failed)-1]
			continue
		}
		seen[k.Value] = k
	}
	out := make([][2]*yaml.Node, 0, len(merged)+len(own))
	for _, kv := range merged {
		if kv[0].Kind == yaml.ScalarNode && seen[kv[0].Value] == nil {
			out = append(out, kv)
		}
	}
	for _, kv := range own {
		if kv[0].Kind == yaml.ScalarNode && seen[kv[0].Value] == kv[0] {
			out = append(out, kv)
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string, depth int) {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "write a mapping of "+strings.Join(fieldNames(t), ", "), "expected a mapping, got %s", describe(n))
		return
	}
	fields := fieldIndex(t)
	for _, kv := range d.pairs(n, path, depth) {
		k, val := kv[0], kv[1]
		idx, ok := fields[k.Value]
		if !ok {
			fix := d.keyFix(k.Value, t, path)
			if val.Anchor != "" {
				// A key only to hold an anchor (docker-compose's x-… keys): strict keys have no room
				// for one.
				fix = fmt.Sprintf("a scenario has no free keys to hold anchors: put &%s on the first value that uses it (clients: [&%s {name: a, count: 5}, {<<: *%s, name: b}]) and remove %q",
					val.Anchor, val.Anchor, val.Anchor, k.Value)
			}
			d.fail(k, path, fix, "unknown field %q", k.Value)
			// Suppress consequences at the missing field and its parent only, not the siblings.
			d.failed[len(d.failed)-1] = join(path, k.Value)
			continue
		}
		d.decode(val, v.Field(idx), join(path, k.Value), depth+1)
	}
}

// keyFix suggests the nearest valid key of t, or where the key belongs in the schema.
func (d *decoder) keyFix(key string, t reflect.Type, path string) string {
	names := fieldNames(t)
	if near := suggest.Nearest(key, names); near != "" {
		return "did you mean " + strconv.Quote(near) + "?"
	}
	if d.keyHome == nil {
		d.keyHome = schemaKeys() // only needed once a key is wrong
	}
	if homes := d.keyHome[key]; len(homes) > 0 {
		return fmt.Sprintf("%q belongs under %s", key, strings.Join(homes, " or "))
	}
	where := path
	if where == "" {
		where = "the top level"
	}
	return "valid keys at " + where + ": " + strings.Join(names, ", ")
}

func (d *decoder) slice(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "write a list (\"- item\" lines or [a, b])", "expected a list, got %s", describe(n))
		return
	}
	et := v.Type().Elem()
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		if x := item; x.Kind == yaml.ScalarNode && x.ShortTag() == "!!null" {
			// A "-" with nothing after it: in clients it was a whole group of 100 default
			// clients, elsewhere a zero; an empty value keeps a default only where there is one.
			d.fail(x, path+"["+itoa(i)+"]", "remove the empty entry, or write the item after its -", "empty list entry")
			continue
		}
		ev := reflect.New(et).Elem()
		if et == clientType {
			ev.Set(reflect.ValueOf(DefaultClient()))
		}
		d.decode(item, ev, path+"["+itoa(i)+"]", depth+1)
		out = reflect.Append(out, ev)
	}
	v.Set(out)
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, depth int) {
	thresholds := v.Type() == reflect.TypeFor[map[string][]threshold.Threshold]()
	if n.Kind != yaml.MappingNode {
		fix := "write a mapping of name: value"
		if thresholds {
			fix = "write a mapping of metric name to a list of expressions"
		}
		d.fail(n, path, fix, "expected a mapping, got %s", describe(n))
		return
	}
	out := reflect.MakeMap(v.Type())
	for _, kv := range d.pairs(n, path, depth) {
		k, val := kv[0], kv[1]
		p := join(path, k.Value)
		if !thresholds {
			ev := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, ev, p, depth+1)
			out.SetMapIndex(reflect.ValueOf(k.Value), ev)
			continue
		}
		if err := threshold.CheckSelector(k.Value); err != nil {
			d.fail(k, p, threshold.SelectorFix(k.Value), "%v", err)
		}
		ev := reflect.New(v.Type().Elem()).Elem()
		if val2 := d.deref(val, p, depth); val2 != nil && val2.Kind == yaml.ScalarNode && val2.ShortTag() == "!!str" {
			d.fail(val2, p, "write a list: ['"+val2.Value+"']", "expected a list of expressions, got %s", describe(val2))
			continue
		}
		d.decode(val, ev, p, depth+1)
		out.SetMapIndex(reflect.ValueOf(k.Value), ev)
	}
	v.Set(out)
}

// dist decodes a distribution: a mapping {dist: NAME, params...}, or a scalar shorthand for a
// constant. In a time distribution the time parameters accept durations.
func (d *decoder) dist(n *yaml.Node, path string, isTime bool, depth int) (dist.Spec, bool) {
	param := func(n *yaml.Node, p string, timeParam bool) (float64, bool) {
		if timeParam && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			dur, ok := d.duration(n, p)
			return dur.D().Seconds(), ok
		}
		return d.number(n, p)
	}
	if n.Kind == yaml.ScalarNode {
		v, ok := param(n, path, isTime)
		return dist.Constant(v), ok
	}
	if n.Kind != yaml.MappingNode {
		fix := "write {dist: lognormal, median: 8, sigma: 0.6} or a number"
		if isTime {
			fix = "write {dist: exp, mean: 5ms} or a duration"
		}
		d.fail(n, path, fix, "expected a distribution, got %s", describe(n))
		return dist.Spec{}, false
	}
	var s dist.Spec
	ok := true
	for _, kv := range d.pairs(n, path, depth) {
		k := kv[0]
		p := join(path, k.Value)
		val := d.deref(kv[1], p, depth)
		if val == nil {
			ok = false
			continue
		}
		d.at[p] = pos{line: val.Line, col: val.Column}
		if k.Value == "dist" {
			if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!str" {
				d.fail(val, p, "use one of: "+strings.Join(dist.Names(), ", "), "expected a distribution name, got %s", describe(val))
				ok = false
				continue
			}
			s.Dist = val.Value
			continue
		}
		var f *float64
		switch k.Value {
		case "value":
			f = &s.Value
		case "min":
			f = &s.Min
		case "max":
			f = &s.Max
		case "mean":
			f = &s.Mean
		case "median":
			f = &s.Median
		case "sigma":
			f = &s.Sigma
		case "alpha":
			f = &s.Alpha
		case "s":
			f = &s.S
		default:
			d.fail(k, path, suggest.Fix(k.Value, units.DistKeys()), "unknown distribution field %q", k.Value)
			ok = false
			continue
		}
		if val.Kind == yaml.ScalarNode && val.ShortTag() == "!!null" {
			continue
		}
		x, good := param(val, p, isTime && units.IsTimeParam(k.Value))
		if !good {
			ok = false
			continue
		}
		*f = x
	}
	return s, ok
}

// fieldIndex maps yaml key to field index for a struct type.
func fieldIndex(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		if name := FieldKey(t.Field(i)); name != "" {
			m[name] = i
		}
	}
	return m
}

// fieldNames lists a struct's yaml keys in declaration order.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name := FieldKey(t.Field(i)); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// FieldKey returns the key struct field f is written under in a scenario file, "" when the
// loader does not read the field. scenarios/schema names fields through it, so the JSON Schema
// and the docs tables name exactly the keys the loader reads.
func FieldKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// schemaKeys maps every key of the schema to the paths of the structs that hold it.
func schemaKeys() map[string][]string {
	out := map[string][]string{}
	var walk func(t reflect.Type, path string, depth int)
	walk = func(t reflect.Type, path string, depth int) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == distSpecType || t == timeDistType || t == thresholdType || depth > 6 {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name := FieldKey(f)
			if name == "" {
				continue
			}
			where := path
			if where == "" {
				where = "the top level"
			}
			out[name] = append(out[name], where)
			sub := f.Type
			suffix := ""
			if sub.Kind() == reflect.Slice && sub != reflect.TypeFor[[]units.Duration]() {
				suffix = "[]"
			}
			walk(sub, join(path, name+suffix), depth+1)
		}
	}
	walk(scenarioType, "", 0)
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

// related reports whether validation path p is at or under a failed path, or is its parent
// (a parent-level rule such as "churn[0] has no timing" after its rate failed to decode).
func (d *decoder) related(p string) bool {
	for _, f := range d.failed {
		if f == "" {
			continue // an unknown top-level key says nothing about the other fields
		}
		if p == f || under(p, f) || p == parentPath(f) {
			return true
		}
	}
	return false
}

// under reports whether path p lies below path parent.
func under(p, parent string) bool {
	return parent != "" && strings.HasPrefix(p, parent) && len(p) > len(parent) && (p[len(parent)] == '.' || p[len(parent)] == '[')
}
