package fleet

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/xdslab/xdslab/measure"
)

func TestPromHistogramFromHDR(t *testing.T) {
	h := measure.NewLatencyHistogram()
	for _, us := range []int64{400, 2000, 2000, 70_000_000} {
		if err := h.RecordValue(us); err != nil {
			t.Fatal(err)
		}
	}
	var m dto.Metric
	if err := promHistogram(descTTFC, h, "sidecars").Write(&m); err != nil {
		t.Fatal(err)
	}
	want := map[float64]uint64{.0005: 1, .001: 1, .0025: 3, .005: 3, 60: 3, 300: 4}
	for _, b := range m.GetHistogram().GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if got := m.GetHistogram().GetSampleCount(); got != 4 {
		t.Errorf("count = %d, want 4", got)
	}
	if sum := m.GetHistogram().GetSampleSum(); sum < 70.004 || sum > 70.004*1.001 {
		t.Errorf("sum = %g s, want 70.0044 within HDR precision", sum)
	}
}
