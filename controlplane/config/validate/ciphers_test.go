package validate

import "testing"

// TestKnownCipherSuite: Envoy's names, "ALL" and "" are known, as is an expression led by a
// byte that is no letter or digit as a rune, istiod's test (IsValidCipherSuite), which reads
// the first byte, not the first UTF-8 character.
func TestKnownCipherSuite(t *testing.T) {
	for _, tc := range []struct {
		cs   string
		want bool
	}{
		{"ECDHE-RSA-AES128-SHA", true},
		{"", true},
		{"ALL", true},
		{"-ECDHE-RSA-AES128-SHA", true},
		{"[AES256-SHA|AES128-SHA]", true},
		{"ecdhe-rsa-aes128-sha", false},
		{"1ECDHE", false},
		{"–ECDHE-RSA-AES128-SHA", false},     // an en dash: its first byte 0xE2 is 'â', a letter
		{"\u05d7ECDHE-RSA-AES128-SHA", true}, // its first byte 0xD7 is '×', no letter
	} {
		if got := KnownCipherSuite(tc.cs); got != tc.want {
			t.Errorf("KnownCipherSuite(%q) = %v, want %v", tc.cs, got, tc.want)
		}
	}
}
