package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/xdslab/xdslab/internal/atomicfile"
	"github.com/xdslab/xdslab/internal/summary"
)

// HgrmExt is the extension of the percentile-distribution files written beside summary.json.
const HgrmExt = ".hgrm"

// hgrmTicks is HdrHistogram's default ticks per half distance (its plotters read any).
const hgrmTicks = 5

// HgrmName is the file a trend's histogram is written to: its key made a file name,
// "xdslab_push_latency_seconds.hgrm", "xdslab_push_latency_seconds.kind=scale.hgrm".
func HgrmName(m summary.Metric) string {
	var b strings.Builder
	b.WriteString(m.Name)
	for _, k := range sortedKeys(m.Tags) {
		b.WriteString("." + k + "=" + m.Tags[k])
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == '=':
			return r
		}
		return '_'
	}, b.String()) + HgrmExt
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// WriteHgrms writes every trend's HDR histogram in dir as HdrHistogram's percentile
// distribution text (what hdrhistogram-go's PercentilesPrint writes and HdrHistogram's
// plotters, e.g. hdrhistogram.github.io/HdrHistogram/plotFiles.html, read), in milliseconds
// for time trends. A trend without a histogram (read from buckets) or without observations
// has no file.
func WriteHgrms(dir string, s *summary.Summary) error {
	for _, m := range s.Results.Metrics {
		if m.Type != summary.Trend || m.Histogram == nil {
			continue
		}
		h, err := m.Histogram.Decode()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Key(), err)
		}
		if h.TotalCount() == 0 {
			continue
		}
		// Value scale: the recorded unit times scale is the metric's unit (seconds); the file
		// is in milliseconds for time, HdrHistogram's usual unit, and as recorded otherwise.
		scale := 1.0
		if m.Contains == summary.Time && m.Histogram.Scale > 0 {
			scale = 1 / (m.Histogram.Scale * 1000)
		}
		if err := atomicfile.Write(filepath.Join(dir, HgrmName(m)), func(w io.Writer) error {
			_, err := h.PercentilesPrint(w, hgrmTicks, scale)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
