package policy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/internal/dist"
)

// Nack decides which responses a client rejects. The rules combine: a response is NACKed
// when any of them fires. The zero value never NACKs.
type Nack struct {
	// Probability rejects each response with this probability (0..1).
	Probability float64
	// EveryN rejects every Nth response of the client (counted across types and streams).
	EveryN int
	// NamePattern rejects resources whose name matches this regexp (RE2 syntax). For CDS and
	// LDS the other resources are still applied, as Envoy does with invalid ones.
	NamePattern string
	// Realistic rejects what Envoy rejects: PGV violations (also inside every Any, unpacked
	// recursively), undecodable resources, duplicate names, a Delta name both added and
	// removed.
	Realistic bool

	re *regexp.Regexp // compiled NamePattern, shared by the clients that copy the policy
}

// ParseNack parses the flag syntax: "never", "realistic", "p=0.01" (or
// "probability=0.01"), "every=100", "name=REGEXP", combined with commas, e.g.
// "realistic,p=0.001,name=^outbound\|9090". A comma inside a name pattern is kept when what
// follows it is not one of the keys.
func ParseNack(s string) (Nack, error) {
	var p Nack
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	var nameParts []string
	inName := false
	for _, tok := range strings.Split(s, ",") {
		key, val, hasVal := strings.Cut(tok, "=")
		k := strings.ToLower(strings.TrimSpace(key))
		known := (!hasVal && (k == "never" || k == "realistic")) ||
			(hasVal && (k == "p" || k == "probability" || k == "every" || k == "name"))
		if inName && !known {
			nameParts = append(nameParts, tok)
			continue
		}
		inName = false
		switch {
		case !known:
			return Nack{}, fmt.Errorf("nack policy %q: unknown term %q; use never, realistic, p=P, every=N or name=REGEXP, comma-separated", s, tok)
		case k == "never":
		case k == "realistic":
			p.Realistic = true
		case k == "p" || k == "probability":
			f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil || !(f >= 0 && f <= 1) {
				return Nack{}, fmt.Errorf("nack policy %q: %s=%q must be a probability between 0 and 1", s, k, val)
			}
			p.Probability = f
		case k == "every":
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n < 0 {
				return Nack{}, fmt.Errorf("nack policy %q: every=%q must be a whole number >= 0 (NACK every Nth response)", s, val)
			}
			p.EveryN = n
		case k == "name":
			if nameParts != nil {
				return Nack{}, fmt.Errorf("nack policy %q: name= given twice; combine patterns with | in one regexp", s)
			}
			inName = true
			nameParts = []string{val}
		}
	}
	if nameParts != nil {
		p.NamePattern = strings.Join(nameParts, ",")
		if p.NamePattern == "" {
			return Nack{}, fmt.Errorf("nack policy %q: name= needs a regexp", s)
		}
	}
	return p.Compile()
}

// Compile validates the policy and compiles its name pattern once, so that every client
// copying the returned policy shares the compiled regexp.
func (p Nack) Compile() (Nack, error) {
	if err := p.Validate(); err != nil {
		return Nack{}, err
	}
	if p.NamePattern != "" && (p.re == nil || p.re.String() != p.NamePattern) {
		p.re = regexp.MustCompile(p.NamePattern) // Validate compiled it already
	}
	if p.NamePattern == "" {
		p.re = nil
	}
	return p, nil
}

// Validate reports a policy with out-of-range values or a bad regexp.
func (p Nack) Validate() error {
	if !(p.Probability >= 0 && p.Probability <= 1) {
		return fmt.Errorf("nack policy: probability %g must be between 0 and 1", p.Probability)
	}
	if p.EveryN < 0 {
		return fmt.Errorf("nack policy: every %d must be >= 0", p.EveryN)
	}
	if p.NamePattern != "" {
		if _, err := regexp.Compile(p.NamePattern); err != nil {
			return fmt.Errorf("nack policy: name pattern %q: %w", p.NamePattern, err)
		}
	}
	return nil
}

// Never reports whether the policy never rejects anything.
func (p Nack) Never() bool {
	return p.Probability == 0 && p.EveryN == 0 && p.NamePattern == "" && !p.Realistic
}

// String renders the policy in the syntax ParseNack reads.
func (p Nack) String() string {
	var parts []string
	if p.Realistic {
		parts = append(parts, "realistic")
	}
	if p.Probability != 0 {
		parts = append(parts, "p="+strconv.FormatFloat(p.Probability, 'g', -1, 64))
	}
	if p.EveryN != 0 {
		parts = append(parts, "every="+strconv.Itoa(p.EveryN))
	}
	if p.NamePattern != "" {
		parts = append(parts, "name="+p.NamePattern) // last: it may contain commas
	}
	if len(parts) == 0 {
		return "never"
	}
	return strings.Join(parts, ",")
}

// MatchName reports whether the name pattern matches name (compiling it on first use when
// Compile was not called).
func (p *Nack) MatchName(name string) bool {
	if p.NamePattern == "" {
		return false
	}
	if p.re == nil {
		p.re = regexp.MustCompile(p.NamePattern) // validated by fakeenvoy.NewClient
	}
	return p.re.MatchString(name)
}

// Ack shapes when (and whether) a client answers.
type Ack struct {
	// Delay is Envoy's apply time, drawn per response, in seconds; the response's requests
	// (follow-up subscriptions and the ACK/NACK) go out after it. Zero means no delay.
	Delay dist.Spec
	// NeverAck makes a hung client: it applies responses but never sends an ACK or NACK
	// (subscription requests for other types still go out).
	NeverAck bool
	// DisconnectAfter closes the stream after this many responses on it (then reconnects with
	// backoff); 0 never.
	DisconnectAfter int
}

// Validate reports a bad delay distribution or a negative count.
func (a Ack) Validate() error {
	if a.DisconnectAfter < 0 {
		return fmt.Errorf("ack policy: disconnectAfter %d must be >= 0", a.DisconnectAfter)
	}
	if err := a.Delay.Validate(); err != nil {
		return fmt.Errorf("ack policy: delay: %w", err)
	}
	return nil
}

// HasDelay reports whether the delay distribution can draw anything but 0.
func (a Ack) HasDelay() bool {
	return !((a.Delay.Dist == "" || a.Delay.Dist == "constant") && a.Delay.Value == 0)
}
