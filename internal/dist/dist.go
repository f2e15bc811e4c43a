package dist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// Spec describes a distribution. Which fields apply depends on Dist:
//
//	constant:  Value
//	uniform:   Min, Max
//	exp:       Mean
//	normal:    Mean, Sigma
//	lognormal: Median, Sigma (sigma of the underlying normal)
//	pareto:    Min (scale x_m), Alpha (shape)
//	zipf:      S (> 1), Max (largest value, >= 1); values are 1..Max
//
// Min and Max also clamp the result of any distribution when set (Max > 0).
type Spec struct {
	Dist   string  `json:"dist" yaml:"dist"`
	Value  float64 `json:"value,omitempty" yaml:"value,omitempty"`
	Min    float64 `json:"min,omitempty" yaml:"min,omitempty"`
	Max    float64 `json:"max,omitempty" yaml:"max,omitempty"`
	Mean   float64 `json:"mean,omitempty" yaml:"mean,omitempty"`
	Median float64 `json:"median,omitempty" yaml:"median,omitempty"`
	Sigma  float64 `json:"sigma,omitempty" yaml:"sigma,omitempty"`
	Alpha  float64 `json:"alpha,omitempty" yaml:"alpha,omitempty"`
	S      float64 `json:"s,omitempty" yaml:"s,omitempty"`
}

// Names lists the supported distributions.
var names = []string{"constant", "uniform", "exp", "normal", "lognormal", "pareto", "zipf"}

// Names returns the supported distribution names.
func Names() []string { return append([]string(nil), names...) }

// Constant is a Spec that always yields v.
func Constant(v float64) Spec { return Spec{Dist: "constant", Value: v} }

// Validate reports a spec whose parameters do not define a distribution, naming the fix.
func (s Spec) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("dist %s: "+format, append([]any{s.Dist}, a...)...)
	}
	switch s.Dist {
	case "constant", "":
		if s.Value < 0 {
			return bad("value must be >= 0, got %g", s.Value)
		}
	case "uniform":
		if s.Min < 0 || s.Max < s.Min {
			return bad("needs 0 <= min <= max, got min %g max %g", s.Min, s.Max)
		}
	case "exp":
		if s.Mean <= 0 {
			return bad("needs mean > 0, got %g", s.Mean)
		}
	case "normal":
		if s.Sigma < 0 {
			return bad("needs sigma >= 0, got %g", s.Sigma)
		}
	case "lognormal":
		if s.Median <= 0 || s.Sigma < 0 {
			return bad("needs median > 0 and sigma >= 0, got median %g sigma %g", s.Median, s.Sigma)
		}
	case "pareto":
		if s.Min <= 0 || s.Alpha <= 0 {
			return bad("needs min > 0 (scale) and alpha > 0, got min %g alpha %g", s.Min, s.Alpha)
		}
	case "zipf":
		if s.S <= 1 || s.Max < 1 {
			return bad("needs s > 1 and max >= 1, got s %g max %g", s.S, s.Max)
		}
	default:
		return fmt.Errorf("unknown dist %q: use one of %v", s.Dist, names)
	}
	return nil
}

// Sampler draws values from a Spec with its own seeded source.
type Sampler struct {
	spec Spec
	draw func() float64
}

// New returns a sampler for s seeded with seed. The same spec and seed yield the same sequence.
func New(s Spec, seed uint64) (*Sampler, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	src := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var draw func() float64
	switch s.Dist {
	case "constant", "":
		v := s.Value
		draw = func() float64 { return v }
	case "uniform":
		d := distuv.Uniform{Min: s.Min, Max: s.Max, Src: src}
		if s.Min == s.Max {
			v := s.Min
			draw = func() float64 { return v }
		} else {
			draw = d.Rand
		}
	case "exp":
		d := distuv.Exponential{Rate: 1 / s.Mean, Src: src}
		draw = d.Rand
	case "normal":
		d := distuv.Normal{Mu: s.Mean, Sigma: s.Sigma, Src: src}
		draw = d.Rand
	case "lognormal":
		d := distuv.LogNormal{Mu: math.Log(s.Median), Sigma: s.Sigma, Src: src}
		draw = d.Rand
	case "pareto":
		d := distuv.Pareto{Xm: s.Min, Alpha: s.Alpha, Src: src}
		draw = d.Rand
	case "zipf":
		z := rand.NewZipf(src, s.S, 1, uint64(s.Max)-1)
		draw = func() float64 { return float64(z.Uint64() + 1) }
	}
	return &Sampler{spec: s, draw: draw}, nil
}

// Float draws one value, clamped to [Min, Max] when Max > 0 (and to >= 0 always).
func (s *Sampler) Float() float64 {
	v := s.draw()
	if s.spec.Dist != "pareto" && s.spec.Dist != "uniform" && s.spec.Max > 0 {
		v = math.Min(math.Max(v, s.spec.Min), s.spec.Max)
	}
	if v < 0 || math.IsNaN(v) {
		v = 0
	}
	return v
}

// Int draws one value rounded to the nearest integer.
func (s *Sampler) Int() int { return int(math.Round(s.Float())) }
