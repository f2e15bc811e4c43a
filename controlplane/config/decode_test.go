package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/internal/golden"
	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/protobuf/encoding/protojson"
)

// dump renders configs in a stable text form for golden files.
func dump(cs []*istioconfig.Config) string {
	var b strings.Builder
	for _, c := range cs {
		raw, err := protojson.Marshal(c.Spec)
		if err != nil {
			panic(err)
		}
		// protojson varies its spacing from build to build on purpose: compact it.
		var js bytes.Buffer
		if err := json.Compact(&js, raw); err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, "%s source=%s labels=%v annotations=%v rv=%q created=%s\n  spec %T %s\n",
			c.Key(), c.Source, c.Labels, c.Annotations, c.ResourceVersion, c.CreationTimestamp.Format(time.RFC3339), c.Spec,
			js.String())
	}
	return b.String()
}

func TestDecodeGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Decode("testdata/good.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 9 {
		t.Errorf("got %d configs, want 9", len(cs))
	}
	golden.Check(t, filepath.Join("testdata", "good.golden"), []byte(dump(cs)))
}

const seHead = "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: a\nspec:\n"

func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		file     string // default f.yaml
		wantKeys []string
		// wantErrs are "line: substring" for each expected error, in order.
		wantErrs []string
	}{
		{name: "empty", in: ""},
		{name: "comments only", in: "# nothing\n---\n# still nothing\n"},
		{name: "v1", in: seHead + "  hosts: [a]\n", wantKeys: []string{"ServiceEntry/default/a"}},
		{name: "v1beta1", in: strings.Replace(seHead, "/v1\n", "/v1beta1\n", 1) + "  hosts: [a]\n", wantKeys: []string{"ServiceEntry/default/a"}},
		{name: "v1alpha3", in: strings.Replace(seHead, "/v1\n", "/v1alpha3\n", 1) + "  hosts: [a]\n", wantKeys: []string{"ServiceEntry/default/a"}},
		{name: "no spec is an empty spec, then validated", in: "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: s, namespace: ns}\n",
			wantErrs: []string{`1: Sidecar ns/s: spec: the Sidecar configures nothing`}},
		{
			name:     "document marker with content and CRLF",
			in:       "--- " + strings.ReplaceAll("{apiVersion: networking.istio.io/v1, kind: Gateway, metadata: {name: g}, spec: {servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]}}\n", "\n", "\r\n"),
			wantKeys: []string{"Gateway/default/g"},
		},
		{
			name:     "json stream",
			in:       `{"apiVersion":"networking.istio.io/v1","kind":"Gateway","metadata":{"name":"g"},"spec":{"servers":[{"port":{"number":80,"name":"http","protocol":"HTTP"},"hosts":["*"]}]}}` + "\n" + `{"apiVersion":"networking.istio.io/v1","kind":"Gateway","metadata":{"name":"h"},"spec":{"servers":[{"port":{"number":80,"name":"http","protocol":"HTTP"},"hosts":["*"]}]}}`,
			wantKeys: []string{"Gateway/default/g", "Gateway/default/h"},
		},
		{
			name:     "json unknown spec field line",
			in:       "{\n  \"apiVersion\": \"networking.istio.io/v1\",\n  \"kind\": \"ServiceEntry\",\n  \"metadata\": {\"name\": \"a\"},\n  \"spec\": {\n    \"hosts\": [\"x\"],\n    \"resolutio\": \"DNS\"\n  }\n}\n",
			wantErrs: []string{`7: ServiceEntry default/a: spec.resolutio: unknown field "resolutio" (did you mean "resolution"?)`},
		},
		{
			name:     "unknown field in spec names line, path and fix",
			in:       seHead + "  hosts: [a]\n  ports:\n  - number: 80\n    name: http\n    protocoll: HTTP\n",
			wantErrs: []string{`10: ServiceEntry default/a: spec.ports[0].protocoll: unknown field "protocoll" (did you mean "protocol"?)`},
		},
		{
			name:     "unknown field deep in a map value",
			in:       "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n  http:\n  - match:\n    - headers:\n        user:\n          exakt: x\n",
			wantErrs: []string{`9: VirtualService default/v: spec.http[0].match[0].headers.user.exakt: unknown field "exakt" (did you mean "exact"?)`},
		},
		{
			name:     "wrong value type",
			in:       seHead + "  hosts: [a]\n  ports:\n  - number: eighty\n",
			wantErrs: []string{`8: ServiceEntry default/a: spec.ports[0].number: invalid value for uint32 field number`},
		},
		{
			name:     "two fields of a oneof name the alternatives",
			in:       "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\nspec:\n  host: a\n  trafficPolicy:\n    loadBalancer:\n      consistentHash: {httpHeaderName: x}\n      simple: ROUND_ROBIN\n",
			wantErrs: []string{`9: DestinationRule default/d: spec.trafficPolicy.loadBalancer.simple: only one of simple, consistentHash`},
		},
		{
			name:     "bad enum",
			in:       seHead + "  resolution: SOMETIMES\n",
			wantErrs: []string{`6: ServiceEntry default/a: spec.resolution: invalid value for enum field resolution: "SOMETIMES": use one of: NONE, STATIC, DNS, DNS_ROUND_ROBIN, DYNAMIC_DNS`},
		},
		{
			name:     "misspelt enum",
			in:       seHead + "  resolution: STATC\n",
			wantErrs: []string{`6: ServiceEntry default/a: spec.resolution: invalid value for enum field resolution: "STATC": did you mean "STATIC"? (one of: NONE, STATIC, DNS, DNS_ROUND_ROBIN, DYNAMIC_DNS)`},
		},
		{
			name:     "misspelt enum in a nested message",
			in:       "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata:\n  name: p\nspec:\n  mtls: {mode: STRIKT}\n",
			wantErrs: []string{`6: PeerAuthentication default/p: spec.mtls.mode: invalid value for enum field mode: "STRIKT": did you mean "STRICT"?`},
		},
		{
			name:     "dry-run annotation on an AUDIT policy names its line",
			in:       "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata:\n  name: p\n  annotations:\n    istio.io/dry-run: \"true\"\nspec:\n  action: AUDIT\n  rules: [{}]\n",
			wantErrs: []string{`6: AuthorizationPolicy default/p: metadata.annotations.istio.io/dry-run: supports actions ALLOW and DENY only`},
		},
		{
			name:     "bad indentation",
			in:       "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: a\n   namespace: b\nspec: {}\n",
			wantErrs: []string{`5: invalid YAML: mapping values are not allowed in this context: check the indentation`},
		},
		{
			name:     "tab indentation in the second document",
			in:       seHead + "  hosts: [a]\n---\napiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n\tname: b\n",
			wantKeys: []string{"ServiceEntry/default/a"},
			wantErrs: []string{`11: invalid YAML: found character that cannot start any token: YAML indents with spaces, never tabs`},
		},
		{
			name:     "duplicate key",
			in:       "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: a\n  name: b\n",
			wantErrs: []string{`5: invalid YAML: key "name" already set in map: remove the duplicate key`},
		},
		{
			name: "merge key overridden, as istiod reads it",
			in: seHead + "  hosts: [a]\n  ports:\n  - &http {number: 80, name: http, protocol: HTTP}\n" +
				"  - <<: *http\n    number: 81\n    name: http-alt\n",
			wantKeys: []string{"ServiceEntry/default/a"},
		},
		{
			name: "merge key, and a key the mapping writes twice itself",
			in: seHead + "  hosts: [a]\n  ports:\n  - &http {number: 80, name: http, protocol: HTTP}\n" +
				"  - <<: *http\n    number: 81\n    name: http-alt\n    number: 82\n",
			wantErrs: []string{`12: invalid YAML: key "number" already set in map: remove the duplicate key`},
		},
		{
			name: "one object twice in a List names both lines",
			in: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: networking.istio.io/v1\n  kind: ServiceEntry\n  metadata: {name: a}\n  spec: {hosts: [a]}\n" +
				"- apiVersion: networking.istio.io/v1\n  kind: ServiceEntry\n  metadata: {name: a}\n  spec: {hosts: [b]}\n",
			wantKeys: []string{"ServiceEntry/default/a"},
			wantErrs: []string{`8: ServiceEntry default/a: defined twice in this file (first at line 4): remove one copy`},
		},
		{
			name:     "one object twice in two documents names both lines",
			in:       seHead + "  hosts: [a]\n---\n" + seHead + "  hosts: [b]\n",
			wantKeys: []string{"ServiceEntry/default/a"},
			wantErrs: []string{`8: ServiceEntry default/a: defined twice in this file (first at line 1): remove one copy`},
		},
		{
			name:     "a byte that is not UTF-8 names its line and column",
			in:       seHead + "  hosts: [a]\n---\n" + seHead + "  hosts: [caf\xe9]\n",
			wantKeys: []string{"ServiceEntry/default/a"},
			wantErrs: []string{`13: invalid YAML: byte 0xe9 at column 14 is not UTF-8: save the file as UTF-8`},
		},
		{
			name:     "a control character names its line and column",
			in:       seHead + "  hosts: [a]\n  location: MESH_\x00INTERNAL\n",
			wantErrs: []string{`7: invalid YAML: control character U+0000 at column 18 is not allowed`},
		},
		{
			name:     "unknown kind, and the next document still loads",
			in:       "apiVersion: networking.istio.io/v1\nkind: ServiceEntri\nmetadata: {name: a}\n---\n" + seHead + "  hosts: [a]\n",
			wantKeys: []string{"ServiceEntry/default/a"},
			// Skipped, not an error: see TestDecodeSkipped.
		},
		{
			name:     "missing apiVersion",
			in:       "# header\n\nkind: Gateway\nmetadata: {name: a}\n",
			wantErrs: []string{`3: apiVersion is missing: add apiVersion: networking.istio.io/v1`},
		},
		{
			name:     "missing kind",
			in:       "apiVersion: networking.istio.io/v1\nmetadata: {name: a}\n",
			wantErrs: []string{`1: kind is missing`},
		},
		{
			name:     "missing name",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  namespace: x\n",
			wantErrs: []string{`3: Gateway x/: metadata.name is required`},
		},
		{
			name:     "missing metadata",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nspec: {}\n",
			wantErrs: []string{`1: metadata is missing`},
		},
		{
			name:     "invalid name",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: My_Gateway\n",
			wantErrs: []string{`4: Gateway default/My_Gateway: metadata.name "My_Gateway" is not a valid name`},
		},
		{
			name:     "a Gateway's name is a DNS label",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: gw.v2\nspec: {servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]}\n",
			wantErrs: []string{`4: Gateway default/gw.v2: metadata.name: "gw.v2" is not a valid Gateway name`},
		},
		{
			name:     "unknown metadata field",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: g\n  label: {a: b}\n",
			wantErrs: []string{`5: metadata.label: unknown field "label" (did you mean "labels"?)`},
		},
		{
			name:     "unquoted label value",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: g\n  labels:\n    version: 2\n",
			wantErrs: []string{`6: metadata.labels.version: the value must be a string: quote it (version: "2")`},
		},
		{
			name:     "unknown top-level field",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g}\nspce: {}\n",
			wantErrs: []string{`4: spce: unknown field "spce" (did you mean "spec"?)`},
		},
		{
			name:     "not an object",
			in:       "- a\n- b\n",
			wantErrs: []string{`1: the document is not an object`},
		},
		{
			name:     "list with a bad item keeps the good ones",
			in:       "apiVersion: v1\nkind: List\nitems:\n- apiVersion: networking.istio.io/v1\n  kind: Gateway\n  metadata: {name: g}\n  spec: {servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]}\n- apiVersion: networking.istio.io/v1\n  kind: Gateway\n  metadata: {name: h}\n  spec:\n    servers:\n    - hostz: [a]\n",
			wantKeys: []string{"Gateway/default/g"},
			wantErrs: []string{`13: Gateway default/h: items[1].spec.servers[0].hostz: unknown field "hostz" (did you mean "hosts"?)`},
		},
		{
			name:     "list inside a list",
			in:       "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n",
			wantErrs: []string{`5: items[0].kind: a List inside a List is not supported`},
		},
		{
			name:     "other list kinds",
			in:       "apiVersion: networking.istio.io/v1\nkind: ServiceEntryList\nitems: []\n",
			wantErrs: []string{`2: kind: unsupported list networking.istio.io/v1 "ServiceEntryList": use apiVersion: v1 and kind: List`},
		},
		{
			name:     "bad duration",
			in:       "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\nspec:\n  host: a\n  trafficPolicy:\n    connectionPool:\n      tcp:\n        connectTimeout: 5 seconds\n",
			wantErrs: []string{`9: DestinationRule default/d: spec.trafficPolicy.connectionPool.tcp.connectTimeout: invalid google.protobuf.Duration value`},
		},
		{
			name:     "a duration without a unit",
			in:       "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v}\nspec:\n  hosts: [a]\n  http:\n  - timeout: 10\n    route: [{destination: {host: a}}]\n",
			wantErrs: []string{`7: VirtualService default/v: spec.http[0].timeout: unexpected token 10: write a duration with a unit, such as "10s"`},
		},
		{
			name:     "a duration in days",
			in:       "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\nspec:\n  host: a\n  trafficPolicy:\n    outlierDetection: {interval: 1d}\n",
			wantErrs: []string{`7: DestinationRule default/d: spec.trafficPolicy.outlierDetection.interval: invalid google.protobuf.Duration value "1d": write a duration with a unit, such as "10s", "500ms" or "1m30s" (units h, m, s, ms, us, ns)`},
		},
		{
			name: "Go-style durations as Istio's CRDs take them",
			in: "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\nspec:\n  host: a\n  trafficPolicy:\n    outlierDetection: {interval: 1m30s, baseEjectionTime: 15m}\n" +
				"  subsets:\n  - name: v1\n    trafficPolicy:\n      connectionPool: {tcp: {connectTimeout: 250ms}}\n",
			wantKeys: []string{"DestinationRule/default/d"},
		},
		{
			name:     "bad creationTimestamp",
			in:       "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: g\n  creationTimestamp: yesterday\n",
			wantErrs: []string{`5: metadata.creationTimestamp: "yesterday" is not an RFC 3339 time`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := "f.yaml"
			cs, err := Decode(file, []byte(tc.in))
			var keys []string
			for _, c := range cs {
				keys = append(keys, c.Key().String())
				if c.Source != file {
					t.Errorf("%s: Source = %q", c.Key(), c.Source)
				}
			}
			if strings.Join(keys, ",") != strings.Join(tc.wantKeys, ",") {
				t.Errorf("keys = %v, want %v", keys, tc.wantKeys)
			}
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var de *DecodeError
					if !errors.As(e, &de) {
						t.Fatalf("error %v is not a *DecodeError", e)
					}
					got = append(got, de.Error())
				}
			}
			if len(got) != len(tc.wantErrs) {
				t.Fatalf("errors:\n got %q\nwant %q", got, tc.wantErrs)
			}
			for i, w := range tc.wantErrs {
				if !strings.HasPrefix(got[i], file+":"+w) {
					t.Errorf("error %d:\n got %s\nwant prefix %s:%s", i, got[i], file, w)
				}
			}
		})
	}
}

// TestDecodeEndMarkers: a "..." end marker ends its document as istiod's file source reads it
// (each "---"-separated part is one YAML document): what follows it up to the next "---" is
// not read, with a warning on its first line, and a marker that ends no document is an error.
func TestDecodeEndMarkers(t *testing.T) {
	gw := func(name string) string {
		return "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: " + name + "}\nspec: {servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]}\n"
	}
	tests := []struct {
		name     string
		in       string
		wantKeys []string
		// wantErr and wantWarn are "line: message prefix" of the one expected error or warning.
		wantErr, wantWarn string
	}{
		{name: "a trailing marker", in: gw("a") + "...\n", wantKeys: []string{"Gateway/default/a"}},
		{name: "a marker then ---", in: gw("a") + "...\n---\n" + gw("b"), wantKeys: []string{"Gateway/default/a", "Gateway/default/b"}},
		{name: "a document after a marker without ---", in: gw("a") + "...\n" + gw("b"), wantKeys: []string{"Gateway/default/a"},
			wantWarn: "6: not read: the '...' end marker on line 5 ends the document"},
		{name: "a marker with a comment", in: gw("a") + "... # end\n\n" + gw("b") + "---\n" + gw("c"), wantKeys: []string{"Gateway/default/a", "Gateway/default/c"},
			wantWarn: "7: not read: the '...' end marker on line 5"},
		{name: "broken YAML after a marker is not read", in: gw("a") + "...\nkind: [\n", wantKeys: []string{"Gateway/default/a"},
			wantWarn: "6: not read"},
		{name: "comments and a second marker after a marker", in: gw("a") + "...\n# note\n...\n---\n" + gw("b"), wantKeys: []string{"Gateway/default/a", "Gateway/default/b"}},
		{name: "a marker that ends no document", in: "# header\n...\n---\n" + gw("b"), wantKeys: []string{"Gateway/default/b"},
			wantErr: "2: the '...' end marker ends no document"},
		{name: "a lone marker last", in: gw("a") + "---\n...\n", wantKeys: []string{"Gateway/default/a"},
			wantErr: "6: the '...' end marker ends no document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Decoder{}.DecodeAll("f.yaml", []byte(tc.in))
			var keys []string
			for _, c := range res.Configs {
				keys = append(keys, c.Key().String())
			}
			if strings.Join(keys, ",") != strings.Join(tc.wantKeys, ",") {
				t.Errorf("keys = %v, want %v", keys, tc.wantKeys)
			}
			var errs, warns []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					errs = append(errs, e.Error())
				}
			}
			for _, w := range res.Warnings {
				warns = append(warns, w.Error())
			}
			check := func(what string, got []string, want string) {
				t.Helper()
				if want == "" {
					if len(got) > 0 {
						t.Errorf("%s: got %q, want none", what, got)
					}
					return
				}
				if len(got) != 1 || !strings.HasPrefix(got[0], "f.yaml:"+want) {
					t.Errorf("%s:\n got %q\nwant one starting f.yaml:%s", what, got, want)
				}
			}
			check("errors", errs, tc.wantErr)
			check("warnings", warns, tc.wantWarn)
		})
	}
}

// TestDecodeListWarns: a List's items are read, with a warning on its kind that istiod's file
// source skips the List; an empty List has nothing to warn about.
func TestDecodeListWarns(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		keys     int
		warn     string
	}{
		{name: "items", in: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: security.istio.io/v1, kind: PeerAuthentication, metadata: {name: a}, spec: {}}\n", keys: 1,
			warn: "f.yaml:2: kind: istiod's file source does not read a List's items"},
		{name: "items null", in: "apiVersion: v1\nkind: List\nitems: null\n"},
		{name: "no items", in: "apiVersion: v1\nkind: List\nitems: []\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Decoder{}.DecodeAll("f.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Configs) != tc.keys {
				t.Errorf("%d configs, want %d", len(res.Configs), tc.keys)
			}
			var warns []string
			for _, w := range res.Warnings {
				warns = append(warns, w.Error())
			}
			if (tc.warn == "") != (len(warns) == 0) || len(warns) > 1 || (tc.warn != "" && !strings.HasPrefix(warns[0], tc.warn)) {
				t.Errorf("warnings %q, want one starting %q (none if empty)", warns, tc.warn)
			}
		})
	}
}

// TestDecodeMergeKeys: a key written after a merge key overrides the merged one, as
// sigs.k8s.io/yaml's lenient conversion (istiod's file source, kubectl) reads it.
func TestDecodeMergeKeys(t *testing.T) {
	tests := []struct {
		name string
		port string // the third port, under "  - "
		want string // its number, name and protocol
	}{
		{name: "override after the merge", port: "<<: *http\n    number: 81\n    name: alt", want: "81 alt HTTP"},
		// YAML says a mapping's own keys win; sigs.k8s.io/yaml lets a later merge key win, and
		// so does istiod, which reads the file with it.
		{name: "a key before the merge is overridden, as istiod reads it", port: "protocol: TCP\n    <<: *http\n    number: 82\n    name: alt", want: "82 alt HTTP"},
		{name: "merge of a list of anchors: the first wins", port: "<<: [*tcp, *http]\n    number: 83\n    name: alt", want: "83 alt TCP"},
		{name: "merge of a list of anchors, other order", port: "<<: [*http, *tcp]\n    number: 84\n    name: alt", want: "84 alt HTTP"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := seHead + "  hosts: [a]\n  ports:\n  - &http {number: 80, name: http, protocol: HTTP}\n" +
				"  - &tcp {number: 90, name: tcp, protocol: TCP}\n  - " + tc.port + "\n"
			cs, err := Decode("f.yaml", []byte(in))
			if err != nil || len(cs) != 1 {
				t.Fatalf("Decode: %d configs, %v", len(cs), err)
			}
			ports := cs[0].Spec.(*networking.ServiceEntry).GetPorts()
			if len(ports) != 3 {
				t.Fatalf("ports = %v, want 3", ports)
			}
			if got := fmt.Sprintf("%d %s %s", ports[2].GetNumber(), ports[2].GetName(), ports[2].GetProtocol()); got != tc.want {
				t.Errorf("third port = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDecodeDefaultNamespace(t *testing.T) {
	cs, err := Decoder{DefaultNamespace: "team-a"}.Decode("f", []byte(seHead+"  hosts: [a]\n"))
	if err != nil || len(cs) != 1 || cs[0].Namespace != "team-a" {
		t.Fatalf("%v %v", cs, err)
	}
}

func TestJSONPathAt(t *testing.T) {
	js := []byte(`{"a":1,"b":{"c":[10,{"d":true}],"e":"x"}}`)
	tests := []struct {
		at   string // a substring whose first byte is the offset
		want string
	}{
		{`"a"`, "a"}, {`1,`, "a"}, {`"c"`, "b.c"}, {`10`, "b.c[0]"}, {`"d"`, "b.c[1].d"},
		{`true`, "b.c[1].d"}, {`"e"`, "b.e"}, {`"x"`, "b.e"},
	}
	for _, tc := range tests {
		off := strings.Index(string(js), tc.at)
		if got := jsonPathAt(js, off).String(); got != tc.want {
			t.Errorf("at %s (%d): %q, want %q", tc.at, off, got, tc.want)
		}
	}
}

func FuzzDecodeYAML(f *testing.F) {
	good, _ := os.ReadFile("testdata/good.yaml")
	f.Add(good)
	f.Add([]byte(seHead + "  hosts: [a]\n  ports:\n  - number: 80\n    protocoll: HTTP\n"))
	f.Add([]byte("--- {apiVersion: v1, kind: List, items: [{}]}\n...\n"))
	f.Add([]byte(`{"apiVersion":"networking.istio.io/v1","kind":"Gateway","metadata":{"name":"g"},"spec":{"servers":[{"port":{"number":"x"}}]}}`))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("# c\n...\n" + seHead + "  hosts: [a]\n...\nkind: [\n--- # next\n...\n"))
	f.Add([]byte(seHead + "  hosts: [a]\n  ports:\n  - &p {number: 80, name: http}\n  - {<<: *p, number: 81}\n  - {<<: [*p, *p], name: b, name: c}\n---\n" + seHead))
	f.Add([]byte("{apiVersion: security.istio.io/v1, kind: RequestAuthentication, metadata: {name: j}, spec: {jwtRules: [{issuer: i, jwks: '{\"keys\":[]}', fromHeaders: [{name: ''}]}]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := Decode("fuzz.yaml", data)
		for _, c := range cs {
			if verr := istioconfig.Validate(c); verr != nil {
				t.Fatalf("decoded an invalid config: %v", verr)
			}
		}
		if err != nil {
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var de *DecodeError
				if !errors.As(e, &de) || de.Line < 1 || de.File != "fuzz.yaml" {
					t.Fatalf("error without file and line: %v", e)
				}
			}
		}
	})
}

// BenchmarkDecode measures decoding one ServiceEntry document (YAML → JSON → protojson).
func BenchmarkDecode(b *testing.B) {
	doc := []byte("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: svc-1\n  namespace: ns-1\n  labels: {app: svc-1}\n" +
		"spec:\n  hosts: [svc-1.ns-1.svc.cluster.local]\n  resolution: STATIC\n  ports:\n  - {number: 80, name: http, protocol: HTTP}\n" +
		"  endpoints:\n  - {address: 10.0.0.1, labels: {version: v1}}\n  - {address: 10.0.0.2, labels: {version: v2}}\n")
	for b.Loop() {
		if _, err := Decode("b.yaml", doc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// TestSkippedHint: a document xdslab skips gets the hint that istiod's file source refuses
// the whole file for an invalid one only when istiod's file source parses its apiVersion and
// kind (EnvoyFilter v1alpha3, Telemetry, WasmPlugin, WorkloadGroup, the stable Gateway API
// kinds); an IstioOperator, a ConfigMap, an EnvoyFilter of a version istiod does not know or
// an alpha Gateway API kind is passed over by istiod too and gets no such hint.
func TestSkippedHint(t *testing.T) {
	const refuses = "istiod's file source refuses the whole file"
	for _, tc := range []struct {
		apiVersion, kind string
		want             string // a part of the hint, "" for none
	}{
		{"networking.istio.io/v1alpha3", "EnvoyFilter", refuses},
		{"networking.istio.io/v1", "EnvoyFilter", ""},
		{"networking.istio.io/v1beta1", "ProxyConfig", refuses},
		{"networking.istio.io/v1", "WorkloadGroup", refuses},
		{"telemetry.istio.io/v1", "Telemetry", refuses},
		{"telemetry.istio.io/v1alpha1", "Telemetry", refuses},
		{"extensions.istio.io/v1alpha1", "WasmPlugin", refuses},
		{"gateway.networking.k8s.io/v1", "HTTPRoute", refuses},
		{"gateway.networking.k8s.io/v1beta1", "Gateway", refuses},
		{"gateway.networking.k8s.io/v1alpha2", "TCPRoute", refuses},
		{"gateway.networking.k8s.io/v1alpha2", "UDPRoute", ""},
		{"gateway.networking.x-k8s.io/v1alpha1", "XBackendTrafficPolicy", ""},
		{"install.istio.io/v1alpha1", "IstioOperator", ""},
		{"v1", "ConfigMap", ""},
		{"networking.istio.io/v1", "VirtualServce", "did you mean kind: VirtualService?"},
		{"networking.istio.io/v2", "VirtualService", "for a VirtualService use apiVersion: networking.istio.io/v1"},
	} {
		t.Run(tc.apiVersion+" "+tc.kind, func(t *testing.T) {
			in := "apiVersion: " + tc.apiVersion + "\nkind: " + tc.kind + "\nmetadata: {name: x, namespace: default}\nspec: {}\n"
			res, _ := Decoder{}.DecodeAll("h.yaml", []byte(in))
			if len(res.Skipped) != 1 {
				t.Fatalf("skipped %v, want the document", res.Skipped)
			}
			hint := res.Skipped[0].Hint
			if tc.want == "" && hint != "" || tc.want != "" && !strings.Contains(hint, tc.want) {
				t.Errorf("hint %q, want %q", hint, tc.want)
			}
		})
	}
}
