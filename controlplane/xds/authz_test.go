package xds

import (
	"fmt"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/structpb"
	securityapi "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

func labeledNode(t *testing.T, ip, ns, app string) *corev3.Node {
	t.Helper()
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": ns, "LABELS": map[string]any{"app": app}})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Node{Id: fmt.Sprintf("sidecar~%s~pod.%s~%s.svc.cluster.local", ip, ns, ns), Metadata: md}
}

// httpFilterCount counts the HTTP filters named name on the HTTP chains of virtualInbound.
func httpFilterCount(t *testing.T, r *discoveryv3.DiscoveryResponse, name string) int {
	t.Helper()
	l, ok := decode(t, r, func() *listenerv3.Listener { return &listenerv3.Listener{} })[gen.VirtualInboundListener]
	if !ok {
		t.Fatalf("no %s in %d listeners", gen.VirtualInboundListener, len(r.GetResources()))
	}
	n := 0
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			h := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(h) != nil {
				continue
			}
			for _, hf := range h.GetHttpFilters() {
				if hf.GetName() == name {
					n++
				}
			}
		}
	}
	return n
}

func authzPolicy(ns, name, app string) *istioconfig.Config {
	return &istioconfig.Config{Meta: istioconfig.Meta{Kind: istioconfig.KindAuthorizationPolicy, Name: name, Namespace: ns},
		Spec: &securityapi.AuthorizationPolicy{Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": app}}}}
}

// A security policy change (AuthorizationPolicy, RequestAuthentication) is pushed only to the
// sidecars it selects (before or after): a sidecar of the same namespace with other labels is
// skipped, and keeps listeners without the policy's filter although the two would share cached
// listener bytes without policies.
func TestSecurityPolicyPushReachesOnlySelectedSidecars(t *testing.T) {
	for _, tc := range []struct {
		name, filter string
		cfg          *istioconfig.Config
	}{
		{"AuthorizationPolicy", "envoy.filters.http.rbac", authzPolicy("ns-0", "deny-all", "a")},
		{"RequestAuthentication", "envoy.filters.http.jwt_authn", &istioconfig.Config{
			Meta: istioconfig.Meta{Kind: istioconfig.KindRequestAuthentication, Name: "jwt", Namespace: "ns-0"},
			Spec: &securityapi.RequestAuthentication{Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}},
				JwtRules: []*securityapi.JWTRule{{Issuer: "https://issuer.example.com", Jwks: `{"keys":[{"kty":"RSA","e":"AQAB","n":"AQAB"}]}`}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) { testPolicyPushScope(t, tc.cfg, tc.filter) })
	}
}

// testPolicyPushScope pushes cfg, which selects app a in ns-0, then removes it, and checks which
// sidecars are pushed and which hold filter.
func testPolicyPushScope(t *testing.T, cfg *istioconfig.Config, filter string) {
	m := &triggerMetrics{pushed: map[string]int{}, skipped: map[string]int{}}
	opts := testOptions()
	opts.Metrics = m
	ts := startServer(t, opts)
	in := topology(3, 1)
	ts.push(in, true)

	sel := dial(t, ts.addr, labeledNode(t, "10.250.0.1", "ns-0", "a"))
	other := dial(t, ts.addr, labeledNode(t, "10.250.0.2", "ns-0", "b"))
	for _, c := range []*adsClient{sel, other} {
		c.send(gen.ListenerType, "", "", nil, "")
		r := c.recv()
		if n := httpFilterCount(t, r, filter); n != 0 {
			t.Fatalf("%s filters before any policy: %d", filter, n)
		}
		c.ack(r)
	}
	ts.settle(t)
	base, baseSkip := m.counts()

	key := istioconfig.Key{Kind: cfg.Kind, Name: cfg.Name, Namespace: cfg.Namespace}
	in.Configs = []*istioconfig.Config{cfg}
	ts.pushKeys(in, true, model.ReasonConfigUpdate, key)
	r := sel.recv()
	if r.TypeUrl != gen.ListenerType || httpFilterCount(t, r, filter) == 0 {
		t.Fatalf("selected sidecar got %s without %s filters", r.TypeUrl, filter)
	}
	sel.ack(r)
	ts.settle(t)
	other.barrier()
	pushed, skipped := m.counts()
	if d, s := pushed["config"]-base["config"], skipped["config"]-baseSkip["config"]; d != 1 || s != 1 {
		t.Errorf("%s change: pushed %d, skipped %d connections; want 1 and 1", cfg.Kind, d, s)
	}
	// The other sidecar, asking afresh, still has none (its cache class differs).
	late := dial(t, ts.addr, labeledNode(t, "10.250.0.3", "ns-0", "b"))
	late.send(gen.ListenerType, "", "", nil, "")
	if n := httpFilterCount(t, late.recv(), filter); n != 0 {
		t.Errorf("unselected sidecar has %d %s filters", n, filter)
	}

	// Removing the policy reaches the sidecar it selected.
	in.Configs = nil
	ts.pushKeys(in, true, model.ReasonConfigUpdate, key)
	r = sel.recv()
	if r.TypeUrl != gen.ListenerType || httpFilterCount(t, r, filter) != 0 {
		t.Fatalf("after removal the selected sidecar got %s with %s filters", r.TypeUrl, filter)
	}
	sel.ack(r)
	ts.settle(t)
	other.barrier()
}
