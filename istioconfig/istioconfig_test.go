package istioconfig

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
)

func TestEveryKindHasASpec(t *testing.T) {
	for _, k := range Kinds() {
		spec, ok := NewSpec(k)
		if !ok || spec == nil {
			t.Fatalf("NewSpec(%s) = %v, %v", k, spec, ok)
		}
		vs := KindAPIVersions(k)
		if len(vs) == 0 {
			t.Errorf("%s: no apiVersions", k)
		}
		for _, v := range vs {
			if !Accepts(k, v) {
				t.Errorf("%s: Accepts(%s) is false though it is listed", k, v)
			}
		}
		if Accepts(k, "v1") {
			t.Errorf("%s: Accepts a bare version", k)
		}
		if !strings.Contains(KindNames(), string(k)) {
			t.Errorf("KindNames() lacks %s", k)
		}
	}
	if _, ok := NewSpec("Pod"); ok {
		t.Error("NewSpec(Pod) succeeded")
	}
}

func TestSpecRoundTrip(t *testing.T) {
	for _, c := range []Config{
		{Meta: Meta{Kind: KindServiceEntry, Name: "a", Namespace: "ns"}, Spec: &networking.ServiceEntry{Hosts: []string{"a.ns.svc"}, Resolution: networking.ServiceEntry_STATIC}},
		{Meta: Meta{Kind: KindAuthorizationPolicy, Name: "p", Namespace: "ns"}, Spec: &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_DENY}},
		{Meta: Meta{Kind: KindRequestAuthentication, Name: "j", Namespace: "ns"}, Spec: &securityapi.RequestAuthentication{JwtRules: []*securityapi.JWTRule{{Issuer: "i"}}}},
	} {
		b, err := MarshalSpec(c.Spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalSpec(c.Kind, b)
		if err != nil {
			t.Fatalf("%s: %v", c.Key(), err)
		}
		if !proto.Equal(got, c.Spec) {
			t.Errorf("%s: round trip gave %v, want %v", c.Key(), got, c.Spec)
		}
		if err := Validate(&c); err != nil {
			t.Errorf("Validate(%s) = %v", c.Key(), err)
		}
	}
	if _, err := UnmarshalSpec(KindServiceEntry, []byte(`{"hostz":["a"]}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
	if _, err := UnmarshalSpec("Pod", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "use one of") {
		t.Errorf("unknown kind: err = %v", err)
	}
}

func TestValidate(t *testing.T) {
	se := &networking.ServiceEntry{}
	for _, tc := range []struct {
		name string
		cfg  *Config
		want string // "" = valid
	}{
		{"ok", &Config{Meta: Meta{Kind: KindServiceEntry, Name: "a.b", Namespace: "ns"}, Spec: se}, ""},
		{"nil", nil, "config is nil"},
		{"unknown kind", &Config{Meta: Meta{Kind: "Pod", Name: "a", Namespace: "ns"}, Spec: se}, "unknown kind"},
		{"no name", &Config{Meta: Meta{Kind: KindServiceEntry, Namespace: "ns"}, Spec: se}, "metadata.name is required"},
		{"bad name", &Config{Meta: Meta{Kind: KindServiceEntry, Name: "A_b", Namespace: "ns"}, Spec: se}, "not a valid name"},
		{"bad namespace", &Config{Meta: Meta{Kind: KindServiceEntry, Name: "a", Namespace: "n.s"}, Spec: se}, "not a valid namespace"},
		{"nil spec", &Config{Meta: Meta{Kind: KindServiceEntry, Name: "a", Namespace: "ns"}}, "spec is nil"},
		{"wrong spec", &Config{Meta: Meta{Kind: KindSidecar, Name: "a", Namespace: "ns"}, Spec: se}, "want istio.networking.v1alpha3.Sidecar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestRenderYAML(t *testing.T) {
	c := Config{Meta: Meta{Kind: KindServiceEntry, Name: "a", Namespace: "ns", Labels: map[string]string{"app": "a"}},
		Spec: &networking.ServiceEntry{Hosts: []string{"a.ns.svc"}}}
	y, err := RenderYAML(c, DefaultAPIVersion)
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: networking.istio.io/v1alpha3\nkind: ServiceEntry\nmetadata:\n  labels:\n    app: a\n  name: a\n  namespace: ns\nspec:\n  hosts:\n  - a.ns.svc\n"
	if string(y) != want {
		t.Errorf("got\n%s\nwant\n%s", y, want)
	}
	// The security kinds are written under the only group that serves them.
	for _, k := range []Kind{KindPeerAuthentication, KindAuthorizationPolicy, KindRequestAuthentication} {
		spec, _ := NewSpec(k)
		y, err := RenderYAML(Config{Meta: Meta{Kind: k, Name: "p", Namespace: "ns"}, Spec: spec}, DefaultAPIVersion)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(y), "apiVersion: security.istio.io/v1\n") {
			t.Errorf("%s rendered as\n%s", k, y)
		}
	}
}

func FuzzUnmarshalSpec(f *testing.F) {
	f.Add("ServiceEntry", []byte(`{"hosts":["a"],"ports":[{"number":80,"name":"http"}]}`))
	f.Add("AuthorizationPolicy", []byte(`{"action":"DENY"}`))
	f.Add("Pod", []byte(`{}`))
	f.Fuzz(func(t *testing.T, kind string, data []byte) {
		m, err := UnmarshalSpec(Kind(kind), data)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same message.
		b, err := MarshalSpec(m)
		if err != nil {
			t.Fatalf("re-marshal: %v", err)
		}
		m2, err := UnmarshalSpec(Kind(kind), b)
		if err != nil || !proto.Equal(m, m2) {
			t.Fatalf("round trip of %s: %v", b, err)
		}
	})
}
