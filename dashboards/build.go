package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// DatasourceVariable is the name of the Prometheus datasource variable every dashboard has.
const DatasourceVariable = "datasource"

// panelHeight is the height of every panel in grid rows.
const panelHeight = 8

// All returns every dashboard, in a stable order.
func All() []Spec { return []Spec{ControlPlane(), Lab()} }

// Build validates s and renders it as a Grafana dashboard.
func Build(s Spec) (dashboard.Dashboard, error) {
	if err := s.Validate(); err != nil {
		return dashboard.Dashboard{}, err
	}
	ds := common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + DatasourceVariable + "}")}
	b := dashboard.NewDashboardBuilder(s.Title).
		Uid(s.UID).
		Description(s.Description).
		Tags(s.Tags).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("10s").
		Time("now-30m", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder(DatasourceVariable).
			Label("Data source").
			Description("The Prometheus server scraping the control plane and the lab.").
			Type("prometheus"))
	for _, v := range s.Variables {
		b.WithVariable(dashboard.NewQueryVariableBuilder(v.Name).
			Label(v.Label).
			Description(v.Description).
			Query(dashboard.StringOrMap{String: cog.ToPtr(v.Query)}).
			Datasource(ds).
			Multi(true).
			IncludeAll(true).
			AllValue(".*").
			Current(dashboard.VariableOption{
				Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
				Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")},
			}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc))
	}
	// Stable ids (Grafana keys links and the panel editor by them): rows and panels numbered
	// in order from 1.
	id := uint32(0)
	for _, r := range s.Rows {
		id++
		b.WithRow(dashboard.NewRowBuilder(r.Title).Id(id))
		for _, p := range r.Panels {
			id++
			b.WithPanel(panel(p, id, ds))
		}
	}
	d, err := b.Build()
	if err != nil {
		return dashboard.Dashboard{}, fmt.Errorf("dashboard %s: %w", s.UID, err)
	}
	return d, nil
}

// JSON renders s as indented Grafana dashboard JSON, ending in a newline.
func JSON(s Spec) ([]byte, error) {
	d, err := Build(s)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <, > and & readable in descriptions and PromQL
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", s.UID, err)
	}
	return buf.Bytes(), nil
}

func targets(p Panel, ds common.DataSourceRef) []cog.Builder[variants.Dataquery] {
	var out []cog.Builder[variants.Dataquery]
	for i, q := range p.Queries {
		t := prometheus.NewDataqueryBuilder().
			Datasource(ds).
			RefId(string(rune('A' + i))).
			Expr(q.Expr).
			LegendFormat(q.Legend).
			Range()
		if q.Heatmap {
			t.Format(prometheus.PromQueryFormatHeatmap)
		}
		out = append(out, t)
	}
	return out
}

func panel(p Panel, id uint32, ds common.DataSourceRef) cog.Builder[dashboard.Panel] {
	w := p.Width
	if w == 0 {
		w = 12
	}
	switch p.Kind {
	case Heatmap:
		return heatmap.NewPanelBuilder().
			Id(id).Title(p.Title).Description(p.Description).Datasource(ds).
			Span(w).Height(panelHeight).
			Unit(p.Unit).
			Targets(targets(p, ds)).
			Calculate(false).
			YAxis(heatmap.NewYAxisConfigBuilder().Unit(p.Unit)).
			Color(heatmap.NewHeatmapColorOptionsBuilder().
				Mode(heatmap.HeatmapColorModeScheme).
				Scheme("Spectral").
				Scale(heatmap.HeatmapColorScaleExponential).
				Exponent(0.5).
				Steps(64)).
			CellValues(heatmap.NewCellValuesBuilder().Unit("short")).
			Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true)).
			ShowLegend()
	case Stat:
		sb := stat.NewPanelBuilder().
			Id(id).Title(p.Title).Description(p.Description).Datasource(ds).
			Span(w).Height(panelHeight).
			Unit(p.Unit).
			Targets(targets(p, ds)).
			GraphMode(common.BigValueGraphModeArea)
		if p.Min != nil {
			sb.Min(*p.Min)
		}
		return sb
	default:
		tb := timeseries.NewPanelBuilder().
			Id(id).Title(p.Title).Description(p.Description).Datasource(ds).
			Span(w).Height(panelHeight).
			Unit(p.Unit).
			Targets(targets(p, ds)).
			LineWidth(1).
			FillOpacity(10).
			ShowPoints(common.VisibilityModeNever).
			Legend(common.NewVizLegendOptionsBuilder().
				DisplayMode(common.LegendDisplayModeList).
				Placement(common.LegendPlacementBottom).
				ShowLegend(true)).
			Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
		if p.Min != nil {
			tb.Min(*p.Min)
		}
		return tb
	}
}
