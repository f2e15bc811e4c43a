package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"mean", "mean", 0},
		{"mena", "mean", 1}, // transposition
		{"MEAN", "mean", 0}, // case-insensitive
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // OSA, not Damerau: no edit of a transposed pair
		{"héllo", "hello", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	kinds := []string{"ServiceEntry", "VirtualService", "DestinationRule", "Gateway", "Sidecar"}
	for _, tc := range []struct {
		s, want string
	}{
		{"serviceentry", "ServiceEntry"},
		{"VirtualSevrice", "VirtualService"},
		{"Gatewy", "Gateway"},
		{"Sidecra", "Sidecar"},
		{"Pod", ""},      // nothing close
		{"xy", ""},       // short: at most 2 edits, still too far from all
		{"DestRule", ""}, // 7 edits from DestinationRule
		{"Gateway", "Gateway"},
	} {
		if got := Nearest(tc.s, kinds); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
	if got := Nearest("x", nil); got != "" {
		t.Errorf("Nearest with no candidates = %q", got)
	}
}

func FuzzDistance(f *testing.F) {
	f.Add("mean", "mena")
	f.Add("", "abc")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Distance(a, b)
		if d < 0 || d > max(len([]rune(a)), len([]rune(b))) {
			t.Fatalf("Distance(%q, %q) = %d out of range", a, b, d)
		}
		if Distance(a, a) != 0 {
			t.Fatalf("Distance(%q, itself) != 0", a)
		}
	})
}

func TestHint(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"servce", ` (did you mean "service"?)`},
		{"service", ""},
		{"zzzzzzzzzz", ""},
	} {
		if got := Hint(tc.s, []string{"service", "ports"}); got != tc.want {
			t.Errorf("Hint(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestFix(t *testing.T) {
	c := []string{"sotw", "delta", "grpc"}
	if got, want := Fix("dleta", c), `did you mean "delta"?`; got != want {
		t.Errorf("Fix(dleta) = %q, want %q", got, want)
	}
	if got, want := Fix("zzzzzzzz", c), "use one of: sotw, delta, grpc"; got != want {
		t.Errorf("Fix(zzzzzzzz) = %q, want %q", got, want)
	}
}
