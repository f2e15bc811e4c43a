package mcp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	mcpapi "istio.io/api/mcp/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
)

func sampleConfigs() []*istioconfig.Config {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []*istioconfig.Config{
		{Meta: istioconfig.Meta{Kind: istioconfig.KindServiceEntry, Namespace: "ns1", Name: "reviews", Labels: map[string]string{"app": "reviews"},
			Annotations: map[string]string{"a": "b"}, CreationTimestamp: ts},
			Spec: &networking.ServiceEntry{Hosts: []string{"reviews.ns1.svc.cluster.local"}, Ports: []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}},
				Resolution: networking.ServiceEntry_STATIC, Location: networking.ServiceEntry_MESH_INTERNAL}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindWorkloadEntry, Namespace: "ns1", Name: "reviews-1"}, Spec: &networking.WorkloadEntry{Address: "10.0.0.1"}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Namespace: "ns1", Name: "vs"}, Spec: &networking.VirtualService{Hosts: []string{"reviews"}}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Namespace: "ns1", Name: "dr"}, Spec: &networking.DestinationRule{Host: "reviews"}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindSidecar, Namespace: "ns1", Name: "default"}, Spec: &networking.Sidecar{}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Namespace: "ns1", Name: "gw"}, Spec: &networking.Gateway{}},
		{Meta: istioconfig.Meta{Kind: istioconfig.KindPeerAuthentication, Namespace: "ns1", Name: "pa"}, Spec: &securityapi.PeerAuthentication{}},
	}
}

// TestRoundTrip encodes every stored kind and decodes it back under its type URL.
func TestRoundTrip(t *testing.T) {
	for _, c := range sampleConfigs() {
		t.Run(string(c.Kind), func(t *testing.T) {
			v, err := ContentVersion(c)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Encode(c, v)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decode(TypeURL(c.Kind), 0, a)
			if err != nil {
				t.Fatal(err)
			}
			if d.Version != v {
				t.Errorf("version %q, want %q", d.Version, v)
			}
			if diff := cmp.Diff(c, d.Config, protocmp.Transform()); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			// The body is the Istio proto istiod expects.
			var r mcpapi.Resource
			if err := a.UnmarshalTo(&r); err != nil {
				t.Fatal(err)
			}
			if want := "type.googleapis.com/" + string(proto.MessageName(c.Spec)); r.Body.TypeUrl != want {
				t.Errorf("body type %s, want %s", r.Body.TypeUrl, want)
			}
			if r.Metadata.Name != c.Namespace+"/"+c.Name {
				t.Errorf("name %s", r.Metadata.Name)
			}
		})
	}
}

func TestContentVersion(t *testing.T) {
	c := sampleConfigs()[0]
	v1, _ := ContentVersion(c)
	c2 := *c
	c2.Labels = map[string]string{"app": "reviews"} // equal content, another map
	v2, _ := ContentVersion(&c2)
	if v1 != v2 {
		t.Errorf("equal content: %s != %s", v1, v2)
	}
	c2.Labels = map[string]string{"app": "ratings"}
	if v3, _ := ContentVersion(&c2); v3 == v1 {
		t.Error("a label change kept the version")
	}
	c2 = *c
	c2.Spec = &networking.ServiceEntry{Hosts: []string{"other"}}
	if v4, _ := ContentVersion(&c2); v4 == v1 {
		t.Error("a spec change kept the version")
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		url  string
		kind istioconfig.Kind
		ok   bool
	}{
		{"networking.istio.io/v1/ServiceEntry", istioconfig.KindServiceEntry, true},
		{"networking.istio.io/v1alpha3/ServiceEntry", istioconfig.KindServiceEntry, true},
		{"networking.istio.io/v1beta1/Sidecar", istioconfig.KindSidecar, true},
		{"security.istio.io/v1beta1/PeerAuthentication", istioconfig.KindPeerAuthentication, true},
		{"security.istio.io/v1/AuthorizationPolicy", istioconfig.KindAuthorizationPolicy, true},
		{"security.istio.io/v1/RequestAuthentication", istioconfig.KindRequestAuthentication, true},
		{"networking.istio.io/v1alpha3/EnvoyFilter", "", true},
		{"networking.istio.io/v2/ServiceEntry", "", false},
		{"core/v1alpha1/MeshConfig", "", false},
		{"type.googleapis.com/envoy.config.cluster.v3.Cluster", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		c, ok := Lookup(tt.url)
		if ok != tt.ok || c.Stored != tt.kind {
			t.Errorf("Lookup(%q) = %v %v, want %v %v", tt.url, c.Stored, ok, tt.kind, tt.ok)
		}
	}
	if got := len(RequestTypeURLs()); got != 16 {
		t.Errorf("%d request type URLs, want MeshConfig + 15 collections", got)
	}
}

func resourceAny(t testing.TB, r *mcpapi.Resource) *anypb.Any {
	t.Helper()
	a, err := anypb.New(r)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDecodeErrors(t *testing.T) {
	se := &networking.ServiceEntry{Hosts: []string{"a"}}
	seAny, _ := anypb.New(se)
	otherAny, _ := anypb.New(&networking.VirtualService{})
	junk := &anypb.Any{TypeUrl: seAny.TypeUrl, Value: []byte{0xff, 0xff, 0xff}}
	const seURL = "networking.istio.io/v1/ServiceEntry"
	tests := []struct {
		name, url string
		res       *anypb.Any
		want      string // in the error
	}{
		{"unknown type", "example.com/v1/Thing", seAny, "unknown type URL"},
		{"nil", seURL, nil, "nil"},
		{"not a Resource", seURL, seAny, "want type.googleapis.com/istio.mcp.v1alpha1.Resource"},
		{"garbage", seURL, &anypb.Any{TypeUrl: ResourceTypeURL, Value: []byte{0xff, 0x01}}, "does not decode"},
		{"no metadata", seURL, resourceAny(t, &mcpapi.Resource{Body: seAny}), "metadata is missing"},
		{"name without namespace", seURL, resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "a"}, Body: seAny}), "namespace/name"},
		{"name with two slashes", seURL, resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "a/b/c"}, Body: seAny}), "namespace/name"},
		{"no body", seURL, resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/a"}}), "body is missing"},
		{"wrong body", seURL, resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/a"}, Body: otherAny}), "want type.googleapis.com/istio.networking.v1alpha3.ServiceEntry"},
		{"undecodable body", seURL, resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/a"}, Body: junk}), "body does not decode"},
		{"bad name", seURL, resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/A_B"}, Body: seAny}), "not a valid name"},
		{"bad namespace", seURL, resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "/a"}, Body: seAny}), "namespace is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.url, 3, tt.res)
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if me.TypeURL != tt.url || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want type %s and %q", err, tt.url, tt.want)
			}
		})
	}
	// A collection xdslab does not use is known but not stored.
	ap := resourceAny(t, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/a"}, Body: seAny})
	if _, err := Decode("networking.istio.io/v1alpha3/EnvoyFilter", 0, ap); !errors.Is(err, ErrNotStored) {
		t.Errorf("EnvoyFilter: %v, want ErrNotStored", err)
	}
}

// FuzzDecode feeds arbitrary resource bytes under every type URL: Decode returns a config that
// passes validation or an error, never panics.
func FuzzDecode(f *testing.F) {
	for _, c := range sampleConfigs() {
		a, err := Encode(c, "v1")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), a.Value)
	}
	st, _ := structpb.NewStruct(map[string]any{"x": 1})
	sa, _ := anypb.New(st)
	f.Add(uint8(1), resourceAny(f, &mcpapi.Resource{Metadata: &mcpapi.Metadata{Name: "ns/a"}, Body: sa}).Value)
	f.Add(uint8(2), []byte{0x0a, 0x03, 0x0a, 0x01, 0x2f})
	urls := append(RequestTypeURLs(), "bogus")
	f.Fuzz(func(t *testing.T, which uint8, value []byte) {
		for _, u := range []string{urls[int(which)%len(urls)], "networking.istio.io/v1/ServiceEntry"} {
			d, err := Decode(u, 0, &anypb.Any{TypeUrl: ResourceTypeURL, Value: value})
			if err != nil {
				continue
			}
			if d.Config == nil || d.Config.Spec == nil || d.Config.Name == "" || d.Config.Namespace == "" {
				t.Fatalf("Decode(%s) accepted an incomplete object: %+v", u, d)
			}
			if _, err := Encode(d.Config, d.Version); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
	})
}
