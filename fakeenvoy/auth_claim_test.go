package fakeenvoy

import "testing"

// TestClaimServiceAccount: a node that names a service account is made to name the one its
// client authenticates as (a control plane checks, as istiod does); a node that names none is
// left without one.
func TestClaimServiceAccount(t *testing.T) {
	full := IdentityTemplate{Namespace: "ns", IstioMetadata: true}.Node(3)
	if got := full.GetMetadata().GetFields()["SERVICE_ACCOUNT"].GetStringValue(); got == "" || got == "default" {
		t.Fatalf("istio-sized node's SERVICE_ACCOUNT %q: want a per-app account to begin with", got)
	}
	claimServiceAccount(full, "default")
	if got := full.GetMetadata().GetFields()["SERVICE_ACCOUNT"].GetStringValue(); got != "default" {
		t.Errorf("after the claim: SERVICE_ACCOUNT %q, want default", got)
	}
	bare := IdentityTemplate{Namespace: "ns"}.Node(0)
	claimServiceAccount(bare, "default")
	if _, ok := bare.GetMetadata().GetFields()["SERVICE_ACCOUNT"]; ok {
		t.Error("a node without SERVICE_ACCOUNT got one")
	}
}
