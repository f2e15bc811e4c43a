package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
	mcpapi "istio.io/api/mcp/v1alpha1"
)

// ResourceTypeURL is the Any type of every object in an MCP response.
const ResourceTypeURL = "type.googleapis.com/istio.mcp.v1alpha1.Resource"

// MeshConfigTypeURL is the type URL istiod asks for its mesh config (group "" is "core").
const MeshConfigTypeURL = "core/v1alpha1/MeshConfig"

// MeshConfigBodyTypeURL is the Any type of the one resource of a MeshConfig response (istiod's
// api generator sends the MeshConfig proto itself, not wrapped in a Resource).
const MeshConfigBodyTypeURL = "type.googleapis.com/istio.mesh.v1alpha1.MeshConfig"

// Collection is one config collection a client asks for.
type Collection struct {
	Group, Version, Kind string
	// Stored is the model kind the collection maps to, "" when xdslab does not use it (its
	// objects are acknowledged and ignored, as istiod ignores kinds it does not watch).
	Stored istioconfig.Kind
}

// TypeURL is the collection's type URL, group/version/Kind.
func (c Collection) TypeURL() string { return c.Group + "/" + c.Version + "/" + c.Kind }

// Collections are the config collections istiod's MCP client asks for (Istio's
// collections.Pilot), at the versions it uses.
var collections = []Collection{
	{"security.istio.io", "v1", "AuthorizationPolicy", istioconfig.KindAuthorizationPolicy},
	{"networking.istio.io", "v1", "DestinationRule", istioconfig.KindDestinationRule},
	{"networking.istio.io", "v1alpha3", "EnvoyFilter", ""},
	{"networking.istio.io", "v1", "Gateway", istioconfig.KindGateway},
	{"security.istio.io", "v1", "PeerAuthentication", istioconfig.KindPeerAuthentication},
	{"networking.istio.io", "v1beta1", "ProxyConfig", ""},
	{"security.istio.io", "v1", "RequestAuthentication", istioconfig.KindRequestAuthentication},
	{"networking.istio.io", "v1", "ServiceEntry", istioconfig.KindServiceEntry},
	{"networking.istio.io", "v1", "Sidecar", istioconfig.KindSidecar},
	{"telemetry.istio.io", "v1", "Telemetry", ""},
	{"extensions.istio.io", "v1alpha1", "TrafficExtension", ""},
	{"networking.istio.io", "v1", "VirtualService", istioconfig.KindVirtualService},
	{"extensions.istio.io", "v1alpha1", "WasmPlugin", ""},
	{"networking.istio.io", "v1", "WorkloadEntry", istioconfig.KindWorkloadEntry},
	{"networking.istio.io", "v1", "WorkloadGroup", ""},
}

// Collections returns the config collections a client asks for, in Istio's order.
func Collections() []Collection { return slices.Clone(collections) }

// RequestTypeURLs are the type URLs a client subscribes to: MeshConfig, then every collection.
func RequestTypeURLs() []string {
	out := []string{MeshConfigTypeURL}
	for _, c := range collections {
		out = append(out, c.TypeURL())
	}
	return out
}

// versionsOf lists the versions a group's kinds are served under (a server may use any: older
// Istio releases used v1alpha3 and v1beta1; the schemas are the same).
var versionsOf = map[string][]string{
	"networking.istio.io": {"v1", "v1beta1", "v1alpha3"},
	"security.istio.io":   {"v1", "v1beta1"},
	"telemetry.istio.io":  {"v1", "v1alpha1"},
	"extensions.istio.io": {"v1alpha1"},
}

// Lookup parses a type URL: the collection it names (any served version) and whether it is one.
func Lookup(typeURL string) (Collection, bool) {
	parts := strings.Split(typeURL, "/")
	if len(parts) != 3 {
		return Collection{}, false
	}
	for _, c := range collections {
		if c.Group == parts[0] && c.Kind == parts[2] && slices.Contains(versionsOf[c.Group], parts[1]) {
			c.Version = parts[1]
			return c, true
		}
	}
	return Collection{}, false
}

// TypeURL is the type URL a server publishes kind under (Istio's current version), or "" for a
// kind that is not a config collection.
func TypeURL(kind istioconfig.Kind) string {
	for _, c := range collections {
		if c.Stored == kind && kind != "" {
			return c.TypeURL()
		}
	}
	return ""
}

// Error is a resource that cannot be used: it names the type, the object (as far as it could
// be read) and the rule it breaks.
type Error struct {
	TypeURL string
	// Name is the resource's "namespace/name", or "#i" (its index in the response) when the
	// name could not be read.
	Name string
	Rule string
}

func (e *Error) Error() string { return fmt.Sprintf("%s %s: %s", e.TypeURL, e.Name, e.Rule) }

// ContentVersion is a stable version of an object's content: a hash of its kind, name, labels,
// annotations and spec (deterministic protobuf). Equal content gives the same version in every
// process, so a reconnecting client sees no change.
func ContentVersion(c *istioconfig.Config) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.Kind, c.Namespace, c.Name)
	for _, m := range []map[string]string{c.Labels, c.Annotations} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(h, "%s=%s\x00", k, m[k])
		}
		h.Write([]byte{1})
	}
	if c.Spec != nil {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.Spec)
		if err != nil {
			return "", fmt.Errorf("%s: %w", c.Key(), err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// Encode wraps an object as an MCP resource (an Any of istio.mcp.v1alpha1.Resource) with the
// given version.
func Encode(c *istioconfig.Config, version string) (*anypb.Any, error) {
	if c.Spec == nil {
		return nil, fmt.Errorf("%s: no spec", c.Key())
	}
	body, err := anypb.New(c.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key(), err)
	}
	r := &mcpapi.Resource{
		Metadata: &mcpapi.Metadata{
			Name: c.Namespace + "/" + c.Name, Version: version,
			Labels: c.Labels, Annotations: c.Annotations,
		},
		Body: body,
	}
	if !c.CreationTimestamp.IsZero() {
		r.Metadata.CreateTime = timestamppb.New(c.CreationTimestamp)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key(), err)
	}
	return &anypb.Any{TypeUrl: ResourceTypeURL, Value: b}, nil
}

// Decoded is one object read from a response.
type Decoded struct {
	Config *istioconfig.Config
	// Version is the resource's metadata.version ("" when the server sets none).
	Version string
}

// ErrNotStored says a collection is known but not one xdslab uses.
var ErrNotStored = errors.New("collection not used by xdslab")

// Decode reads resource i of a response of typeURL into a istioconfig.Config: the envelope must be
// an istio.mcp.v1alpha1.Resource whose name is "namespace/name" and whose body is the
// collection's Istio proto (type.googleapis.com/istio.networking.v1alpha3.ServiceEntry, …) and
// unmarshals. The object is then checked as any stored object is (istioconfig.Validate: names) but
// not against Istio's semantic rules (controlplane/config/validate.Spec), which the caller
// applies. A collection xdslab does not use yields ErrNotStored.
func Decode(typeURL string, i int, a *anypb.Any) (Decoded, error) {
	bad := func(name, format string, args ...any) (Decoded, error) {
		return Decoded{}, &Error{TypeURL: typeURL, Name: name, Rule: fmt.Sprintf(format, args...)}
	}
	idx := fmt.Sprintf("#%d", i)
	col, ok := Lookup(typeURL)
	if !ok {
		return bad(idx, "unknown type URL: want group/version/Kind of an Istio config collection")
	}
	if a == nil {
		return bad(idx, "resource is nil")
	}
	if a.TypeUrl != ResourceTypeURL {
		return bad(idx, "resource is a %q, want %s", a.TypeUrl, ResourceTypeURL)
	}
	var r mcpapi.Resource
	if err := proto.Unmarshal(a.Value, &r); err != nil {
		return bad(idx, "resource does not decode: %v", err)
	}
	md := r.GetMetadata()
	if md == nil {
		return bad(idx, "metadata is missing")
	}
	ns, name, ok := strings.Cut(md.Name, "/")
	if !ok || strings.Contains(name, "/") {
		return bad(fmt.Sprintf("%q", md.Name), "metadata.name must be namespace/name")
	}
	if col.Stored == "" {
		return Decoded{}, ErrNotStored
	}
	spec, _ := istioconfig.NewSpec(col.Stored)
	want := "type.googleapis.com/" + string(spec.ProtoReflect().Descriptor().FullName())
	if r.Body == nil {
		return bad(md.Name, "body is missing: want an Any of %s", want)
	}
	if r.Body.TypeUrl != want {
		return bad(md.Name, "body is a %q, want %s", r.Body.TypeUrl, want)
	}
	if err := proto.Unmarshal(r.Body.Value, spec); err != nil {
		return bad(md.Name, "body does not decode as %s: %v", want, err)
	}
	c := &istioconfig.Config{
		Meta: istioconfig.Meta{Kind: col.Stored, Namespace: ns, Name: name, Labels: md.Labels, Annotations: md.Annotations},
		Spec: spec,
	}
	if t := md.GetCreateTime(); t != nil && t.IsValid() {
		c.CreationTimestamp = t.AsTime()
	}
	if err := istioconfig.Validate(c); err != nil {
		return bad(md.Name, "%v", err)
	}
	return Decoded{Config: c, Version: md.Version}, nil
}

// Peek reads only a resource's metadata name ("namespace/name") and version, so that a client
// can skip decoding and validating the body of an object whose version it already holds; ok is
// false when the envelope does not decode (Decode then says why).
func Peek(a *anypb.Any) (name, version string, ok bool) {
	if a == nil || a.TypeUrl != ResourceTypeURL {
		return "", "", false
	}
	var md mcpapi.Resource
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(a.Value, &md); err != nil || md.Metadata == nil {
		return "", "", false
	}
	return md.Metadata.Name, md.Metadata.Version, true
}
