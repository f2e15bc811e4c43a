package dashboards

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedDashboardsAreCurrent fails when the JSON under grafana/ is not what the Go code
// renders: the committed dashboards are what users import, so they must never drift.
func TestCommittedDashboardsAreCurrent(t *testing.T) {
	for _, s := range All() {
		t.Run(s.UID, func(t *testing.T) {
			got, err := JSON(s)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("grafana", s.UID+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v: generate it with: go test ./dashboards -update", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: regenerate it with: go test ./dashboards -update", path)
			}
		})
	}
}

// TestRenderIsDeterministic guards the staleness check: rendering twice gives the same bytes.
func TestRenderIsDeterministic(t *testing.T) {
	for _, s := range All() {
		a, err := JSON(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := JSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two renders differ", s.UID)
		}
	}
}
