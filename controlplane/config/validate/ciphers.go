package validate

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/xdslab/xdslab/internal/suggest"
)

// envoyCipherSuites are the cipher suites Envoy's TLS library (BoringSSL) knows by name, as
// istiod lists them for a Gateway server's tls.cipherSuites (no PSK suites): a name outside
// them makes Envoy reject the listener, so istiod leaves it out.
var envoyCipherSuites = map[string]bool{
	"AES128-GCM-SHA256":             true,
	"AES128-SHA":                    true,
	"AES256-GCM-SHA384":             true,
	"AES256-SHA":                    true,
	"DES-CBC3-SHA":                  true,
	"ECDHE-ECDSA-AES128-GCM-SHA256": true,
	"ECDHE-ECDSA-AES128-SHA":        true,
	"ECDHE-ECDSA-AES256-GCM-SHA384": true,
	"ECDHE-ECDSA-AES256-SHA":        true,
	"ECDHE-ECDSA-CHACHA20-POLY1305": true,
	"ECDHE-RSA-AES128-GCM-SHA256":   true,
	"ECDHE-RSA-AES128-SHA":          true,
	"ECDHE-RSA-AES256-GCM-SHA384":   true,
	"ECDHE-RSA-AES256-SHA":          true,
	"ECDHE-RSA-CHACHA20-POLY1305":   true,
}

// KnownCipherSuite reports whether istiod passes a Gateway server's cipher suite on to Envoy:
// a name Envoy knows, "ALL", an empty one, or an expression (a name led by an operator or a
// bracket, such as "[A|B]" or "-A", which istiod does not parse: its first byte, read as a
// rune, is no letter or digit). The router generator leaves
// the others out, as istiod does, and validation warns about them.
func KnownCipherSuite(cs string) bool {
	if cs == "" || cs == "ALL" || envoyCipherSuites[cs] {
		return true
	}
	// istiod tests the first byte as a rune (rune(cs[0])), not the first UTF-8 character: a
	// name led by an en dash (0xE2, 'â') is no expression, one led by U+05D7 (0xD7, '×') is.
	r := rune(cs[0])
	return !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// serverCipherSuites warns, where istiod's validation warns, about a Gateway server's cipher
// suites that reach no Envoy (unknown to it, or listed again: the router generator leaves them
// out, as istiod does) and about a minimum TLS version below 1.2 without cipher suites (Envoy's
// default suites need TLS 1.2).
func (c *checker) serverCipherSuites(ta Path, tls *networking.ServerTLSSettings) {
	suites := tls.GetCipherSuites()
	if v := tls.GetMinProtocolVersion(); (v == networking.ServerTLSSettings_TLSV1_0 || v == networking.ServerTLSSettings_TLSV1_1) && len(suites) == 0 {
		c.warnf(ta.With("minProtocolVersion"), "%s: Envoy's default cipher suites need TLS 1.2, so older clients find none to agree on; list cipher suites they support in cipherSuites", v)
	}
	known := slices.Sorted(maps.Keys(envoyCipherSuites))
	seen := map[string]bool{}
	kept := 0
	for i, cs := range suites {
		switch {
		case !KnownCipherSuite(cs):
			c.warnf(ta.With("cipherSuites", i), "%q is not a cipher suite Envoy knows: it is left out, as istiod leaves it out (Envoy would reject the listener)%s", cs, cipherHint(cs, known))
		case seen[cs]:
			c.warnf(ta.With("cipherSuites", i), "%q is listed already: it is left out, as istiod leaves it out", cs)
		default:
			kept++
		}
		seen[cs] = true
	}
	if len(suites) > 0 && kept == 0 {
		c.warnf(ta.With("cipherSuites"), "has no cipher suite Envoy knows: the server offers Envoy's default ones")
	}
}

// cipherHint is the " (did you mean …?)" of a cipher suite name Envoy does not know.
func cipherHint(cs string, known []string) string {
	if up := strings.ToUpper(cs); envoyCipherSuites[up] {
		return " (did you mean " + strconv.Quote(up) + "?)"
	}
	return suggest.Hint(strings.ToUpper(cs), known)
}
