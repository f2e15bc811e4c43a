package simulator_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
)

// TestAuthzObjects: every namespace gets perNamespace namespace-wide policies, valid by
// istiod's rules without a warning, ALLOW and DENY mixed by the weights, the same for the same
// seed; none without the knob.
func TestAuthzObjects(t *testing.T) {
	for _, tc := range []struct {
		name        string
		allow, deny float64
		wantAllow   bool
		wantDeny    bool
	}{
		{"default mix", 0, 0, true, true},
		{"allow only", 1, 0, true, false},
		{"deny only", 0, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := simtest.AuthzTopology()
			topo.AuthorizationPolicies.Allow, topo.AuthorizationPolicies.Deny = tc.allow, tc.deny
			topo.AuthorizationPolicies.PerNamespace = 6
			sim, err := simulator.New(simulator.Config{Seed: 5, Duration: time.Second, Topology: topo})
			require.NoError(t, err)
			aps := simtest.AuthzOf(sim.Initial())
			require.Len(t, aps, 3*6)
			actions := map[securityapi.AuthorizationPolicy_Action]int{}
			for _, c := range sim.Initial() {
				ap, ok := c.Spec.(*securityapi.AuthorizationPolicy)
				if !ok {
					continue
				}
				cc := c
				warns, err := validate.Spec(&cc)
				require.NoError(t, err, "%s", c.Key())
				require.Empty(t, warns, "%s", c.Key())
				require.Nil(t, ap.Selector, "namespace-wide: the fleet's clients carry no workload labels")
				require.Equal(t, "true", c.Labels[simulator.AuthzLabel])
				require.True(t, strings.HasPrefix(c.Namespace, "ns-"))
				require.GreaterOrEqual(t, len(ap.Rules), 1)
				require.LessOrEqual(t, len(ap.Rules), simulator.MaxAuthzRules)
				actions[ap.Action]++
			}
			require.Equal(t, tc.wantAllow, actions[securityapi.AuthorizationPolicy_ALLOW] > 0, "%v", actions)
			require.Equal(t, tc.wantDeny, actions[securityapi.AuthorizationPolicy_DENY] > 0, "%v", actions)
			again, err := simulator.New(simulator.Config{Seed: 5, Duration: time.Second, Topology: topo})
			require.NoError(t, err)
			require.True(t, reflect.DeepEqual(simtest.AuthzOf(sim.Initial()), simtest.AuthzOf(again.Initial())), "same seed, same policies")
		})
	}
	sim, err := simulator.New(simulator.Config{Seed: 5, Duration: time.Second, Topology: simtest.SmallTopology()})
	require.NoError(t, err)
	require.Empty(t, simtest.AuthzOf(sim.Initial()))
}

// TestAuthzChurn: config-change target authz rewrites Services policies per event, each with a
// different rule count than before; the expectation holds the new count per policy on the
// inbound listener and reaches the sidecars of the policies' namespaces only.
func TestAuthzChurn(t *testing.T) {
	for _, services := range []int{1, 3} {
		sim, err := simulator.New(simulator.Config{Seed: 9, Duration: 20 * time.Second, Topology: simtest.AuthzTopology(),
			Churn: []simulator.Churn{{Kind: simulator.ConfigChange, Target: simulator.TargetAuthz, Every: time.Second, Services: services}}})
		require.NoError(t, err)
		rules := map[istioconfig.Key]int{}
		for k, ap := range simtest.AuthzOf(sim.Initial()) {
			rules[k] = len(ap.Rules)
		}
		events := 0
		for {
			ev, ok, err := sim.Next()
			require.NoError(t, err)
			if !ok {
				break
			}
			events++
			require.Empty(t, ev.Skip)
			require.Empty(t, ev.Deletes)
			require.Len(t, ev.Upserts, services)
			exp := ev.Expectation
			require.NoError(t, exp.Validate())
			require.Len(t, exp.All, services)
			require.Equal(t, probe.ProxySidecar, exp.Reach.ProxyType)
			var nss []string
			for i, c := range ev.Upserts {
				ap := c.Spec.(*securityapi.AuthorizationPolicy)
				cc := c
				_, err := validate.Spec(&cc)
				require.NoError(t, err)
				require.NotEqual(t, rules[c.Key()], len(ap.Rules), "%s: a rewrite changes the rule count", c.Key())
				rules[c.Key()] = len(ap.Rules)
				want := probe.Predicate{Op: probe.ListenerRBACPolicies, Resource: simulator.InboundListener,
					Value: "ns[" + c.Namespace + "]-policy[" + c.Name + "]-rule[", Count: len(ap.Rules)}
				require.Equal(t, want, exp.All[i])
				require.Contains(t, exp.Reach.Namespaces, c.Namespace)
				if len(exp.Reach.PredicateNamespaces) > 0 {
					require.Equal(t, []string{c.Namespace}, exp.Reach.PredicateNamespaces[i])
				}
				nss = append(nss, c.Namespace)
			}
			for _, ns := range exp.Reach.Namespaces {
				require.Contains(t, nss, ns, "reach only the policies' namespaces")
			}
		}
		require.Equal(t, 19, events)
		// The model follows: Current renders the rewritten policies.
		for k, ap := range simtest.AuthzOf(sim.Current()) {
			require.Equal(t, rules[k], len(ap.Rules), "%s", k)
		}
	}
}

func TestAuthzValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*simulator.Config)
		want string
	}{
		{"target authz without policies", func(c *simulator.Config) {
			c.Topology.AuthorizationPolicies.PerNamespace = 0
		}, "target authz needs AuthorizationPolicies"},
		{"negative perNamespace", func(c *simulator.Config) { c.Topology.AuthorizationPolicies.PerNamespace = -1 }, "perNamespace must be in 0..1000"},
		{"negative weight", func(c *simulator.Config) { c.Topology.AuthorizationPolicies.Deny = -1 }, "allow, deny weights"},
		{"unknown target", func(c *simulator.Config) { c.Churn[0].Target = "authorization" }, `"authz"`},
	} {
		cfg := simulator.Config{Seed: 1, Duration: time.Second, Topology: simtest.AuthzTopology(),
			Churn: []simulator.Churn{{Kind: simulator.ConfigChange, Target: simulator.TargetAuthz, Every: time.Second}}}
		require.NoError(t, cfg.Validate())
		tc.mod(&cfg)
		err := cfg.Validate()
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
}

// TestRenderAuthorizationPolicy: the policies are written under security.istio.io.
func TestRenderAuthorizationPolicy(t *testing.T) {
	sim, err := simulator.New(simulator.Config{Seed: 1, Duration: time.Second, Topology: simtest.AuthzTopology()})
	require.NoError(t, err)
	for _, c := range sim.Initial() {
		if c.Kind != istioconfig.KindAuthorizationPolicy {
			continue
		}
		y, err := istioconfig.RenderYAML(c, istioconfig.DefaultAPIVersion)
		require.NoError(t, err)
		require.Contains(t, string(y), "apiVersion: security.istio.io/v1\n")
		require.Contains(t, string(y), "kind: AuthorizationPolicy\n")
		return
	}
	t.Fatal("no AuthorizationPolicy")
}
