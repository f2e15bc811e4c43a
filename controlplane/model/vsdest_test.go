package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"
)

// TestVSDestinationPortsBySourceNamespace checks which HTTP routes of a VirtualService import
// their destinations into a Sidecar's scope: those whose matches admit the proxy's namespace,
// and every one for a proxy of no namespace (istiod skips the sourceNamespace check then).
func TestVSDestinationPortsBySourceNamespace(t *testing.T) {
	dest := func(h string, port uint32) []*networking.HTTPRouteDestination {
		return []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: h, Port: &networking.PortSelector{Number: port}}}}
	}
	vs := &networking.VirtualService{Hosts: []string{"till.example.org"}, Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{SourceNamespace: "plain"}}, Route: dest("vault.example.org", 9000)},
		{Route: dest("vault.example.org", 5432)},
	}}
	for _, tc := range []struct {
		ns   string
		want map[string]map[uint32]bool
	}{
		{"plain", map[string]map[uint32]bool{"vault.example.org": {9000: true, 5432: true}}},
		{"other", map[string]map[uint32]bool{"vault.example.org": {5432: true}}},
		{"", map[string]map[uint32]bool{"vault.example.org": {9000: true, 5432: true}}},
	} {
		if diff := cmp.Diff(tc.want, vsDestinationPorts(vs, "app", tc.ns)); diff != "" {
			t.Errorf("proxy namespace %q (-want +got)\n%s", tc.ns, diff)
		}
	}
}
