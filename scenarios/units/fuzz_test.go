package units

import (
	"math"
	"testing"
)

// FuzzParseDuration: any value a scenario may hold parses or gives an error with a fix; a
// parsed duration prints as a string that parses back to it (what --print relies on).
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "250ms", "1m30s", " 5s ", "500", "5x", "1h30", "2s500", "99999999h", "-5s", "NaN", "Inf", ".5s", "1e3s", "5 s", "µs", "1µs", "", "+0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, fix, err := ParseDuration(s)
		if err != nil {
			if fix == "" {
				t.Fatalf("ParseDuration(%q): %v without a fix", s, err)
			}
			return
		}
		back, _, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v, which prints as %q and parses to %v, %v", s, d, d.String(), back, err)
		}
	})
}

// FuzzParseRate: any value parses or gives an error with a fix; a parsed rate is finite and
// prints as a string that parses back to it.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"20/s", "30/m", "2/h", "5", "5/x", "1/0s", "NaN", ".inf", "1e400/s", "-5/s", " 3 / s ", "/s", "", "0x10/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, fix, err := ParseRate(s)
		if err != nil {
			if fix == "" {
				t.Fatalf("ParseRate(%q): %v without a fix", s, err)
			}
			return
		}
		if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
			t.Fatalf("ParseRate(%q) = %v, not finite", s, r)
		}
		back, _, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %v, which prints as %q and parses to %v, %v", s, r, r.String(), back, err)
		}
	})
}
