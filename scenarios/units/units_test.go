package units

import (
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/dist"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in, fix, err string
		want         time.Duration
	}{
		{in: "0"},
		{in: " 1m30s ", want: 90 * time.Second},
		{in: "5", fix: "add a unit, e.g. 5s or 5ms", err: `duration "5" has no unit`},
		{in: "soon", fix: `write a Go duration such as "250ms", "5s" or "1m30s"`, err: `invalid duration "soon"`},
		// The fix says what is wrong with a duration Go refuses.
		{in: "1h30", fix: `every number needs its unit: did you mean "1h30m"?`, err: `invalid duration "1h30"`},
		{in: "1m30", fix: `every number needs its unit: did you mean "1m30s"?`, err: `invalid duration "1m30"`},
		{in: "2s500", fix: `every number needs its unit: did you mean "2s500ms"?`, err: `invalid duration "2s500"`},
		{in: "5x", fix: `unknown unit "x": use ns, us, ms, s, m or h, e.g. "250ms", "5s" or "1m30s"`, err: `invalid duration "5x"`},
		{in: "5sec", fix: `unknown unit "sec": use ns, us, ms, s, m or h, e.g. "250ms", "5s" or "1m30s"`, err: `invalid duration "5sec"`},
		{in: "1ns5", fix: `every number needs its unit, and none is finer than ns: drop "5" or give it a unit`, err: `invalid duration "1ns5"`},
		{in: "1e3s", fix: `durations take no exponent: write the number out, "1000s"`, err: `invalid duration "1e3s"`},
		{in: "2.5e-3", fix: `durations take no exponent: write the number out with a unit, e.g. "0.0025s"`, err: `invalid duration "2.5e-3"`},
		{in: "99999999h", fix: "it is out of range: a duration is at most 2562047h47m16s (about 292 years)", err: `invalid duration "99999999h"`},
		// ParseFloat reads these as numbers; a unit would not make them durations.
		{in: "NaN", fix: `write a Go duration such as "250ms", "5s" or "1m30s"`, err: `invalid duration "NaN"`},
		{in: "Inf", fix: `write a Go duration such as "250ms", "5s" or "1m30s"`, err: `invalid duration "Inf"`},
	} {
		d, fix, err := ParseDuration(tc.in)
		if d.D() != tc.want || fix != tc.fix || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("ParseDuration(%q) = %v, %q, %v; want %v, %q, %q", tc.in, d, fix, err, tc.want, tc.fix, tc.err)
		}
		if err == nil {
			if back, _, err := ParseDuration(d.String()); err != nil || back != d {
				t.Errorf("%q prints as %q, which parses to %v, %v", tc.in, d, back, err)
			}
		}
	}
}

func TestParseRate(t *testing.T) {
	const fix = `write a rate such as "20/s", "30/m" or "2/h"`
	for _, tc := range []struct {
		in, err string
		want    float64
	}{
		{in: "20/s", want: 20},
		{in: "30 / m", want: 0.5},
		{in: "2/h", want: 2.0 / 3600},
		{in: "4", want: 4},
		{in: "3/d", err: `rate "3/d" has unknown unit "d"`},
		{in: "x/s", err: `invalid rate "x/s"`},
		{in: "Inf", err: `rate "Inf" is not finite`},
	} {
		r, gotFix, err := ParseRate(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || gotFix != fix {
				t.Errorf("ParseRate(%q) = %v, %q, %v; want error %q", tc.in, r, gotFix, err, tc.err)
			}
			continue
		}
		if err != nil || r.PerSecond() != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v/s", tc.in, r, err, tc.want)
		}
		if back, _, err := ParseRate(r.String()); err != nil || back != r {
			t.Errorf("%q prints as %q, which parses to %v, %v", tc.in, r, back, err)
		}
	}
}

func TestFormatDist(t *testing.T) {
	if got := FormatDist(dist.Spec{Dist: "exp", Mean: 0.002, Max: 0.01}, Seconds); got != "exp(mean=2ms max=10ms)" {
		t.Errorf("FormatDist = %q", got)
	}
	if got := FormatDist(dist.Constant(3), nil); got != "3" {
		t.Errorf("FormatDist(constant) = %q", got)
	}
	for _, k := range DistKeys()[1:] {
		if IsTimeParam(k) != (k != "sigma" && k != "alpha" && k != "s") {
			t.Errorf("IsTimeParam(%q) = %v", k, IsTimeParam(k))
		}
	}
}
