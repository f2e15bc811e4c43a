package fakeenvoy

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseNackPolicy(t *testing.T) {
	cases := []struct {
		in      string
		want    NackPolicy
		wantErr string
	}{
		{in: "", want: NackPolicy{}},
		{in: "never", want: NackPolicy{}},
		{in: "realistic", want: NackPolicy{Realistic: true}},
		{in: "p=0.01", want: NackPolicy{Probability: 0.01}},
		{in: "probability=1", want: NackPolicy{Probability: 1}},
		{in: "every=100", want: NackPolicy{EveryN: 100}},
		{in: `name=^outbound\|9090`, want: NackPolicy{NamePattern: `^outbound\|9090`}},
		{in: "realistic, p=0.5,every=3", want: NackPolicy{Realistic: true, Probability: 0.5, EveryN: 3}},
		{in: "name=a{1,2},realistic", want: NackPolicy{NamePattern: "a{1,2}", Realistic: true}},
		{in: "name=x,y,z", want: NackPolicy{NamePattern: "x,y,z"}},
		{in: "p=2", wantErr: "between 0 and 1"},
		{in: "p=NaN", wantErr: "between 0 and 1"},
		{in: "every=-1", wantErr: "whole number"},
		{in: "name=(", wantErr: "name pattern"},
		{in: "name=", wantErr: "needs a regexp"},
		{in: "name=a,name=b", wantErr: "given twice"},
		{in: "sometimes", wantErr: "unknown term"},
		{in: "realistic,,p=0.1", wantErr: "unknown term"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseNackPolicy(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.re = nil
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseNackPolicy: parsing never panics, and a parsed policy round-trips through String.
func FuzzParseNackPolicy(f *testing.F) {
	for _, s := range []string{"never", "realistic", "p=0.01", "every=100", `name=^outbound\|9090`, "realistic,p=0.1,every=2,name=a,b", "name=((", "p=1e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseNackPolicy(s)
		if err != nil {
			return
		}
		back, err := ParseNackPolicy(p.String())
		if err != nil {
			t.Fatalf("String() %q of %q does not parse: %v", p.String(), s, err)
		}
		p.re, back.re = nil, nil
		if back != p {
			t.Fatalf("round trip of %q: %+v != %+v", s, back, p)
		}
	})
}

func TestAckPolicyValidate(t *testing.T) {
	if err := (AckPolicy{DisconnectAfter: -1}).Validate(); err == nil {
		t.Errorf("negative DisconnectAfter accepted")
	}
	bad := AckPolicy{}
	bad.Delay.Dist = "exp"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "mean") {
		t.Errorf("exp without mean: %v", err)
	}
}

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
