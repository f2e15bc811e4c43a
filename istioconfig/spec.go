package istioconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
)

// Group is the API group of the networking kinds.
const Group = "networking.istio.io"

// SecurityGroup is the API group of PeerAuthentication, AuthorizationPolicy and
// RequestAuthentication.
const SecurityGroup = "security.istio.io"

// apiVersions are the networking kinds' accepted apiVersion values, newest first. Istio serves
// the same schema under all three (networking/v1 and v1beta1 types are aliases of v1alpha3),
// so all decode into the istio.io/api networking/v1alpha3 types.
var apiVersions = []string{Group + "/v1", Group + "/v1beta1", Group + "/v1alpha3"}

// securityAPIVersions are the security kinds' apiVersions, newest first (v1 types are aliases
// of v1beta1).
var securityAPIVersions = []string{SecurityGroup + "/v1", SecurityGroup + "/v1beta1"}

// IsSecurity reports whether kind is served by security.istio.io.
func IsSecurity(kind Kind) bool {
	return kind == KindPeerAuthentication || kind == KindAuthorizationPolicy || kind == KindRequestAuthentication
}

// APIVersions returns the accepted apiVersion values of the networking kinds, newest first.
func APIVersions() []string { return slices.Clone(apiVersions) }

// KindAPIVersions returns the apiVersions kind is accepted under, newest first.
func KindAPIVersions(kind Kind) []string { return slices.Clone(kindAPIVersions(kind)) }

// Accepts reports whether kind is accepted under apiVersion (no copy: for a check per object).
func Accepts(kind Kind, apiVersion string) bool {
	return slices.Contains(kindAPIVersions(kind), apiVersion)
}

func kindAPIVersions(kind Kind) []string {
	if IsSecurity(kind) {
		return securityAPIVersions
	}
	return apiVersions
}

// specFactories maps each kind to a constructor of its empty spec.
var specFactories = map[Kind]func() proto.Message{
	KindServiceEntry:          func() proto.Message { return &networking.ServiceEntry{} },
	KindWorkloadEntry:         func() proto.Message { return &networking.WorkloadEntry{} },
	KindVirtualService:        func() proto.Message { return &networking.VirtualService{} },
	KindDestinationRule:       func() proto.Message { return &networking.DestinationRule{} },
	KindSidecar:               func() proto.Message { return &networking.Sidecar{} },
	KindGateway:               func() proto.Message { return &networking.Gateway{} },
	KindPeerAuthentication:    func() proto.Message { return &securityapi.PeerAuthentication{} },
	KindAuthorizationPolicy:   func() proto.Message { return &securityapi.AuthorizationPolicy{} },
	KindRequestAuthentication: func() proto.Message { return &securityapi.RequestAuthentication{} },
}

// NewSpec returns an empty spec message of the kind (*networking.ServiceEntry for
// KindServiceEntry, …), or false for a kind that is not Istio config.
func NewSpec(kind Kind) (proto.Message, bool) {
	f, ok := specFactories[kind]
	if !ok {
		return nil, false
	}
	return f(), true
}

// specName is the protobuf full name of each kind's spec, for Validate's type check.
var specName = func() map[Kind]protoreflect.FullName {
	out := make(map[Kind]protoreflect.FullName, len(specFactories))
	for k, f := range specFactories {
		out[k] = f().ProtoReflect().Descriptor().FullName()
	}
	return out
}()

// KindNames lists the kinds for messages: "ServiceEntry, WorkloadEntry, …".
func KindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Names follow Kubernetes: an object name is a DNS-1123 subdomain, a namespace a DNS-1123
// label. Istio objects are Kubernetes objects, so a name kubectl rejects is rejected here too.
var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// IsDNS1123Subdomain reports whether s is a valid Kubernetes object name: at most 253
// lowercase letters, digits, '-' and '.', each dot-separated part starting and ending with a
// letter or digit.
func IsDNS1123Subdomain(s string) bool {
	return s != "" && len(s) <= 253 && dns1123Subdomain.MatchString(s)
}

// ValidateName checks an object name the way Kubernetes does (a DNS-1123 subdomain).
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("metadata.name is required: add a name (lowercase letters, digits, '-' and '.')")
	case !IsDNS1123Subdomain(name):
		return fmt.Errorf("metadata.name %q is not a valid name: use at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", name)
	}
	return nil
}

// ValidateNamespace checks a namespace the way Kubernetes does (a DNS-1123 label).
func ValidateNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("metadata.namespace is required")
	case len(ns) > 63 || !dns1123Label.MatchString(ns):
		return fmt.Errorf("metadata.namespace %q is not a valid namespace: use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit", ns)
	}
	return nil
}

// Validate checks a config before it is stored: a known kind, a spec of the kind's type
// (istio.io/api networking/v1alpha3 and security/v1beta1; the newer Go types are aliases of
// them), and a valid name and namespace. It does not run Istio's semantic validation of the
// spec (controlplane/config does).
func Validate(cfg *Config) error {
	if cfg == nil {
		return fmt.Errorf("config is nil")
	}
	want, ok := specName[cfg.Kind]
	if !ok {
		return fmt.Errorf("%s: unknown kind %q: use one of %s", cfg.Key(), cfg.Kind, KindNames())
	}
	if err := ValidateName(cfg.Name); err != nil {
		return fmt.Errorf("%s: %w", cfg.Key(), err)
	}
	if err := ValidateNamespace(cfg.Namespace); err != nil {
		return fmt.Errorf("%s: %w", cfg.Key(), err)
	}
	if cfg.Spec == nil || !cfg.Spec.ProtoReflect().IsValid() {
		return fmt.Errorf("%s: spec is nil: set it to an empty %s at least", cfg.Key(), want)
	}
	if got := cfg.Spec.ProtoReflect().Descriptor().FullName(); got != want {
		return fmt.Errorf("%s: spec is a %s, want %s for kind %s", cfg.Key(), got, want, cfg.Kind)
	}
	return nil
}

// MarshalSpec renders a spec as compact protojson (camelCase field names, enums by name).
// protojson randomizes whitespace between builds; compacting makes the bytes stable.
func MarshalSpec(m proto.Message) ([]byte, error) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalSpec decodes a kind's spec from protojson strictly: an unknown field is an error.
func UnmarshalSpec(kind Kind, data []byte) (proto.Message, error) {
	m, ok := NewSpec(kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q: use one of %s", kind, KindNames())
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(data, m); err != nil {
		return nil, err
	}
	return m, nil
}
