package dashboards

import (
	"fmt"
	"strings"
)

// The PromQL below is built by a few helpers so that every panel selects its job the same way
// and every rate uses Grafana's $__rate_interval (at least four scrape intervals, so a rate
// never sees fewer than two samples).

// rateWindow is the range of every rate and increase.
const rateWindow = "[$__rate_interval]"

// sel is metric{job=~"$variable", matchers...}.
func sel(variable, metric string, matchers ...string) string {
	m := append([]string{fmt.Sprintf(`job=~"$%s"`, variable)}, matchers...)
	return metric + "{" + strings.Join(m, ", ") + "}"
}

// sumBy wraps expr in sum by (labels), or plain sum without labels.
func sumBy(labels, expr string) string {
	if labels == "" {
		return "sum(" + expr + ")"
	}
	return "sum by (" + labels + ") (" + expr + ")"
}

// rateOf is the per-second rate of a counter summed by labels.
func rateOf(variable, metric, labels string, matchers ...string) string {
	return sumBy(labels, "rate("+sel(variable, metric, matchers...)+rateWindow+")")
}

// quantile is histogram_quantile(q) over a classic histogram's buckets, by labels.
func quantile(q float64, variable, metric, labels string) string {
	by := "le"
	if labels != "" {
		by = "le, " + labels
	}
	return fmt.Sprintf("histogram_quantile(%g, %s)", q, sumBy(by, "rate("+sel(variable, metric+"_bucket")+rateWindow+")"))
}

// percentiles is the p50, p90 and p99 lines of a histogram.
func percentiles(variable, metric string) []Query {
	var out []Query
	for _, q := range []struct {
		q      float64
		legend string
	}{{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}} {
		out = append(out, Query{Expr: quantile(q.q, variable, metric, ""), Legend: q.legend})
	}
	return out
}

// cumulativePercentiles is the p50, p90 and p99 lines of a histogram over everything it
// observed since the process started, for distributions recorded in a burst (a ramp) rather
// than continuously.
func cumulativePercentiles(variable, metric string) []Query {
	var out []Query
	for _, q := range []struct {
		q      float64
		legend string
	}{{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}} {
		out = append(out, Query{Expr: fmt.Sprintf("histogram_quantile(%g, %s)", q.q, sumBy("le", sel(variable, metric+"_bucket"))), Legend: q.legend})
	}
	return out
}

// heatmapOf is a histogram's bucket rates summed by le, drawn as heatmap cells.
func heatmapOf(variable, metric string) Query {
	return Query{Expr: sumBy("le", "rate("+sel(variable, metric+"_bucket")+rateWindow+")"), Legend: "{{le}}", Heatmap: true}
}

// ratio is a/b where both are summed by labels.
func ratio(a, b string) string { return a + " / " + b }

func zero() *float64 { z := 0.0; return &z }
