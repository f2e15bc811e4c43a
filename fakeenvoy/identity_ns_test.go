package fakeenvoy

import "testing"

// TestNamespacePlacement: NamespaceCounts places a group's clients by their position in the
// group (from groupStart), NamespaceNames spreads them over names, Namespaces over ns-N.
func TestNamespacePlacement(t *testing.T) {
	counts := IdentityTemplate{NamespaceCounts: []NamespaceCount{{"a", 2}, {"b", 1}}, groupStart: 10}
	for _, tc := range []struct {
		name  string
		t     IdentityTemplate
		index int
		want  string
	}{
		{"counts first", counts, 10, "a"},
		{"counts second of first", counts, 11, "a"},
		{"counts next entry", counts, 12, "b"},
		{"counts past the end", counts, 13, "a"},
		{"names", IdentityTemplate{NamespaceNames: []string{"x", "y"}}, 3, "y"},
		{"counts win over names", IdentityTemplate{NamespaceCounts: []NamespaceCount{{"a", 1}}, NamespaceNames: []string{"x"}}, 0, "a"},
		{"spread", IdentityTemplate{Namespaces: 3}, 4, "ns-1"},
		{"one", IdentityTemplate{Namespace: "solo"}, 7, "solo"},
		{"default", IdentityTemplate{}, 7, "default"},
	} {
		if got := tc.t.NamespaceOf(tc.index); got != tc.want {
			t.Errorf("%s: NamespaceOf(%d) = %q, want %q", tc.name, tc.index, got, tc.want)
		}
		if got := tc.t.Node(tc.index).GetMetadata().GetFields()["NAMESPACE"].GetStringValue(); got != tc.want {
			t.Errorf("%s: node NAMESPACE %q, want %q", tc.name, got, tc.want)
		}
	}
	if err := (IdentityTemplate{NamespaceCounts: []NamespaceCount{{"a", 0}}}).Validate(); err == nil {
		t.Error("a zero count validated")
	}
}
