package gen

import (
	"slices"
	"testing"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/encoding/prototext"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// TestAuthzCustom: with istiod's default mesh config no extension provider exists, so a
// CUSTOM policy is istiod's deny for a bad CUSTOM action: one DENY RBAC filter per provider
// (by name) before the other RBAC filters — on HTTP chains before jwt_authn too — holding the
// enforced policies' rules as DENY rules named istio-ext-authz-PROVIDER-…-deny-due-to-bad-
// CUSTOM-action; a dry-run policy adds its provider without rules; the TCP filter has stat
// prefix "tcp." and an HTTP-only condition is dropped from the rule there (it denies more).
func TestAuthzCustom(t *testing.T) {
	custom := func(ns, name, provider string, dry bool, rules ...*securityapi.Rule) *istioconfig.Config {
		var ann map[string]string
		if dry {
			ann = map[string]string{dryRunAnnotation: "true"}
		}
		return authzConfig(ns, name, &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_CUSTOM,
			ActionDetail: &securityapi.AuthorizationPolicy_Provider{Provider: &securityapi.AuthorizationPolicy_ExtensionProvider{Name: provider}},
			Rules:        rules}, ann)
	}
	paths := &securityapi.Rule{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/admin"}}}}}
	ips := &securityapi.Rule{From: []*securityapi.Rule_From{{Source: &securityapi.Source{IpBlocks: []string{"10.66.0.0/16"}}}}}
	deny := authzConfig("default", "deny-ip", &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_DENY, Rules: []*securityapi.Rule{ips}}, nil)
	tests := []struct {
		name    string
		ns, ip  string // the proxy: default (reviews, HTTP 9080) or db (mysql, TCP 3306)
		port    uint32
		configs []*istioconfig.Config
		custom  int // the first custom RBAC filters are CUSTOM's
		// want: per RBAC filter, its policy names
		want [][]string
	}{
		{name: "HTTP chain, two providers and a DENY", ns: "default", ip: "10.1.0.1", port: 9080,
			configs: []*istioconfig.Config{custom("default", "opa", "opa-ext", false, paths, ips), custom("default", "oauth", "oauth2", false, ips), deny}, custom: 2,
			want: [][]string{
				{"istio-ext-authz-oauth2-ns[default]-policy[oauth]-rule[0]-deny-due-to-bad-CUSTOM-action"},
				{"istio-ext-authz-opa-ext-ns[default]-policy[opa]-rule[0]-deny-due-to-bad-CUSTOM-action", "istio-ext-authz-opa-ext-ns[default]-policy[opa]-rule[1]-deny-due-to-bad-CUSTOM-action"},
				{"ns[default]-policy[deny-ip]-rule[0]"},
			}},
		{name: "dry-run only (validation rejects it): a filter without rules", ns: "default", ip: "10.1.0.1", port: 9080,
			configs: []*istioconfig.Config{custom("default", "trial", "opa-ext", true, ips)}, custom: 1,
			want: [][]string{nil}},
		{name: "TCP chain", ns: "db", ip: "10.1.1.1", port: 3306,
			configs: []*istioconfig.Config{custom("db", "opa", "opa-ext", false, paths)}, custom: 1,
			want: [][]string{{"istio-ext-authz-opa-ext-ns[db]-policy[opa]-rule[0]-deny-due-to-bad-CUSTOM-action"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := goldenInput()
			in.Configs = append(in.Configs, tt.configs...)
			s := model.NewSnapshot(1, in)
			g, err := generateAll(t, sidecarProxy(tt.ip, tt.ns), s)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range g[ListenerType] {
				if _, err := validateDeep(r.Message); err != nil {
					t.Fatalf("%s: %v", r.Name, err)
				}
			}
			fc := inboundChainFor(t, g, tt.port, "raw_buffer")
			var rules []*rbacv3.RBAC
			if tt.port == 3306 {
				for _, f := range fc.GetFilters() {
					if f.GetName() != networkRBACFilterName {
						continue
					}
					r := &rbactcpv3.RBAC{}
					if err := f.GetTypedConfig().UnmarshalTo(r); err != nil {
						t.Fatal(err)
					}
					if r.GetStatPrefix() != rbacTCPStatPrefix || r.GetShadowRules() != nil {
						t.Errorf("TCP filter %v, want stat prefix tcp. and no shadow rules", prototext.Format(r))
					}
					rules = append(rules, r.GetRules())
				}
				// The path is HTTP-only: the DENY rule loses it and denies every connection.
				if got := rules[0].GetPolicies()[tt.want[0][0]]; got.GetPermissions()[0].GetAndRules().GetRules()[0].GetAny() != true {
					t.Errorf("TCP rule %v, want any permission", prototext.Format(got))
				}
			} else {
				h := &hcmv3.HttpConnectionManager{}
				if err := fc.Filters[0].GetTypedConfig().UnmarshalTo(h); err != nil {
					t.Fatal(err)
				}
				for _, f := range h.GetHttpFilters() {
					if f.GetName() != httpRBACFilterName {
						continue
					}
					r := &rbachttpv3.RBAC{}
					if err := f.GetTypedConfig().UnmarshalTo(r); err != nil {
						t.Fatal(err)
					}
					if len(rules) < tt.custom && (r.GetShadowRules() != nil || r.GetShadowRulesStatPrefix() != "") {
						t.Errorf("CUSTOM filter %v, want rules only", prototext.Format(r))
					}
					rules = append(rules, r.GetRules())
				}
			}
			if len(rules) != len(tt.want) {
				t.Fatalf("%d RBAC filters, want %d", len(rules), len(tt.want))
			}
			for i, r := range rules {
				if r.GetAction() != rbacv3.RBAC_DENY {
					t.Errorf("filter %d action %v, want DENY", i, r.GetAction())
				}
				if got := policyNames(r); !slices.Equal(got, tt.want[i]) {
					t.Errorf("filter %d policies %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}
