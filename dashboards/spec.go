package dashboards

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is the Grafana visualization of a panel.
type Kind int

// The panel kinds used by xdslab's dashboards.
const (
	// TimeSeries draws one line per series.
	TimeSeries Kind = iota
	// Heatmap draws a histogram over time from classic buckets (queries with Heatmap set).
	Heatmap
	// Stat shows the latest value of each series as a big number.
	Stat
)

func (k Kind) String() string {
	switch k {
	case TimeSeries:
		return "timeseries"
	case Heatmap:
		return "heatmap"
	case Stat:
		return "stat"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Query is one PromQL query of a panel. Expressions may use the dashboard's variables ($job,
// and $cp_job on the lab dashboard) and Grafana's $__rate_interval.
type Query struct {
	// Expr is the PromQL expression.
	Expr string
	// Legend is Grafana's legend format, e.g. "{{type}}" or "p99".
	Legend string
	// Heatmap marks a query returning classic histogram buckets summed by le, rendered as
	// heatmap cells (Grafana's format=heatmap).
	Heatmap bool
}

// Panel is one panel: what it shows, how to read it, and its queries.
type Panel struct {
	Title string
	// Description tells an operator what the panel means and what to do about it; Grafana
	// shows it as the panel's (i) tooltip.
	Description string
	// Unit is a Grafana unit id: s, bytes, ops, percentunit, short, …
	Unit string
	Kind Kind
	// Width in grid columns (of 24); 0 means 12.
	Width uint32
	// Min, when set, pins the lower end of the y axis (0 for counts and rates).
	Min     *float64
	Queries []Query
}

// Row groups panels under a title.
type Row struct {
	Title  string
	Panels []Panel
}

// Variable is a dashboard variable listing the values of a label (Grafana query variable,
// multi-select with "All").
type Variable struct {
	// Name is how queries refer to it ($Name).
	Name  string
	Label string
	// Query is a Grafana Prometheus variable query, e.g. label_values(pilot_xds, job).
	Query       string
	Description string
}

// Spec declares a dashboard. Every dashboard also gets a Prometheus datasource variable named
// datasource that every panel uses.
type Spec struct {
	// UID is Grafana's stable id (also the file name of the rendered JSON).
	UID         string
	Title       string
	Description string
	Tags        []string
	Variables   []Variable
	Rows        []Row
}

// Panels returns every panel of every row, in order.
func (s Spec) Panels() []Panel {
	var out []Panel
	for _, r := range s.Rows {
		out = append(out, r.Panels...)
	}
	return out
}

// Validate reports every panel that lacks what an operator needs to read it: a title, a
// description, a unit, a query; and queries that ignore the dashboard's job variable.
func (s Spec) Validate() error {
	var errs []error
	if s.UID == "" || s.Title == "" {
		errs = append(errs, fmt.Errorf("dashboard %q: UID and Title are required", s.Title))
	}
	vars := map[string]bool{}
	for _, v := range s.Variables {
		if v.Name == "" || v.Query == "" {
			errs = append(errs, fmt.Errorf("dashboard %s: variable %q needs a name and a query", s.UID, v.Name))
		}
		vars[v.Name] = true
	}
	titles := map[string]bool{}
	for _, r := range s.Rows {
		if r.Title == "" {
			errs = append(errs, fmt.Errorf("dashboard %s: a row has no title", s.UID))
		}
		for _, p := range r.Panels {
			where := fmt.Sprintf("dashboard %s, row %q, panel %q", s.UID, r.Title, p.Title)
			switch {
			case p.Title == "":
				errs = append(errs, fmt.Errorf("%s: give the panel a title", where))
			case titles[p.Title]:
				errs = append(errs, fmt.Errorf("%s: two panels share this title", where))
			}
			titles[p.Title] = true
			if strings.TrimSpace(p.Description) == "" {
				errs = append(errs, fmt.Errorf("%s: add a description saying what the panel tells an operator", where))
			}
			if p.Unit == "" {
				errs = append(errs, fmt.Errorf("%s: set a unit (s, bytes, ops, percentunit, short, …)", where))
			}
			if p.Width > 24 {
				errs = append(errs, fmt.Errorf("%s: width %d exceeds the 24-column grid", where, p.Width))
			}
			if len(p.Queries) == 0 {
				errs = append(errs, fmt.Errorf("%s: add at least one query", where))
			}
			for _, q := range p.Queries {
				if strings.TrimSpace(q.Expr) == "" {
					errs = append(errs, fmt.Errorf("%s: empty query", where))
					continue
				}
				if q.Heatmap != (p.Kind == Heatmap) {
					errs = append(errs, fmt.Errorf("%s: query %q: heatmap queries belong in heatmap panels and only there", where, q.Expr))
				}
				used := false
				for name := range vars {
					if strings.Contains(q.Expr, "$"+name) {
						used = true
					}
				}
				if !used {
					errs = append(errs, fmt.Errorf("%s: query %q selects no job: add {job=~\"$job\"}", where, q.Expr))
				}
			}
		}
	}
	return errors.Join(errs...)
}
