package report

import (
	"fmt"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xdslab/xdslab/fakeenvoy/fleet"
	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/scenarios"
)

// FromSummary is the report of a run known only by its summary (a merged distributed run,
// whose fleet's observations live in its shards' processes): the plots are drawn from the
// summary's HDR histograms (push latency, overall and per event kind; convergence) and its
// per-event records (convergence over time, events over time); what a summary does not hold
// (each event's mean push latency, the control plane's push cycles over time) is left out of
// the plots. sc is the scenario the run is judged by (nil: the report names the run by its
// summary's labels, and shows the config it embeds).
func FromSummary(s *summary.Summary, sc *scenarios.Scenario, target string) (Run, error) {
	r := Run{Summary: s, Scenario: sc, Target: target}
	decode := func(name string, tags map[string]string) (*hdr.Histogram, error) {
		m, ok := s.Results.Find(name, tags)
		if !ok || m.Histogram == nil {
			return nil, nil
		}
		if m.Histogram.Scale != 1e-6 {
			// The plots read microseconds; every trend the lab records is.
			return nil, nil
		}
		h, err := m.Histogram.Decode()
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", m.Key(), err)
		}
		return h, nil
	}
	var err error
	if r.Matches.PushLatencyAll, err = decode(fleet.MetricPushLatency, nil); err != nil {
		return Run{}, err
	}
	if r.Matches.Convergence, err = decode(fleet.MetricConvergence, nil); err != nil {
		return Run{}, err
	}
	for _, m := range s.Results.Metrics {
		kind, ok := m.Tags["kind"]
		if m.Name != fleet.MetricPushLatency || !ok || len(m.Tags) != 1 {
			continue
		}
		h, err := decode(m.Name, m.Tags)
		if err != nil {
			return Run{}, err
		}
		if h != nil {
			if r.Matches.PushLatency == nil {
				r.Matches.PushLatency = map[string]*hdr.Histogram{}
			}
			r.Matches.PushLatency[kind] = h
		}
	}
	// The timeline counts from the measure phase's start (else the run's).
	r.MeasureStart = s.Metadata.Started
	for _, p := range s.Metadata.Phases {
		if p.Name == "measure" {
			r.MeasureStart = p.Start
			break
		}
	}
	for _, e := range s.Results.Events {
		if e.T0.IsZero() {
			continue
		}
		observed := e.Observed
		if e.PushLatencies > observed {
			observed = e.PushLatencies
		}
		r.Matches.Events = append(r.Matches.Events, measure.EventResult{EventID: e.ID, Kind: e.Kind, T0: e.T0,
			Reached: e.Reached, Observed: observed, AlreadyHeld: e.AlreadyHeld, Superseded: e.Superseded, Missed: e.Missed,
			Unresolved: e.Unresolved, Received: e.Received, EarlyReceives: e.EarlyReceives,
			Convergence: time.Duration(e.ConvergenceSeconds * float64(time.Second))})
	}
	// Events over time, in order of t0 (the records are in order of id).
	var t0s []time.Time
	for _, e := range r.Matches.Events {
		t0s = append(t0s, e.T0)
	}
	slices.SortFunc(t0s, time.Time.Compare)
	for i, t := range t0s {
		r.Timeline = append(r.Timeline, Point{At: t.Sub(r.MeasureStart), Events: int64(i + 1)})
	}
	return r, nil
}

// runName names a run in its report: its scenario's name, else its summary's label.
func runName(r Run) string {
	if r.Scenario != nil {
		return r.Scenario.Name
	}
	if n := r.Summary.Metadata.Labels["scenario"]; n != "" {
		return n
	}
	return "xdslab"
}
