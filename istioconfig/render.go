package istioconfig

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// DefaultAPIVersion is the apiVersion the networking kinds are written under unless told
// otherwise.
const DefaultAPIVersion = Group + "/v1alpha3"

// RenderJSON renders c as a Kubernetes object: apiVersion, kind, metadata {name, namespace,
// labels}, spec (protojson field names). labels replace c.Labels (a sink may add its own).
func RenderJSON(c Config, apiVersion string, labels map[string]string) ([]byte, error) {
	spec, err := MarshalSpec(c.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key(), err)
	}
	type meta struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels,omitempty"`
	}
	j, err := json.Marshal(struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   meta            `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
	}{apiVersion, string(c.Kind), meta{c.Name, c.Namespace, labels}, spec})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key(), err)
	}
	return j, nil
}

// RenderYAML renders one object as a Kubernetes-style YAML document: apiVersion, kind,
// metadata {name, namespace, labels}, spec (protojson field names). apiVersion names the
// networking kinds' version; PeerAuthentication and AuthorizationPolicy are written as
// security.istio.io/v1, the only group that serves them.
func RenderYAML(c Config, apiVersion string) ([]byte, error) {
	if IsSecurity(c.Kind) {
		apiVersion = SecurityGroup + "/v1"
	}
	j, err := RenderJSON(c, apiVersion, c.Labels)
	if err != nil {
		return nil, err
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key(), err)
	}
	return y, nil
}
