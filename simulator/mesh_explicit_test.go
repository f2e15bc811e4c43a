package simulator_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
)

func explicitMesh() *simulator.Mesh {
	return &simulator.Mesh{
		Services: []simulator.MeshService{
			{Name: "reviews", Namespace: "bookinfo", ServiceAccount: "reviews",
				Ports: []simulator.MeshPort{{Number: 9080, TargetPort: 9080, Protocol: "HTTP", Name: "http"}},
				Endpoints: []simulator.MeshEndpoints{
					{Count: 3, Locality: "us/us-a", Labels: map[string]string{"app": "reviews", "version": "v1"}},
					{Count: 2, Locality: "us/us-b", Labels: map[string]string{"app": "reviews", "version": "v2"}},
				}},
			{Name: "db", Namespace: "data",
				Ports: []simulator.MeshPort{{Number: 5432, TargetPort: 15432, Protocol: "TCP", Name: "pg"}, {Number: 8443, Protocol: "HTTPS", Name: "https"},
					{Number: 9102, Protocol: simulator.ProtocolAuto, Name: "metrics"}},
				Endpoints: []simulator.MeshEndpoints{{Count: 1, Locality: "/us-c"}}},
			{Name: "idle", Namespace: "data", Ports: []simulator.MeshPort{{Number: 80, Protocol: "HTTP", Name: "http"}}},
			// Named as service-create names its first services: they must not collide.
			{Name: "svc-0", Namespace: "bookinfo", Ports: []simulator.MeshPort{{Number: 80, Protocol: "HTTP", Name: "http"}}},
			{Name: "svc-0", Namespace: "data", Ports: []simulator.MeshPort{{Number: 80, Protocol: "HTTP", Name: "http"}}},
		},
		Config: []istioconfig.Config{{
			Meta: istioconfig.Meta{Kind: istioconfig.KindDestinationRule, Name: "reviews", Namespace: "bookinfo"},
			Spec: &networking.DestinationRule{Host: "reviews.bookinfo.svc.cluster.local",
				Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}},
		}},
	}
}

// TestExplicitMesh: an explicit mesh is rendered as written (services, ports with their names,
// protocols and target ports, endpoint counts per locality with their labels, the objects
// verbatim), and churn on it keeps every expectation true.
func TestExplicitMesh(t *testing.T) {
	cfg := simulator.Config{Seed: 3, Duration: 40 * time.Second, Topology: simulator.Topology{Mesh: explicitMesh(), ServiceAccountsPerNamespace: 2,
		PortsPerService: simulator.DefaultTopology().PortsPerService, EndpointsPerService: simulator.DefaultTopology().EndpointsPerService},
		Churn: []simulator.Churn{
			{Kind: simulator.EndpointFlap, Rate: 2},
			{Kind: simulator.Scale, Rate: 1},
			{Kind: simulator.RollingDeploy, Every: 7 * time.Second, Window: 3 * time.Second},
			{Kind: simulator.ZoneFailure, Every: 11 * time.Second, Down: 2 * time.Second},
			{Kind: simulator.ServiceCreate, Every: 13 * time.Second},
			{Kind: simulator.ServiceAccountChange, Every: 17 * time.Second},
		}}
	sim, err := simulator.New(cfg)
	require.NoError(t, err)
	require.Equal(t, 2, sim.Config().Topology.Namespaces)
	require.Equal(t, 5, sim.Config().Topology.Services)
	initial := sim.Initial()
	require.Len(t, initial, 6)
	require.Equal(t, istioconfig.KindDestinationRule, initial[0].Kind, "the mesh's objects come first")
	se := map[string]*networking.ServiceEntry{}
	for _, c := range initial[1:] {
		se[c.Namespace+"/"+c.Name] = c.Spec.(*networking.ServiceEntry)
	}
	rv := se["bookinfo/reviews"]
	require.Equal(t, []string{"reviews.bookinfo.svc.cluster.local"}, rv.Hosts)
	require.Len(t, rv.Endpoints, 5)
	locs := map[string]int{}
	for _, e := range rv.Endpoints {
		locs[e.Locality+" "+e.Labels["version"]]++
		require.Equal(t, "reviews", e.ServiceAccount)
	}
	require.Equal(t, map[string]int{"us/us-a v1": 3, "us/us-b v2": 2}, locs)
	db := se["data/db"]
	require.Equal(t, "pg", db.Ports[0].Name)
	require.Equal(t, uint32(15432), db.Ports[0].TargetPort)
	require.Equal(t, "HTTPS", db.Ports[1].Protocol)
	require.Equal(t, "", db.Ports[2].Protocol, "an auto port has no protocol: Istio sniffs it")
	require.Equal(t, "metrics", db.Ports[2].Name)
	require.Equal(t, "/us-c", db.Endpoints[0].Locality)
	require.Equal(t, "default", db.Endpoints[0].ServiceAccount)
	require.Empty(t, se["data/idle"].Endpoints)

	events := simtest.Drain(t, sim)
	kinds := map[simulator.ChurnKind]int{}
	for _, ev := range events {
		if ev.Skip == "" {
			kinds[ev.Kind]++
		}
	}
	for _, k := range []simulator.ChurnKind{simulator.EndpointFlap, simulator.Scale, simulator.RollingDeploy, simulator.ZoneFailure, simulator.ServiceCreate, simulator.ServiceAccountChange} {
		require.Positive(t, kinds[k], "no %s event", k)
	}
	st := checkEvents(t, initial, events, false)
	simtest.RequireSameObjects(t, sim.Current(), st)
	// Endpoints added later carry one of their service's groups, and created services live in
	// the mesh's namespaces with its localities.
	for _, c := range sim.Current() {
		spec, ok := c.Spec.(*networking.ServiceEntry)
		if !ok {
			continue
		}
		require.Contains(t, []string{"bookinfo", "data"}, c.Namespace)
		for _, e := range spec.Endpoints {
			require.Contains(t, []string{"us/us-a", "us/us-b", "/us-c", ""}, e.Locality)
			if c.Name == "reviews" {
				require.Contains(t, []string{"v1", "v2"}, e.Labels["version"])
				require.Equal(t, e.Locality == "us/us-a", e.Labels["version"] == "v1", "labels and locality of one group")
			}
		}
	}
}

// TestExplicitMeshValidate: the synthetic knobs that a mesh replaces, and config-change, are
// refused.
func TestExplicitMeshValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*simulator.Config)
		want string
	}{
		{"scoping", func(c *simulator.Config) { c.Topology.SidecarScoping = true }, "turn off sidecarScoping"},
		{"config-change", func(c *simulator.Config) {
			c.Churn = []simulator.Churn{{Kind: simulator.ConfigChange, Rate: 1, Target: simulator.TargetDestinationRule}}
		}, "remove config-change"},
		{"no ports", func(c *simulator.Config) { c.Topology.Mesh.Services[2].Ports = nil }, "give 1 to 64 ports"},
		{"duplicate", func(c *simulator.Config) { c.Topology.Mesh.Services[2].Name = "db" }, "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simulator.Config{Seed: 1, Duration: time.Second, Topology: simulator.Topology{Mesh: explicitMesh()}}
			tc.mod(&cfg)
			err := cfg.Validate()
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestExplicitMeshRouterReach: in an explicit mesh, endpoint events reach routers only for the
// clusters a VirtualService bound to a Gateway selecting them routes to.
func TestExplicitMeshRouterReach(t *testing.T) {
	x := explicitMesh()
	x.Config = append(x.Config,
		istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindGateway, Name: "gw", Namespace: "istio-system"},
			Spec: &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"},
				Servers: []*networking.Server{{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*/r.example"}}}}},
		istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindVirtualService, Name: "r", Namespace: "bookinfo"},
			Spec: &networking.VirtualService{Hosts: []string{"r.example"}, Gateways: []string{"istio-system/gw"},
				Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews"}}}}}}},
	)
	sim, err := simulator.New(simulator.Config{Seed: 5, Duration: 30 * time.Second, Topology: simulator.Topology{Mesh: x}, Churn: []simulator.Churn{{Kind: simulator.EndpointFlap, Rate: 3}}})
	require.NoError(t, err)
	seen := map[string]string{}
	for _, ev := range simtest.Drain(t, sim) {
		if ev.Skip != "" {
			continue
		}
		for _, c := range ev.Upserts {
			seen[c.Name] = ev.Expectation.Reach.ProxyType
		}
	}
	require.Equal(t, "", seen["reviews"], "a gateway backend's endpoint events reach routers and sidecars")
	require.Equal(t, "sidecar", seen["db"], "other services' events reach sidecars only")
}

// TestRenderPeerAuthentication: a PeerAuthentication (an explicit mesh may hold one) is written
// under security.istio.io, whatever apiVersion the networking kinds get.
func TestRenderPeerAuthentication(t *testing.T) {
	pa := istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindPeerAuthentication, Name: "default", Namespace: "istio-system"},
		Spec: &securityapi.PeerAuthentication{Mtls: &securityapi.PeerAuthentication_MutualTLS{Mode: securityapi.PeerAuthentication_MutualTLS_STRICT}}}
	y, err := istioconfig.RenderYAML(pa, istioconfig.DefaultAPIVersion)
	require.NoError(t, err)
	require.Contains(t, string(y), "apiVersion: security.istio.io/v1\n")
	require.Contains(t, string(y), "mode: STRICT")
}
