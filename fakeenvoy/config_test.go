package fakeenvoy

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestIdentityTemplate(t *testing.T) {
	tpl := IdentityTemplate{Namespaces: 3, IPBase: "10.2.0.250", Labels: map[string]string{"app": "web"}, Generator: "grpc"}
	n := tpl.Node(7)
	if want := "sidecar~10.2.1.1~pod-7.ns-1~ns-1.svc.cluster.local"; n.GetId() != want {
		t.Errorf("id %q, want %q", n.GetId(), want)
	}
	md := n.GetMetadata().GetFields()
	for k, want := range map[string]string{"NAMESPACE": "ns-1", "CLUSTER_ID": "Kubernetes", "GENERATOR": "grpc", "INTERCEPTION_MODE": "REDIRECT", "ISTIO_VERSION": "1.28.0"} {
		if got := md[k].GetStringValue(); got != want {
			t.Errorf("metadata %s = %q, want %q", k, got, want)
		}
	}
	if md["LABELS"].GetStructValue().GetFields()["app"].GetStringValue() != "web" {
		t.Errorf("labels %v", md["LABELS"])
	}
	r := IdentityTemplate{Type: "router", Namespace: "istio-system"}.Node(0)
	if r.GetId() != "router~100.64.0.1~gateway-0.istio-system~istio-system.svc.cluster.local" {
		t.Errorf("router id %q", r.GetId())
	}
	if _, ok := r.GetMetadata().GetFields()["GENERATOR"]; ok {
		t.Errorf("GENERATOR set without a generator")
	}
	if err := (IdentityTemplate{Type: "gateway"}).Validate(); err == nil {
		t.Errorf("bad type accepted")
	}
	c, err := NewClient(ClientConfig{Node: tpl.Node(4)}, nil)
	if err != nil || c.Namespace() != "ns-1" || c.NodeID() != tpl.Node(4).GetId() {
		t.Errorf("client identity: %v %q %q", err, c.Namespace(), c.NodeID())
	}
	if _, err := NewClient(ClientConfig{}, nil); err == nil || !strings.Contains(err.Error(), "IdentityTemplate") {
		t.Errorf("missing node: %v", err)
	}
	if err := (ClientConfig{Node: tpl.Node(0), GRPC: true, Delta: true, GRPCTargets: []string{"x:1"}}).Validate(); err == nil {
		t.Errorf("a Delta gRPC client was accepted")
	}
}

func TestBackoffNext(t *testing.T) {
	b := Backoff{Base: DefaultBackoffBase, Max: DefaultBackoffMax}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		attempt int
		ceil    time.Duration
	}{{0, 500 * time.Millisecond}, {1, time.Second}, {5, 16 * time.Second}, {6, 30 * time.Second}, {40, 30 * time.Second}} {
		var maxSeen time.Duration
		for range 2000 {
			d := b.Next(tc.attempt, rng)
			if d < 0 || d >= tc.ceil {
				t.Fatalf("attempt %d: wait %v outside [0, %v)", tc.attempt, d, tc.ceil)
			}
			maxSeen = max(maxSeen, d)
		}
		if maxSeen < tc.ceil/2 {
			t.Errorf("attempt %d: waits never above %v: not jittered over [0, %v)", tc.attempt, maxSeen, tc.ceil)
		}
	}
}
