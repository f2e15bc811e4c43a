package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
)

// Group is the API group of the networking kinds this package stores.
const Group = "networking.istio.io"

// SecurityGroup is the API group of PeerAuthentication, AuthorizationPolicy and
// RequestAuthentication.
const SecurityGroup = "security.istio.io"

// securityAPIVersions are the security kinds' apiVersions, newest first (v1 types are aliases
// of v1beta1).
var securityAPIVersions = []string{SecurityGroup + "/v1", SecurityGroup + "/v1beta1"}

// kindAPIVersions returns the apiVersions a kind is accepted under, newest first.
func kindAPIVersions(k model.Kind) []string {
	if k == model.KindPeerAuthentication || k == model.KindAuthorizationPolicy || k == model.KindRequestAuthentication {
		return securityAPIVersions
	}
	return apiVersions
}

// APIVersions are the accepted apiVersion values, newest first. Istio serves the same schema
// under all three (networking/v1 and v1beta1 types are aliases of v1alpha3), so all decode into
// the istio.io/api networking/v1alpha3 types.
var apiVersions = []string{Group + "/v1", Group + "/v1beta1", Group + "/v1alpha3"}

// APIVersions returns the accepted apiVersion values of the networking kinds, newest first.
func APIVersions() []string { return slices.Clone(apiVersions) }

// KindAPIVersions returns the apiVersions kind is accepted under, newest first.
func KindAPIVersions(kind model.Kind) []string { return slices.Clone(kindAPIVersions(kind)) }

// specFactories maps each Istio config kind to a constructor of its empty spec.
var specFactories = map[model.Kind]func() proto.Message{
	model.KindServiceEntry:          func() proto.Message { return &networking.ServiceEntry{} },
	model.KindWorkloadEntry:         func() proto.Message { return &networking.WorkloadEntry{} },
	model.KindVirtualService:        func() proto.Message { return &networking.VirtualService{} },
	model.KindDestinationRule:       func() proto.Message { return &networking.DestinationRule{} },
	model.KindSidecar:               func() proto.Message { return &networking.Sidecar{} },
	model.KindGateway:               func() proto.Message { return &networking.Gateway{} },
	model.KindPeerAuthentication:    func() proto.Message { return &securityapi.PeerAuthentication{} },
	model.KindAuthorizationPolicy:   func() proto.Message { return &securityapi.AuthorizationPolicy{} },
	model.KindRequestAuthentication: func() proto.Message { return &securityapi.RequestAuthentication{} },
}

// NewSpec returns an empty spec message of the kind (*networking.ServiceEntry for
// KindServiceEntry, …), or false for a kind this package does not store.
func NewSpec(kind model.Kind) (proto.Message, bool) {
	f, ok := specFactories[kind]
	if !ok {
		return nil, false
	}
	return f(), true
}

// specName is the protobuf full name of each kind's spec, for the type check on write.
var specName = func() map[model.Kind]protoreflect.FullName {
	out := make(map[model.Kind]protoreflect.FullName, len(specFactories))
	for k, f := range specFactories {
		out[k] = f().ProtoReflect().Descriptor().FullName()
	}
	return out
}()

func kindNames() string {
	ks := model.ConfigKinds()
	names := make([]string, len(ks))
	for i, k := range ks {
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

func validateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("metadata.name is required: add a name (lowercase letters, digits, '-' and '.')")
	case len(name) > 253 || !dns1123Subdomain.MatchString(name):
		return fmt.Errorf("metadata.name %q is not a valid name: use at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", name)
	}
	return nil
}

func validateNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("metadata.namespace is required")
	case len(ns) > 63 || !dns1123Label.MatchString(ns):
		return fmt.Errorf("metadata.namespace %q is not a valid namespace: use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit", ns)
	}
	return nil
}

// Validate checks a config before it is stored: a known kind, a spec of the kind's type
// (istio.io/api networking/v1alpha3; the v1 and v1beta1 Go types are aliases of it), and a
// valid name and namespace. It does not run Istio's semantic validation of the spec.
func Validate(cfg *model.Config) error {
	if cfg == nil {
		return fmt.Errorf("config is nil")
	}
	want, ok := specName[cfg.Kind]
	if !ok {
		return fmt.Errorf("%s: unknown kind %q: use one of %s", cfg.Key(), cfg.Kind, kindNames())
	}
	if err := validateName(cfg.Name); err != nil {
		return fmt.Errorf("%s: %w", cfg.Key(), err)
	}
	if err := validateNamespace(cfg.Namespace); err != nil {
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
