package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"sigs.k8s.io/yaml"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/istioconfig"
)

// DefaultNamespace is the namespace of an object whose metadata has none, as with kubectl.
const DefaultNamespace = "default"

// Decoder turns Istio YAML or JSON, as users `kubectl apply` it, into configs.
type Decoder struct {
	// DefaultNamespace is used for objects without metadata.namespace. Default "default".
	DefaultNamespace string
}

// DecodeError is one problem in one document of a file. Error() reads
// "file:line: [Kind namespace/name: ]message", with the fix in the message.
type DecodeError struct {
	File string
	// Line is the 1-based line of the offending key when known, else of the document start.
	Line int
	// Object names the object ("ServiceEntry default/web") once kind and name are known.
	Object string
	Msg    string
}

func (e *DecodeError) Error() string {
	s := e.File + ":" + strconv.Itoa(e.Line) + ": "
	if e.Object != "" {
		s += e.Object + ": "
	}
	return s + e.Msg
}

// Decode decodes data with the default Decoder.
func Decode(file string, data []byte) ([]*istioconfig.Config, error) {
	return Decoder{}.Decode(file, data)
}

// Skipped is a document that is not one of the kinds this package stores (another apiVersion
// or kind, such as a Kubernetes Service or a WasmPlugin): it is left out, as istiod
// ignores kinds it does not watch, and reported so that a typo is not silent.
type Skipped struct {
	File       string
	Line       int
	APIVersion string
	Kind       string
	// Name is namespace/name when the metadata has them.
	Name string
	// Hint names the kind or apiVersion that was probably meant, if any.
	Hint string
}

func (s Skipped) String() string {
	out := fmt.Sprintf("%s:%d: skipped %s %s", s.File, s.Line, s.APIVersion, s.Kind)
	if s.Name != "" {
		out += " " + s.Name
	}
	out += ": not a kind the control plane reads (" + strings.TrimSuffix(istioconfig.KindNames(), ", "+string(istioconfig.KindPeerAuthentication)+", "+string(istioconfig.KindAuthorizationPolicy)+", "+string(istioconfig.KindRequestAuthentication)) + " in " + strings.Join(istioconfig.APIVersions(), ", ") + "; PeerAuthentication, AuthorizationPolicy and RequestAuthentication in " + strings.Join(istioconfig.KindAPIVersions(istioconfig.KindPeerAuthentication), ", ") + ")"
	if s.Hint != "" {
		out += "; " + s.Hint
	}
	return out
}

// Decoded is everything Decoder.DecodeAll found in one input.
type Decoded struct {
	// Configs are the objects of the good documents.
	Configs []*istioconfig.Config
	// Skipped are documents of kinds or apiVersions this package does not store.
	Skipped []Skipped
	// Warnings are findings that istiod admits the object with (it is in Configs).
	Warnings []*DecodeError
	// at holds where each of Configs is written, for a line found only when needed.
	at []objectAt
}

// objectAt is where an object is written: its document and its path in it.
type objectAt struct {
	loc  *locator
	path validate.Path
}

// line returns the file line Configs[i] starts on, or 0 when unknown.
func (d Decoded) line(i int) int {
	if i < 0 || i >= len(d.at) {
		return 0
	}
	return d.at[i].loc.line(d.at[i].path)
}

// Decode decodes every document of data (YAML documents separated by "---" lines, or a stream
// of JSON objects; a "kind: List" document contributes its items). file names the input in
// errors and becomes each config's Source. It returns the configs of the good documents and,
// joined, a *DecodeError for each bad one: a document with an error contributes nothing.
// Spec decoding is strict, like the API server's: an unknown field is an error.
func (d Decoder) Decode(file string, data []byte) ([]*istioconfig.Config, error) {
	res, err := d.DecodeAll(file, data)
	return res.Configs, err
}

// DecodeAll is Decode that also returns the skipped documents and the warnings. Every
// object is checked with Istio's semantic validation (validate.Check): an object that breaks a
// rule is an error naming the field's line, and its document contributes nothing.
func (d Decoder) DecodeAll(file string, data []byte) (Decoded, error) {
	if d.DefaultNamespace == "" {
		d.DefaultNamespace = DefaultNamespace
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	st := &decodeState{d: d, file: file}
	docs, ok := splitJSON(data)
	if !ok {
		var notes []yamlNote
		docs, notes = splitYAML(data)
		for _, n := range notes {
			if n.warn {
				st.warns = append(st.warns, &DecodeError{File: file, Line: n.line, Msg: n.msg})
			} else {
				st.fail(n.line, "", "%s", n.msg)
			}
		}
	}
	for _, doc := range docs {
		st.document(doc)
	}
	return Decoded{Configs: st.out, Skipped: st.skipped, Warnings: st.warns, at: st.at}, errors.Join(st.errs...)
}

type decodeState struct {
	d       Decoder
	file    string
	out     []*istioconfig.Config
	at      []objectAt              // where each of out is written
	seen    map[istioconfig.Key]int // index in out of each object's first copy
	errs    []error
	skipped []Skipped
	warns   []*DecodeError
}

// rawDoc is one document's text: YAML, or JSON when json is set.
type rawDoc struct {
	src  []byte
	json bool
	loc  *locator
}

func (st *decodeState) fail(line int, object, format string, args ...any) {
	st.errs = append(st.errs, &DecodeError{File: st.file, Line: line, Object: object, Msg: fmt.Sprintf(format, args...)})
}

var (
	yamlLineRE  = regexp.MustCompile(`line (\d+)`)
	yamlNoiseRE = regexp.MustCompile(`^(yaml: )?(unmarshal errors: )?(line \d+: )?`)
)

func (st *decodeState) document(doc rawDoc) {
	js := doc.src
	if !doc.json {
		var err error
		js, err = yaml.YAMLToJSONStrict(doc.src)
		if err != nil {
			js, err = st.mergedKeys(doc, err)
		}
		if err != nil {
			st.yamlError(doc.loc, err)
			return
		}
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return // an empty document, as kubectl skips them
	}
	st.object(js, doc.loc, nil, true)
}

// mergedKeys retries a document the strict conversion refused for a key "already set in
// map". The strict decoder counts a key that overrides one a merge key (<<: *base) brought in
// as a duplicate, but YAML's merge keys are made to be overridden, and istiod (like kubectl)
// reads such YAML. So the document is converted leniently, as istiod does, unless a mapping
// writes one key twice itself: then the first such key is the error.
func (st *decodeState) mergedKeys(doc rawDoc, strictErr error) ([]byte, error) {
	if !strings.Contains(strictErr.Error(), "already set in map") {
		return nil, strictErr
	}
	js, err := yaml.YAMLToJSON(doc.src)
	if err != nil {
		return nil, strictErr
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc.src, &root); err != nil {
		return nil, strictErr
	}
	if line, key, dup := duplicateKey(&root); dup {
		return nil, fmt.Errorf("line %d: key %q already set in map", line, key)
	}
	return js, nil
}

// duplicateKey finds the first mapping under n that writes one key twice, merge keys aside.
// line is relative to n's text.
func duplicateKey(n *yamlv3.Node) (line int, key string, dup bool) {
	if n.Kind == yamlv3.MappingNode {
		seen := make(map[[2]string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yamlv3.ScalarNode && k.ShortTag() == "!!merge" {
				continue
			}
			id := [2]string{k.ShortTag(), k.Value}
			if k.Kind == yamlv3.ScalarNode && seen[id] {
				return k.Line, k.Value, true
			}
			seen[id] = true
		}
	}
	for _, c := range n.Content {
		if c.Kind == yamlv3.AliasNode {
			continue // its anchor was walked where it is written
		}
		if line, key, dup := duplicateKey(c); dup {
			return line, key, true
		}
	}
	return 0, "", false
}

// yamlError reports a YAML syntax error at its file line, with a hint for the usual causes.
func (st *decodeState) yamlError(loc *locator, err error) {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	line := loc.docLine
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		line = n + loc.firstLine - 1
		msg = msg[:m[0]] + "line " + strconv.Itoa(line) + msg[m[1]:]
	}
	msg = strings.Join(strings.Fields(msg), " ")
	// The line is in front of the message already.
	msg = yamlNoiseRE.ReplaceAllString(msg, "")
	hint := ""
	if bad, ok := badChar(loc.src); ok && (strings.Contains(msg, "control characters") || strings.Contains(msg, "UTF-8")) {
		// The reader's error has no position: find the character ourselves.
		st.fail(bad.line+loc.firstLine-1, "", "invalid YAML: %s", bad.fix)
		return
	}
	switch {
	case strings.Contains(msg, "tab character"):
		hint = "YAML indents with spaces, never tabs: replace the tabs"
	case strings.Contains(msg, "cannot start any token"):
		hint = "YAML indents with spaces, never tabs; quote values that start with '@' or '`'"
	case strings.Contains(msg, "mapping values are not allowed"):
		hint = "check the indentation of this line, and quote values that contain ': '"
	case strings.Contains(msg, "did not find expected"), strings.Contains(msg, "not allowed in this context"):
		hint = "check the indentation of this line against the line before"
	case strings.Contains(msg, "already set in map"), strings.Contains(msg, "already defined"):
		hint = "remove the duplicate key"
	default:
		hint = "fix the YAML syntax"
	}
	st.fail(line, "", "invalid YAML: %s: %s", msg, hint)
}

// badText is the first character of a text that YAML does not allow, with its fix.
type badText struct {
	line int // 1-based, in the text
	fix  string
}

// badChar finds the first byte sequence of src that is not UTF-8, or the first character YAML
// does not allow in a file (C0 and C1 control characters other than tab, line feed, carriage
// return and next line; DEL; U+FFFE and U+FFFF).
func badChar(src []byte) (badText, bool) {
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return badText{line, fmt.Sprintf("byte 0x%02x at column %d is not UTF-8: save the file as UTF-8", src[i], col)}, true
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r >= 0x7f && r <= 0x9f && r != 0x85, r == 0xfffe, r == 0xffff:
			return badText{line, fmt.Sprintf("control character %U at column %d is not allowed: remove it (or write it escaped in a double-quoted string)", r, col)}, true
		case r == '\n':
			line, col = line+1, 0
		}
		i += n
		col++
	}
	return badText{}, false
}

var topLevelKeys = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// object decodes one Kubernetes object (or, when allowList, a List of them) from JSON.
func (st *decodeState) object(js []byte, loc *locator, at validate.Path, allowList bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil || top == nil {
		st.fail(loc.line(at), "", "%sthe document is not an object: write apiVersion, kind, metadata and spec as keys", where(at))
		return
	}
	var apiVersion, kind string
	if err := unmarshalString(top["apiVersion"], &apiVersion); err != nil {
		st.fail(loc.line(at.With("apiVersion")), "", "%s: must be a string such as %q", at.With("apiVersion"), istioconfig.APIVersions()[0])
		return
	}
	if err := unmarshalString(top["kind"], &kind); err != nil {
		st.fail(loc.line(at.With("kind")), "", "%s: must be a string such as %q", at.With("kind"), istioconfig.KindServiceEntry)
		return
	}
	if kind == "" {
		st.fail(loc.line(at), "", "%skind is missing: add one of %s", where(at), istioconfig.KindNames())
		return
	}
	if kind == "List" || strings.HasSuffix(kind, "List") && top["items"] != nil {
		if !allowList {
			st.fail(loc.line(at.With("kind")), "", "%s: a List inside a List is not supported: move the items up", at.With("kind"))
			return
		}
		st.list(top, apiVersion, kind, loc, at)
		return
	}
	if apiVersion == "" {
		st.fail(loc.line(at), "", "%sapiVersion is missing: add apiVersion: %s", where(at), istioconfig.APIVersions()[0])
		return
	}
	mk := istioconfig.Kind(kind)
	spec, known := istioconfig.NewSpec(mk)
	if !known || !istioconfig.Accepts(mk, apiVersion) {
		// Before the top-level fields are checked: a ConfigMap's data or a Secret's
		// stringData are theirs, not unknown fields of an object this package stores.
		st.skip(top, apiVersion, kind, known, loc, at)
		return
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !slices.Contains(topLevelKeys, k) {
			st.fail(loc.line(at.With(k)), "", "%s: unknown field %q%s", at.With(k), k, suggest.Hint(k, topLevelKeys))
			return
		}
	}
	meta, ok := st.metadata(top["metadata"], loc, at.With("metadata"), mk)
	if !ok {
		return
	}
	meta.Kind, meta.Source = mk, st.file
	obj := fmt.Sprintf("%s %s/%s", kind, meta.Namespace, meta.Name)
	if raw := top["spec"]; len(raw) > 0 && string(raw) != "null" {
		err := protojson.Unmarshal(raw, spec)
		if err != nil && strings.Contains(err.Error(), string(durationName)) {
			// Go-style durations ("30ms") are valid Istio YAML: convert them and retry.
			if fixed, ok := normalizeDurations(raw, spec.ProtoReflect().Descriptor()); ok {
				proto.Reset(spec)
				if err = protojson.Unmarshal(fixed, spec); err != nil {
					// Report against the original text, where the lines are.
					proto.Reset(spec)
					err = protojson.Unmarshal(raw, spec)
				}
			}
		}
		if err != nil {
			st.specError(raw, err, spec, loc, at.With("spec"), obj)
			return
		}
	}
	cfg := &istioconfig.Config{Meta: meta, Spec: spec}
	if err := istioconfig.Validate(cfg); err != nil {
		st.fail(loc.line(at), obj, "%v", err)
		return
	}
	bad := false
	var warns []*DecodeError
	for _, p := range append(validate.Metadata(cfg), validate.Check(cfg.Namespace, cfg.Spec)...) {
		full := at.With(p.Path...)
		e := &DecodeError{File: st.file, Line: loc.line(full), Object: obj, Msg: full.String() + ": " + p.Msg}
		if p.Warn {
			warns = append(warns, e)
			continue
		}
		st.errs = append(st.errs, e)
		bad = true
	}
	if bad {
		return
	}
	if first, dup := st.seen[cfg.Key()]; dup {
		// One input defines one object once: which copy would win is anyone's guess.
		prev := st.at[first]
		st.fail(loc.line(at), obj, "defined twice in this file (first at line %d): remove one copy", prev.loc.line(prev.path))
		return
	}
	if st.seen == nil {
		st.seen = make(map[istioconfig.Key]int)
	}
	st.seen[cfg.Key()] = len(st.out)
	// Warnings only of objects that load: a rejected object's errors come first.
	st.warns = append(st.warns, warns...)
	st.out = append(st.out, cfg)
	st.at = append(st.at, objectAt{loc: loc, path: at})
}

// istiodFileKinds are the "apiVersion kind" pairs istiod's file source parses (its crd
// ParseInputs over collections.PilotGatewayAPI(), without the alpha Gateway API kinds
// PILOT_ENABLE_ALPHA_GATEWAY_API adds, each with its version aliases) among those xdslab
// does not read. istiod converts and validates such a document and refuses the whole file
// when one is invalid; it passes over any other document (an IstioOperator, a ConfigMap, an
// EnvoyFilter of apiVersion networking.istio.io/v1) without reading it.
var istiodFileKinds = func() map[string]bool {
	m := map[string]bool{}
	add := func(group, kind string, versions ...string) {
		for _, v := range versions {
			m[group+"/"+v+" "+kind] = true
		}
	}
	add("networking.istio.io", "EnvoyFilter", "v1alpha3")
	add("networking.istio.io", "ProxyConfig", "v1beta1")
	add("networking.istio.io", "WorkloadGroup", "v1alpha3", "v1beta1", "v1")
	add("telemetry.istio.io", "Telemetry", "v1alpha1", "v1")
	add("extensions.istio.io", "WasmPlugin", "v1alpha1")
	add("extensions.istio.io", "TrafficExtension", "v1alpha1")
	const gw = "gateway.networking.k8s.io"
	add(gw, "Gateway", "v1alpha2", "v1beta1", "v1")
	add(gw, "GatewayClass", "v1alpha2", "v1beta1", "v1")
	add(gw, "HTTPRoute", "v1alpha2", "v1beta1", "v1")
	add(gw, "GRPCRoute", "v1alpha2", "v1")
	add(gw, "TCPRoute", "v1alpha2", "v1")
	add(gw, "TLSRoute", "v1alpha2", "v1")
	add(gw, "ReferenceGrant", "v1alpha2", "v1beta1")
	add(gw, "BackendTLSPolicy", "v1")
	add(gw, "ListenerSet", "v1")
	return m
}()

// skip records a document of a kind or apiVersion this package does not store, with a hint
// when it looks like a typo of one it does.
func (st *decodeState) skip(top map[string]json.RawMessage, apiVersion, kind string, knownKind bool, loc *locator, at validate.Path) {
	sk := Skipped{File: st.file, Line: loc.line(at), APIVersion: apiVersion, Kind: kind}
	var meta struct{ Name, Namespace string }
	if json.Unmarshal(top["metadata"], &meta) == nil && meta.Name != "" {
		ns := meta.Namespace
		if ns == "" {
			ns = st.d.DefaultNamespace
		}
		sk.Name = ns + "/" + meta.Name
	}
	group, _, _ := strings.Cut(apiVersion, "/")
	switch {
	case istiodFileKinds[apiVersion+" "+kind]:
		// A kind istiod's file source reads and xdslab does not (a Gateway API Gateway is
		// no Istio Gateway of the wrong apiVersion), so does not check: istiod converts and
		// validates it, and an invalid one makes it refuse the whole file.
		sk.Hint = "xdslab does not check it, but istiod's file source refuses the whole file when it is invalid: check it with istioctl validate"
	case knownKind:
		sk.Hint = fmt.Sprintf("for a %s use apiVersion: %s", kind, istioconfig.KindAPIVersions(istioconfig.Kind(kind))[0])
	case group == istioconfig.Group || group == istioconfig.SecurityGroup:
		if n := suggest.Nearest(kind, strings.Split(istioconfig.KindNames(), ", ")); n != "" {
			sk.Hint = fmt.Sprintf("did you mean kind: %s?", n)
		}
	}
	st.skipped = append(st.skipped, sk)
}

func (st *decodeState) list(top map[string]json.RawMessage, apiVersion, kind string, loc *locator, at validate.Path) {
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "apiVersion" && k != "kind" && k != "items" && k != "metadata" {
			st.fail(loc.line(at.With(k)), "", "%s: unknown field %q in a %s: a List has apiVersion, kind, metadata and items", at.With(k), k, kind)
			return
		}
	}
	if kind != "List" || (apiVersion != "v1" && apiVersion != "") {
		st.fail(loc.line(at.With("kind")), "", "%s: unsupported list %s %q: use apiVersion: v1 and kind: List", at.With("kind"), apiVersion, kind)
		return
	}
	var items []json.RawMessage
	if raw := top["items"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &items); err != nil {
			st.fail(loc.line(at.With("items")), "", "%s: must be a list of objects", at.With("items"))
			return
		}
	}
	if len(items) > 0 {
		// istiod's file source skips a List as a kind it does not watch; kubectl apply (and
		// so istiod's Kubernetes source) reads its items, as xdslab does.
		st.warns = append(st.warns, &DecodeError{File: st.file, Line: loc.line(at.With("kind")),
			Msg: fmt.Sprintf("%s: istiod's file source does not read a List's items (it skips the document); xdslab reads them, as kubectl applies them: for a directory istiod serves too, write the items as documents separated by '---'", at.With("kind"))})
	}
	for i, item := range items {
		st.object(item, loc, at.With("items", i), false)
	}
}

// ignoredMeta are ObjectMeta fields of `kubectl get -o yaml` output that the control plane has
// no use for; they are accepted so such output can be applied unchanged.
var (
	usedMeta    = []string{"name", "namespace", "labels", "annotations", "resourceVersion", "creationTimestamp"}
	ignoredMeta = []string{"uid", "generation", "managedFields", "finalizers", "ownerReferences",
		"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}
)

func (st *decodeState) metadata(raw json.RawMessage, loc *locator, at validate.Path, kind istioconfig.Kind) (istioconfig.Meta, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || string(raw) == "null" {
		st.fail(loc.line(at[:len(at)-1]), "", "%s is missing: add metadata with a name (and a namespace, else %q)", at, st.d.DefaultNamespace)
		return istioconfig.Meta{}, false
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		st.fail(loc.line(at), "", "%s: must be an object with name, namespace, labels, annotations", at)
		return istioconfig.Meta{}, false
	}
	var meta istioconfig.Meta
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "name", "namespace", "resourceVersion":
			var s string
			if err := unmarshalString(v, &s); err != nil {
				st.fail(loc.line(at.With(k)), "", "%s: must be a string, got %s: quote it (YAML reads y, n, yes, no, on, off as booleans)", at.With(k), v)
				return meta, false
			}
			switch k {
			case "name":
				meta.Name = s
			case "namespace":
				meta.Namespace = s
			default:
				meta.ResourceVersion = s
			}
		case "labels", "annotations":
			var mm map[string]any
			if err := json.Unmarshal(v, &mm); err != nil {
				st.fail(loc.line(at.With(k)), "", "%s: must be a map of strings", at.With(k))
				return meta, false
			}
			out := make(map[string]string, len(mm))
			for _, mk := range slices.Sorted(maps.Keys(mm)) {
				s, ok := mm[mk].(string)
				if !ok {
					st.fail(loc.line(at.With(k, mk)), "", "%s: the value must be a string: quote it (%s: \"%v\")", at.With(k, mk), mk, jsonText(mm[mk]))
					return meta, false
				}
				out[mk] = s
			}
			if len(out) == 0 {
				out = nil
			}
			if k == "labels" {
				meta.Labels = out
			} else {
				meta.Annotations = out
			}
		case "creationTimestamp":
			var s *string
			if err := json.Unmarshal(v, &s); err != nil {
				st.fail(loc.line(at.With(k)), "", "%s: must be an RFC 3339 time string", at.With(k))
				return meta, false
			}
			if s != nil {
				t, err := time.Parse(time.RFC3339, *s)
				if err != nil {
					st.fail(loc.line(at.With(k)), "", "%s: %q is not an RFC 3339 time such as 2024-01-02T15:04:05Z", at.With(k), *s)
					return meta, false
				}
				meta.CreationTimestamp = t
			}
		case "generateName":
			st.fail(loc.line(at.With(k)), "", "%s is not supported: set metadata.name", at.With(k))
			return meta, false
		default:
			if !slices.Contains(ignoredMeta, k) {
				st.fail(loc.line(at.With(k)), "", "%s: unknown field %q%s", at.With(k), k, suggest.Hint(k, usedMeta))
				return meta, false
			}
		}
	}
	if meta.Namespace == "" {
		meta.Namespace = st.d.DefaultNamespace
	}
	obj := fmt.Sprintf("%s %s/%s", kind, meta.Namespace, meta.Name)
	if err := istioconfig.ValidateName(meta.Name); err != nil {
		st.fail(loc.line(at.With("name")), obj, "%v", err)
		return meta, false
	}
	if err := istioconfig.ValidateNamespace(meta.Namespace); err != nil {
		st.fail(loc.line(at.With("namespace")), obj, "%v", err)
		return meta, false
	}
	return meta, true
}

var protoPosRE = regexp.MustCompile(`\(line (\d+):(\d+)\): (.*)$`)

// specError turns a protojson error into a message at the offending key's line.
func (st *decodeState) specError(raw json.RawMessage, err error, spec proto.Message, loc *locator, at validate.Path, obj string) {
	msg := err.Error()
	m := protoPosRE.FindStringSubmatch(msg)
	if m == nil {
		st.fail(loc.line(at), obj, "%s: %s", at, cleanProtoMsg(msg))
		return
	}
	l, _ := strconv.Atoi(m[1])
	c, _ := strconv.Atoi(m[2])
	sub := jsonPathAt(raw, byteOffset(raw, l, c))
	full := at.With(sub...)
	text := m[3]
	switch {
	case strings.HasPrefix(text, "unknown field "):
		name := strings.Trim(strings.TrimPrefix(text, "unknown field "), `"`)
		cands := fieldsAt(spec.ProtoReflect().Descriptor(), sub)
		text = fmt.Sprintf("unknown field %q%s", name, suggest.Hint(name, cands))
		if len(cands) > 0 && suggest.Hint(name, cands) == "" {
			text += fmt.Sprintf(" (valid fields here: %s)", strings.Join(cands, ", "))
		}
	case strings.HasPrefix(text, "invalid value for enum field "):
		if vals := enumValuesAt(spec.ProtoReflect().Descriptor(), sub); len(vals) > 0 {
			_, got, _ := strings.Cut(text, ": ")
			got, _ = strconv.Unquote(got)
			if n := suggest.Nearest(got, vals); n != "" {
				text += fmt.Sprintf(": did you mean %q? (one of: %s)", n, strings.Join(vals, ", "))
			} else {
				text += ": use one of: " + strings.Join(vals, ", ")
			}
			break
		}
		text += ": check the value's type (quote strings, use numbers without quotes, durations like \"5s\")"
	case strings.Contains(text, ", oneof ") && strings.HasSuffix(text, " is already set"):
		// protojson names the oneof by its proto name: name the fields the user wrote instead.
		if md := messageAt(spec.ProtoReflect().Descriptor(), sub[:max(len(sub)-1, 0)]); md != nil && len(sub) > 0 {
			if name, ok := sub[len(sub)-1].(string); ok {
				if fd := fieldNamed(md, name); fd != nil && fd.ContainingOneof() != nil {
					var alts []string
					fs := fd.ContainingOneof().Fields()
					for i := range fs.Len() {
						alts = append(alts, fs.Get(i).JSONName())
					}
					text = fmt.Sprintf("only one of %s may be set: keep one", strings.Join(alts, ", "))
				}
			}
		}
	case isDurationAt(spec.ProtoReflect().Descriptor(), sub):
		text += `: write a duration with a unit, such as "10s", "500ms" or "1m30s" (units h, m, s, ms, us, ns)`
	case strings.HasPrefix(text, "invalid value for "):
		text += ": check the value's type (quote strings, use numbers without quotes, durations like \"5s\")"
	}
	st.fail(loc.line(full), obj, "%s: %s", full, text)
}

// isDurationAt says whether path p (from md) ends at a google.protobuf.Duration field.
func isDurationAt(md protoreflect.MessageDescriptor, p validate.Path) bool {
	if len(p) == 0 {
		return false
	}
	name, ok := p[len(p)-1].(string)
	if !ok {
		return false
	}
	if md = messageAt(md, p[:len(p)-1]); md == nil {
		return false
	}
	fd := fieldNamed(md, name)
	return fd != nil && fd.Message() != nil && fd.Message().FullName() == durationName
}

func cleanProtoMsg(s string) string {
	s = strings.TrimPrefix(s, "proto:")
	return strings.TrimSpace(strings.TrimPrefix(s, "\u00a0"))
}

func where(at validate.Path) string {
	if len(at) == 0 {
		return ""
	}
	return at.String() + ": "
}

func unmarshalString(raw json.RawMessage, s *string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, s)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// yamlNote is what splitYAML found between documents: an error, or a warning (warn).
type yamlNote struct {
	line int
	msg  string
	warn bool
}

// splitYAML cuts a YAML stream at "---" lines and returns the documents that hold more than
// blanks and comments, each with the file line it starts on. A "..." end marker ends its
// document as in istiod's file source, which reads each "---"-separated part as one YAML
// document: whatever follows the marker up to the next "---" line is not read (a warning
// names its first line), and a marker that ends no document (nothing but blanks and comments
// before it since the last "---") is an error, as it is there.
func splitYAML(data []byte) ([]rawDoc, []yamlNote) {
	var docs []rawDoc
	var notes []yamlNote
	start, startLine := 0, 1
	// ended is the line of the "..." marker that ended the current part's document (0: none),
	// ignored the first line with content after it.
	ended, ignored := 0, 0
	flush := func(end int) {
		src := data[start:end]
		if first := firstContentLine(src); first > 0 {
			docs = append(docs, rawDoc{src: src, loc: &locator{src: src, firstLine: startLine, docLine: startLine + first - 1}})
		}
	}
	endPart := func() {
		if ignored > 0 {
			notes = append(notes, yamlNote{line: ignored, warn: true, msg: fmt.Sprintf(
				"not read: the '...' end marker on line %d ends the document, and istiod reads nothing after it until the next '---' line: put '---' before this line to start a new document, or remove '...'", ended)})
		}
		ended, ignored = 0, 0
	}
	line := 1
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := bytes.TrimRight(data[off:next], "\r\n")
		switch {
		case isDocMarker(l) && l[0] == '.':
			if ended > 0 {
				break // a second marker in the part that is not read
			}
			if firstContentLine(data[start:off]) == 0 {
				notes = append(notes, yamlNote{line: line, msg: "the '...' end marker ends no document (istiod refuses the file): remove it, or put the document before it"})
			}
			flush(off)
			ended = line
		case isDocMarker(l):
			if ended == 0 {
				flush(off)
			}
			endPart()
			rest := bytes.TrimSpace(l[3:])
			if len(rest) > 0 && rest[0] != '#' {
				// "--- value": the document starts on the marker line; keep columns by blanking
				// the marker.
				start, startLine = off, line
				data = slices.Clone(data) // never modify the caller's bytes
				copy(data[off:], "   ")
			} else {
				start, startLine = next, line+1
			}
		case ended > 0 && ignored == 0 && firstContentLine(l) > 0:
			ignored = line
		}
		off = next
	}
	if ended == 0 {
		flush(len(data))
	}
	endPart()
	return docs, notes
}

func isDocMarker(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) && !bytes.HasPrefix(l, []byte("...")) {
		return false
	}
	return len(l) == 3 || l[3] == ' ' || l[3] == '\t'
}

// firstContentLine is the 1-based line of the first line of src that is neither blank nor a
// comment, or 0.
func firstContentLine(src []byte) int {
	for i, l := range bytes.Split(src, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' && !bytes.HasPrefix(t, []byte("%")) {
			return i + 1
		}
	}
	return 0
}

// splitJSON reads a stream of JSON objects. ok is false when data is not JSON (then it is
// read as YAML, of which JSON is a subset, to report errors the YAML way).
func splitJSON(data []byte) (docs []rawDoc, ok bool) {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		startOff := int(dec.InputOffset())
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, true
			}
			return nil, false
		}
		// InputOffset before Decode may include whitespace: find the value's first byte.
		valueOff := startOff + bytes.IndexByte(data[startOff:], raw[0])
		line := bytes.Count(data[:valueOff], []byte("\n")) + 1
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, false
		}
		docs = append(docs, rawDoc{src: compact.Bytes(), json: true,
			loc: &locator{src: data[valueOff : valueOff+len(raw)], firstLine: line, docLine: line}})
	}
}
