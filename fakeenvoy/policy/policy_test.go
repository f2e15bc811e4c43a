package policy

import (
	"strings"
	"testing"
)

func TestParseNack(t *testing.T) {
	cases := []struct {
		in      string
		want    Nack
		wantErr string
	}{
		{in: "", want: Nack{}},
		{in: "never", want: Nack{}},
		{in: "realistic", want: Nack{Realistic: true}},
		{in: "p=0.01", want: Nack{Probability: 0.01}},
		{in: "probability=1", want: Nack{Probability: 1}},
		{in: "every=100", want: Nack{EveryN: 100}},
		{in: `name=^outbound\|9090`, want: Nack{NamePattern: `^outbound\|9090`}},
		{in: "realistic, p=0.5,every=3", want: Nack{Realistic: true, Probability: 0.5, EveryN: 3}},
		{in: "name=a{1,2},realistic", want: Nack{NamePattern: "a{1,2}", Realistic: true}},
		{in: "name=x,y,z", want: Nack{NamePattern: "x,y,z"}},
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
			got, err := ParseNack(tc.in)
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

// FuzzParseNack: parsing never panics, and a parsed policy round-trips through String.
func FuzzParseNack(f *testing.F) {
	for _, s := range []string{"never", "realistic", "p=0.01", "every=100", `name=^outbound\|9090`, "realistic,p=0.1,every=2,name=a,b", "name=((", "p=1e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseNack(s)
		if err != nil {
			return
		}
		back, err := ParseNack(p.String())
		if err != nil {
			t.Fatalf("String() %q of %q does not parse: %v", p.String(), s, err)
		}
		p.re, back.re = nil, nil
		if back != p {
			t.Fatalf("round trip of %q: %+v != %+v", s, back, p)
		}
	})
}

func TestAckValidate(t *testing.T) {
	if err := (Ack{DisconnectAfter: -1}).Validate(); err == nil {
		t.Errorf("negative DisconnectAfter accepted")
	}
	bad := Ack{}
	bad.Delay.Dist = "exp"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "mean") {
		t.Errorf("exp without mean: %v", err)
	}
}
