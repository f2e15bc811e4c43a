package fleet

import (
	"testing"

	"github.com/xdslab/xdslab/fakeenvoy"
)

// TestClaimServiceAccount: a node that names a service account is made to name the one its
// client authenticates as (a control plane checks, as istiod does); a node that names none is
// left without one.
func TestClaimServiceAccount(t *testing.T) {
	full := fakeenvoy.IdentityTemplate{Namespace: "ns", IstioMetadata: true}.Node(3)
	if got := full.GetMetadata().GetFields()["SERVICE_ACCOUNT"].GetStringValue(); got == "" || got == "default" {
		t.Fatalf("istio-sized node's SERVICE_ACCOUNT %q: want a per-app account to begin with", got)
	}
	claimServiceAccount(full, "default")
	if got := full.GetMetadata().GetFields()["SERVICE_ACCOUNT"].GetStringValue(); got != "default" {
		t.Errorf("after the claim: SERVICE_ACCOUNT %q, want default", got)
	}
	bare := fakeenvoy.IdentityTemplate{Namespace: "ns"}.Node(0)
	claimServiceAccount(bare, "default")
	if _, ok := bare.GetMetadata().GetFields()["SERVICE_ACCOUNT"]; ok {
		t.Error("a node without SERVICE_ACCOUNT got one")
	}
}
