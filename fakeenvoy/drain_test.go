package fakeenvoy

import (
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
)

// TestSotwListenerDrainKeepsRoutes removes a listener on a go-control-plane server: as Envoy,
// the client keeps asking for its route configuration while the listener drains, and leaves it
// out of its RDS request once the drain time has passed, not before.
func TestSotwListenerDrainKeepsRoutes(t *testing.T) { shells(t, testSotwListenerDrainKeepsRoutes) }

func testSotwListenerDrainKeepsRoutes(t *testing.T) {
	const drain = 300 * time.Millisecond
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{ListenerDrain: drain}, h)
	two := fetest.BaseResources(t)
	two[resource.ListenerType] = append(two[resource.ListenerType], fetest.RDSListener(t, "l2", 15002, "r2"))
	two[resource.RouteType] = append(two[resource.RouteType], fetest.Route("r2", "other.example", "c2"))
	srv.Set(t, c.NodeID(), "v1", two)
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")

	// Read what v1 caused, up to its RDS ACK, so that what follows is v2's.
	for r := srv.NextSotw(t); r.TypeUrl != resource.RouteType || r.VersionInfo != "v1"; r = srv.NextSotw(t) {
	}
	one := fetest.BaseResources(t)
	one[resource.RouteType] = append(one[resource.RouteType], fetest.Route("r2", "other.example", "c2"))
	setAt := time.Now() // the client receives v2, and l2 starts draining, after this
	srv.Set(t, c.NodeID(), "v2", one)
	draining := 0
	for {
		r := srv.NextSotw(t)
		if r.TypeUrl != resource.RouteType {
			continue
		}
		if slices.Equal(r.ResourceNames, []string{"r1"}) {
			if since := time.Since(setAt); since < drain {
				t.Errorf("r2 unsubscribed %s after its listener was removed, before the %s drain ended", since, drain)
			}
			break
		}
		if !slices.Equal(r.ResourceNames, []string{"r1", "r2"}) {
			t.Fatalf("RDS request %v while l2 drains, want [r1 r2]", r.ResourceNames)
		}
		draining++
	}
	if draining == 0 {
		t.Errorf("no RDS request naming r2 after l2 was removed: want the LDS change's request to keep it while l2 drains")
	}
}

// TestDeltaListenerDrainKeepsRoutes is the same on Delta: the unsubscribe of r2 comes when
// the drain ends.
func TestDeltaListenerDrainKeepsRoutes(t *testing.T) {
	const drain = 300 * time.Millisecond
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Delta: true, ListenerDrain: drain}, h)
	two := fetest.BaseResources(t)
	two[resource.ListenerType] = append(two[resource.ListenerType], fetest.RDSListener(t, "l2", 15002, "r2"))
	two[resource.RouteType] = append(two[resource.RouteType], fetest.Route("r2", "other.example", "c2"))
	srv.Set(t, c.NodeID(), "v1", two)
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")

	one := map[resource.Type][]types.Resource{}
	for k, v := range two {
		one[k] = v
	}
	one[resource.ListenerType] = fetest.BaseResources(t)[resource.ListenerType]
	setAt := time.Now() // the client receives v2, and l2 starts draining, after this
	srv.Set(t, c.NodeID(), "v2", one)
	for {
		r := srv.NextDelta(t)
		if r.TypeUrl != resource.RouteType || len(r.ResourceNamesUnsubscribe) == 0 {
			continue
		}
		if !slices.Equal(r.ResourceNamesUnsubscribe, []string{"r2"}) {
			t.Errorf("unsubscribed %v, want [r2]", r.ResourceNamesUnsubscribe)
		}
		if since := time.Since(setAt); since < drain {
			t.Errorf("r2 unsubscribed %s after its listener was removed, before the %s drain ended", since, drain)
		}
		return
	}
}

// gatewayCred is the credentialName secret of gatewayListener, on ADS as Istio serves it.
const gatewayCred = "kubernetes://gw-cred"

// gatewayListener is listener gw on 15443 terminating TLS with gatewayCred (SDS over ADS),
// routes r2.
func gatewayListener(t *testing.T) *listenerv3.Listener {
	l := fetest.RDSListener(t, "gw", 15443, "r2")
	tc := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: gatewayCred, SdsConfig: fetest.ADSSource()}},
	}}
	l.FilterChains[0].TransportSocket = &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: fetest.MustAny(t, tc)},
	}
	return l
}

func gatewayCredSecret() *tlsv3.Secret {
	return &tlsv3.Secret{Name: gatewayCred, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "pem"}}}}}
}

// withGateway is the base config plus gatewayListener, its routes r2 and its secret.
func withGateway(t *testing.T) map[resource.Type][]types.Resource {
	res := fetest.BaseResources(t)
	res[resource.ListenerType] = append(res[resource.ListenerType], gatewayListener(t))
	res[resource.RouteType] = append(res[resource.RouteType], fetest.Route("r2", "gw.example", "c2"))
	res[resource.SecretType] = []types.Resource{gatewayCredSecret()}
	return res
}

// TestSotwListenerDrainKeepsSecrets removes a gateway listener whose TLS certificate comes
// over ADS (an Istio credentialName secret) on a go-control-plane server: as Envoy, the client
// keeps its SDS subscription to the secret while the listener drains, and sends the request
// that leaves it out once the drain time has passed, not before.
func TestSotwListenerDrainKeepsSecrets(t *testing.T) { shells(t, testSotwListenerDrainKeepsSecrets) }

func testSotwListenerDrainKeepsSecrets(t *testing.T) {
	const drain = 300 * time.Millisecond
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{ListenerDrain: drain}, h)
	srv.Set(t, c.NodeID(), "v1", withGateway(t))
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")

	// Read what v1 caused, up to its SDS ACK, so that what follows is v2's.
	for r := srv.NextSotw(t); r.TypeUrl != resource.SecretType || r.VersionInfo != "v1"; r = srv.NextSotw(t) {
	}
	// v2: the gateway listener is gone; the server still has its routes and its secret.
	v2 := withGateway(t)
	v2[resource.ListenerType] = fetest.BaseResources(t)[resource.ListenerType]
	setAt := time.Now() // the client receives v2, and gw starts draining, after this
	srv.Set(t, c.NodeID(), "v2", v2)
	acked := false
	for {
		r := srv.NextSotw(t)
		if r.TypeUrl != resource.SecretType {
			continue
		}
		if len(r.ResourceNames) == 0 {
			if since := time.Since(setAt); since < drain {
				t.Errorf("%s unsubscribed %s after its listener was removed, before the %s drain ended", gatewayCred, since, drain)
			}
			break
		}
		if !slices.Equal(r.ResourceNames, []string{gatewayCred}) {
			t.Fatalf("SDS request %v while gw drains, want [%s]", r.ResourceNames, gatewayCred)
		}
		if r.VersionInfo == "v2" && r.ErrorDetail == nil {
			acked = true // the secret resent with v2, applied while gw drains
		}
	}
	if !acked {
		t.Errorf("no SDS ACK of v2 naming %s while gw drained", gatewayCred)
	}
}

// TestDeltaListenerDrainKeepsSecrets is the same on Delta: the unsubscribe of the secret comes
// when the drain ends.
func TestDeltaListenerDrainKeepsSecrets(t *testing.T) {
	const drain = 300 * time.Millisecond
	srv := fetest.NewCPServer(t)
	h := newHookLog()
	c := newTestClient(t, ClientConfig{Delta: true, ListenerDrain: drain}, h)
	srv.Set(t, c.NodeID(), "v1", withGateway(t))
	runClient(t, c, srv.Connector(t))
	h.waitEvent(t, "first-full")

	v2 := withGateway(t)
	v2[resource.ListenerType] = fetest.BaseResources(t)[resource.ListenerType]
	setAt := time.Now() // the client receives v2, and gw starts draining, after this
	srv.Set(t, c.NodeID(), "v2", v2)
	for {
		r := srv.NextDelta(t)
		if r.TypeUrl != resource.SecretType || len(r.ResourceNamesUnsubscribe) == 0 {
			continue
		}
		if !slices.Equal(r.ResourceNamesUnsubscribe, []string{gatewayCred}) {
			t.Errorf("unsubscribed %v, want [%s]", r.ResourceNamesUnsubscribe, gatewayCred)
		}
		if since := time.Since(setAt); since < drain {
			t.Errorf("%s unsubscribed %s after its listener was removed, before the %s drain ended", gatewayCred, since, drain)
		}
		return
	}
}
