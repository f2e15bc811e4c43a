package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/internal/dist"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/units"
)

// The JSON Schema and the field tables of docs/scenarios.md are both generated from the Go
// types (struct tags) and scenarios.Defaults(), so neither can drift from the loader.

var (
	durationType = reflect.TypeFor[units.Duration]()
	rateType     = reflect.TypeFor[units.Rate]()
	timeDistType = reflect.TypeFor[units.TimeDist]()
	distSpecType = reflect.TypeFor[dist.Spec]()
	clientType   = reflect.TypeFor[scenarios.Client]()
	scenarioType = reflect.TypeFor[scenarios.Scenario]()
)

const (
	durationPattern = `^(0|([0-9]*\.?[0-9]+(ns|us|µs|μs|ms|s|m|h))+)$`
	ratePattern     = `^[0-9]*\.?[0-9]+([eE][+-]?[0-9]+)?\s*(/\s*[smh])?$`
	metricPattern   = `^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^{}]+\})?$`
)

// JSON returns the JSON Schema (draft 2020-12) of scenario files, for editor completion and
// validation (point yaml-language-server at scenarios/scenario.schema.json). It checks
// structure, names and value ranges; cross-field rules are left to scenarios.Scenario.Validate.
func JSON() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	root := g.object(scenarioType, reflect.ValueOf(*scenarios.Defaults()))
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = "https://github.com/xdslab/xdslab/scenarios/scenario.schema.json"
	root["title"] = "xdslab scenario"
	root["description"] = "A benchmark scenario for xdslab (docs/scenarios.md). Generated from the Go types; do not edit."
	root["required"] = []string{"name"}
	g.defs["duration"] = map[string]any{
		"description": `A Go duration: "250ms", "5s", "1m30s"; 0 for none.`,
		"oneOf": []any{
			map[string]any{"type": "string", "pattern": durationPattern},
			map[string]any{"const": 0},
		},
	}
	g.defs["rate"] = map[string]any{
		"description": `Events per second: "20/s", "30/m", "2/h", or a number (per second).`,
		"oneOf": []any{
			map[string]any{"type": "string", "pattern": ratePattern},
			map[string]any{"type": "number", "minimum": 0},
		},
	}
	g.defs["dist"] = distSchema(false)
	g.defs["timeDist"] = distSchema(true)
	g.defs["threshold"] = map[string]any{
		"type":        "string",
		"description": "k6 threshold: AGG OP VALUE, e.g. 'p(99)<500ms', 'count==0', 'rate<1%'.",
		"pattern":     `^\s*(avg|min|max|med|count|rate|value|p\(\s*[0-9.]+\s*\))\s*(<=|>=|===|==|!=|<|>)\s*[-+]?[0-9.]+([eE][-+]?[0-9]+)?\s*(ns|us|µs|ms|s|m|h|%|B|kB|MB|GB|KiB|MiB|GiB)?\s*$`,
	}
	root["$defs"] = g.defs
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	return b.Bytes(), nil
}

func distSchema(isTime bool) map[string]any {
	num := map[string]any{"type": "number"}
	timeNum := any(num)
	desc := "A distribution (see docs/scenarios.md), or a number for a constant."
	short := any(map[string]any{"type": "number", "minimum": 0})
	if isTime {
		timeNum = map[string]any{"oneOf": []any{num, map[string]any{"$ref": "#/$defs/duration"}}}
		desc = "A distribution of times: numbers are seconds, or write durations (\"5ms\"); a bare duration is a constant."
		short = map[string]any{"oneOf": []any{map[string]any{"type": "number", "minimum": 0}, map[string]any{"$ref": "#/$defs/duration"}}}
	}
	props := map[string]any{"dist": map[string]any{"enum": dist.Names(), "description": "Distribution name; default constant."}}
	for _, k := range units.DistKeys()[1:] {
		if units.IsTimeParam(k) {
			props[k] = timeNum
		} else {
			props[k] = num
		}
	}
	return map[string]any{
		"description": desc,
		"oneOf": []any{short, map[string]any{
			"type": "object", "additionalProperties": false, "properties": props,
		}},
	}
}

type schemaGen struct{ defs map[string]any }

// object describes struct type t whose default value is def.
func (g *schemaGen) object(t reflect.Type, def reflect.Value) map[string]any {
	props := map[string]any{}
	for i := range t.NumField() {
		f := t.Field(i)
		name := scenarios.FieldKey(f)
		if name == "" {
			continue
		}
		var fd reflect.Value
		if def.IsValid() {
			fd = def.Field(i)
		}
		p := g.field(f.Type, fd, f)
		if doc := f.Tag.Get("doc"); doc != "" {
			if kinds := f.Tag.Get("kinds"); kinds != "" && kinds != "all" {
				doc += " (kinds: " + kinds + ")"
			}
			p["description"] = doc
		}
		props[name] = p
	}
	out := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	if t == reflect.TypeFor[scenarios.Churn]() {
		out["required"] = []string{"kind"}
	}
	return out
}

// field describes one field; def is its default (invalid when none applies).
func (g *schemaGen) field(t reflect.Type, def reflect.Value, f reflect.StructField) map[string]any {
	s := g.typ(t, def)
	if enum := f.Tag.Get("enum"); enum != "" {
		s["enum"] = strings.Split(enum, ",")
	}
	if pat := f.Tag.Get("pattern"); pat != "" {
		s["pattern"] = pat
		s["maxLength"] = 63
	}
	if r := f.Tag.Get("range"); r != "" {
		lo, hi, _ := strings.Cut(r, ",")
		l, _ := strconv.ParseFloat(lo, 64)
		s["minimum"] = l
		if hi != "" { // "1,": no upper bound
			h, _ := strconv.ParseFloat(hi, 64)
			s["maximum"] = h
		}
	}
	if f.Tag.Get("def") == "" && def.IsValid() && t.Kind() != reflect.Struct && t.Kind() != reflect.Slice && t.Kind() != reflect.Map {
		if b, err := json.Marshal(def.Interface()); err == nil {
			var v any
			if json.Unmarshal(b, &v) == nil {
				s["default"] = v
			}
		}
	}
	return s
}

func (g *schemaGen) typ(t reflect.Type, def reflect.Value) map[string]any {
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/$defs/" + name} }
	switch t {
	case durationType:
		return ref("duration")
	case rateType:
		return ref("rate")
	case distSpecType, reflect.PointerTo(distSpecType):
		return ref("dist")
	case timeDistType:
		return ref("timeDist")
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.typ(t.Elem(), reflect.Value{})
	case reflect.Struct:
		name := t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // reserve against recursion
			if t == clientType {
				def = reflect.ValueOf(scenarios.DefaultClient())
			}
			g.defs[name] = g.object(t, def)
		}
		return ref(name)
	case reflect.Slice:
		var elemDef reflect.Value
		if t.Elem() == clientType {
			elemDef = reflect.ValueOf(scenarios.DefaultClient())
		}
		return map[string]any{"type": "array", "items": g.typ(t.Elem(), elemDef)}
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
		}
		return map[string]any{
			"type":                 "object",
			"propertyNames":        map[string]any{"pattern": metricPattern},
			"additionalProperties": map[string]any{"type": "array", "items": ref("threshold")},
		}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}

// DocTables returns the markdown field tables of docs/scenarios.md, keyed by section name:
// "scenario", "controlPlane", "sink", "topology", "churn", "clients", "phases".
func DocTables() map[string]string {
	d := scenarios.Defaults()
	out := map[string]string{}
	top := reflect.ValueOf(*d)
	out["scenario"] = docTable(scenarioType, top, "", func(f reflect.StructField) bool {
		k := f.Type.Kind()
		return k != reflect.Struct && k != reflect.Slice && k != reflect.Map // sections get their own tables
	}, false)
	out["controlPlane"] = docTable(reflect.TypeFor[scenarios.ControlPlane](), reflect.ValueOf(d.ControlPlane), "", nil, false)
	out["sink"] = docTable(reflect.TypeFor[scenarios.Sink](), reflect.ValueOf(d.Sink), "", nil, false)
	out["topology"] = docTable(reflect.TypeFor[scenarios.Topology](), reflect.ValueOf(d.Topology), "", nil, false)
	out["churn"] = docTable(reflect.TypeFor[scenarios.Churn](), reflect.Value{}, "", nil, true)
	out["clients"] = docTable(clientType, reflect.ValueOf(scenarios.DefaultClient()), "", nil, false)
	out["phases"] = docTable(reflect.TypeFor[scenarios.Phases](), reflect.ValueOf(d.Phases), "", nil, false)
	var mesh strings.Builder
	mesh.WriteString("| field | type | default | meaning |\n|---|---|---|---|\n")
	docRows(&mesh, reflect.TypeFor[scenarios.Mesh](), reflect.Value{}, "", nil, false)
	docRows(&mesh, reflect.TypeFor[scenarios.MeshService](), reflect.Value{}, "services[].", nil, false)
	docRows(&mesh, reflect.TypeFor[scenarios.MeshPort](), reflect.Value{}, "services[].ports[].", nil, false)
	docRows(&mesh, reflect.TypeFor[scenarios.MeshEndpoints](), reflect.Value{}, "services[].endpoints[].", nil, false)
	out["mesh"] = mesh.String()
	return out
}

func docTable(t reflect.Type, def reflect.Value, prefix string, keep func(reflect.StructField) bool, kinds bool) string {
	var b strings.Builder
	if kinds {
		b.WriteString("| field | type | kinds | default | meaning |\n|---|---|---|---|---|\n")
	} else {
		b.WriteString("| field | type | default | meaning |\n|---|---|---|---|\n")
	}
	docRows(&b, t, def, prefix, keep, kinds)
	return b.String()
}

func docRows(b *strings.Builder, t reflect.Type, def reflect.Value, prefix string, keep func(reflect.StructField) bool, kinds bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name := scenarios.FieldKey(f)
		if name == "" || (keep != nil && !keep(f)) {
			continue
		}
		var fd reflect.Value
		if def.IsValid() {
			fd = def.Field(i)
		}
		key := prefix + name
		if f.Type.Kind() == reflect.Struct && !slices.Contains([]reflect.Type{distSpecType, timeDistType}, f.Type) {
			// Nested mappings are flattened into dotted rows; a one-field mapping (a phase) reads
			// its meaning from the parent.
			if f.Type.NumField() == 1 {
				sub := f.Type.Field(0)
				sub.Tag = reflect.StructTag(strings.Replace(string(sub.Tag), `doc:"`, `doc:"`+f.Tag.Get("doc")+" ", 1))
				var sd reflect.Value
				if fd.IsValid() {
					sd = fd.Field(0)
				}
				docRow(b, sub, sd, key+"."+scenarios.FieldKey(sub), kinds)
				continue
			}
			docRows(b, f.Type, fd, key+".", nil, kinds)
			continue
		}
		docRow(b, f, fd, key, kinds)
	}
}

func docRow(b *strings.Builder, f reflect.StructField, fd reflect.Value, key string, kinds bool) {
	deflt := f.Tag.Get("def")
	if deflt == "" && fd.IsValid() {
		deflt = "`" + yamlText(fd.Interface()) + "`"
	}
	doc := strings.ReplaceAll(f.Tag.Get("doc"), "|", `\|`)
	if enum := f.Tag.Get("enum"); enum != "" && !kinds {
		doc += " One of: " + strings.ReplaceAll(enum, ",", ", ") + "."
	}
	if kinds {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", key, typeName(f.Type), f.Tag.Get("kinds"), deflt, doc)
	} else {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", key, typeName(f.Type), deflt, doc)
	}
}

func typeName(t reflect.Type) string {
	switch t {
	case durationType:
		return "duration"
	case rateType:
		return "rate"
	case distSpecType, reflect.PointerTo(distSpecType):
		return "dist"
	case timeDistType:
		return "time dist"
	case reflect.TypeFor[[]units.Duration]():
		return "list of durations"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "mapping"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "int"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list"
	case reflect.Map:
		return "map"
	}
	return t.Name()
}

// yamlText renders a default value as it would be written in a scenario (flow style).
func yamlText(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case units.Duration:
		return x.String()
	case units.Rate:
		return x.String()
	case dist.Spec:
		return distText(x, nil)
	case units.TimeDist:
		return distText(dist.Spec(x), func(f float64) string { return units.Seconds(f) })
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func distText(s dist.Spec, timeFmt func(float64) string) string {
	name := s.Dist
	if name == "" {
		name = "constant"
	}
	parts := []string{"dist: " + name}
	for _, p := range []struct {
		k string
		v float64
	}{{"value", s.Value}, {"mean", s.Mean}, {"median", s.Median}, {"sigma", s.Sigma}, {"alpha", s.Alpha}, {"s", s.S}, {"min", s.Min}, {"max", s.Max}} {
		if p.v == 0 && !(p.k == "value" && name == "constant") {
			continue
		}
		txt := strconv.FormatFloat(p.v, 'g', -1, 64)
		if timeFmt != nil && units.IsTimeParam(p.k) {
			if txt = timeFmt(p.v); txt == "" {
				txt = "0s"
			}
		}
		parts = append(parts, p.k+": "+txt)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
