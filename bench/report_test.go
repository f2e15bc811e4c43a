package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/internal/summary"
)

// The -update flag is shared with the package's other golden tests; read it by name.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// golden compares got with testdata/run/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "run", name)
	if updateGolden() {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./bench -run %s -update to create it", t.Name())
	require.Equal(t, string(want), string(got))
}

func TestWriteJUnit(t *testing.T) {
	v := 0.42
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &summary.Summary{Version: summary.Version,
		Metadata: summary.Metadata{Tool: "xdslab", Command: "run", Started: start, Ended: start.Add(12 * time.Second),
			DurationSeconds: 12.5, Labels: map[string]string{"scenario": "quickstart"}},
		Results: summary.Results{Thresholds: []summary.Threshold{
			{Metric: "xdslab_push_latency_seconds", Expression: "p(99)<500ms", Passed: true, Value: &v},
			{Metric: "xdslab_fleet_nacks_total", Tags: map[string]string{"type": "CDS"}, Expression: "count==0", Passed: false, Value: &v},
			{Metric: "xdslab_nothing_total", Expression: "count==0", Passed: false},
			{Metric: MetricConnectIncomplete, Tags: map[string]string{"group": "sidecars"}, Expression: "value==0", Passed: false, Value: &v,
				Description: "implicit: every client of group sidecars holds its first full config by the end of the connect phase"},
		}},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteJUnit(&buf, s))
	golden(t, "junit.golden.xml", buf.Bytes())
}
