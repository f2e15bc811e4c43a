package dashboards

import (
	"regexp"
	"strings"
	"testing"
)

// istiod exports xds_cache_reads with the result in its type label and no result label
// (istio pilot/pkg/model/typed_xds_cache.go: xdsCacheReads.With(typeTag.Value("hit"))); the
// cache panel must still draw a hit ratio from those series.
func TestCacheHitRatioOnIstiodLabels(t *testing.T) {
	hit := map[string]string{"type": "hit"}
	miss := map[string]string{"type": "miss"}
	var panel *Panel
	for _, p := range ControlPlane().Panels() {
		if p.Title == "Cache hit ratio by type" {
			panel = &p
		}
	}
	if panel == nil {
		t.Fatal("no cache hit ratio panel")
	}
	found := false
	for _, q := range panel.Queries {
		sels := cacheSelectors.FindAllStringSubmatch(q.Expr, -1)
		if len(sels) != 2 || strings.Contains(q.Expr, " by (") {
			continue // a ratio per type: istiod has none
		}
		num, den := sels[0][1], sels[1][1]
		if selects(num, hit) && !selects(num, miss) && selects(den, hit) && selects(den, miss) {
			found = true
			// xdslab's own series (type and result) stay out of it: no double count.
			if selects(den, map[string]string{"type": "cds", "result": "hit"}) {
				t.Errorf("%s: counts xdslab's per-type series too", q.Expr)
			}
		}
	}
	if !found {
		t.Errorf("no query of %q gives a hit ratio from istiod's xds_cache_reads{type=hit|miss}", panel.Title)
	}
}

var (
	cacheSelectors = regexp.MustCompile(`xds_cache_reads\{([^}]*)\}`)
	labelMatcher   = regexp.MustCompile(`(\w+)\s*(=~|!=|=)\s*"([^"]*)"`)
)

// selects says whether a selector's matchers (job variables match anything) select a series
// with these labels; an absent label has the value "".
func selects(matchers string, labels map[string]string) bool {
	for _, m := range labelMatcher.FindAllStringSubmatch(matchers, -1) {
		name, op, val := m[1], m[2], m[3]
		if name == "job" {
			continue
		}
		switch op {
		case "=":
			if labels[name] != val {
				return false
			}
		case "!=":
			if labels[name] == val {
				return false
			}
		case "=~":
			if !regexp.MustCompile("^(?:" + val + ")$").MatchString(labels[name]) {
				return false
			}
		}
	}
	return true
}
