package fakeenvoy

import (
	"sort"
	"time"

	"github.com/xdslab/xdslab/internal/summary"
	"github.com/xdslab/xdslab/probe"
)

// groupObservers splits the fleet's observations by client group: one Observer per group,
// fed by the same hooks as the fleet's own (which keeps the totals). It is built only for a
// fleet of several groups; with one, the group's figures are the fleet's. The map is read-only
// once the fleet is built.
type groupObservers map[string]*Observer

var (
	_ Hooks       = groupObservers(nil)
	_ BacklogHook = groupObservers(nil)
)

func newGroupObservers(cfg FleetConfig) groupObservers {
	if len(cfg.Groups) < 2 {
		return nil
	}
	g := make(groupObservers, len(cfg.Groups))
	for _, gr := range cfg.Groups {
		if g[gr.Name] == nil {
			g[gr.Name] = NewObserver(cfg.Observer)
		}
	}
	return g
}

func (g groupObservers) of(c *Client) *Observer { return g[c.Group()] }

func (g groupObservers) started(group string, index int, due, at time.Time) {
	if o := g[group]; o != nil {
		o.Started(index, due, at)
	}
}

// Connected implements Hooks.
func (g groupObservers) Connected(c *Client, at time.Time, attempt int) {
	if o := g.of(c); o != nil {
		o.Connected(c, at, attempt)
	}
}

// Disconnected implements Hooks.
func (g groupObservers) Disconnected(c *Client, at time.Time, err error) {
	if o := g.of(c); o != nil {
		o.Disconnected(c, at, err)
	}
}

// ConnectFailed implements Hooks.
func (g groupObservers) ConnectFailed(c *Client, at time.Time, err error) {
	if o := g.of(c); o != nil {
		o.ConnectFailed(c, at, err)
	}
}

// Response implements Hooks.
func (g groupObservers) Response(c *Client, r ResponseInfo) {
	if o := g.of(c); o != nil {
		o.Response(c, r)
	}
}

// Applied implements Hooks.
func (g groupObservers) Applied(*Client, ResponseInfo, probe.View) {}

// AckSent implements Hooks.
func (g groupObservers) AckSent(c *Client, r ResponseInfo, at time.Time) {
	if o := g.of(c); o != nil {
		o.AckSent(c, r, at)
	}
}

// WarmingTimeout implements Hooks.
func (g groupObservers) WarmingTimeout(c *Client, typeURL string, at time.Time) {
	if o := g.of(c); o != nil {
		o.WarmingTimeout(c, typeURL, at)
	}
}

// FirstFullConfig implements Hooks.
func (g groupObservers) FirstFullConfig(c *Client, at time.Time) {
	if o := g.of(c); o != nil {
		o.FirstFullConfig(c, at)
	}
}

// ReceiveBacklog implements BacklogHook.
func (g groupObservers) ReceiveBacklog(c *Client, d time.Duration) {
	if o := g.of(c); o != nil {
		o.ReceiveBacklog(c, d)
	}
}

// groupStats returns each group's observer stats, by group name: the fleet's own for a fleet
// of one group.
func (f *Fleet) groupStats() map[string]FleetStats {
	out := map[string]FleetStats{}
	if len(f.cfg.Groups) == 1 {
		out[f.cfg.Groups[0].Name] = f.obs.Stats()
		return out
	}
	for name, o := range f.groups {
		out[name] = o.Stats()
	}
	return out
}

// groupMetrics is every fleet figure of every group, tagged {group: name}: the full-config and
// client gauges (not the connected gauge: its value is sampled before the fleet stops, which
// only the fleet-wide gauge does), the connect and per-type counters (over the group's types),
// the reconnect counter, and the time-to-first-config, ACK delay, start lateness and receive backlog trends.
func (f *Fleet) groupMetrics(dur time.Duration) ([]summary.Metric, error) {
	stats := f.groupStats()
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	counts := map[string]int{}
	for _, g := range f.cfg.Groups {
		counts[g.Name] += g.Count
	}
	var out []summary.Metric
	for _, name := range names {
		st := stats[name]
		tags := map[string]string{"group": name}
		out = append(out,
			summary.NewGauge(MetricFullConfigClients, summary.Default, float64(st.FullConfig), 0, float64(st.FullConfig), tags),
			summary.NewGauge(MetricClients, summary.Default, float64(counts[name]), 0, float64(counts[name]), tags),
			summary.NewCounter(MetricConnects, summary.Default, float64(st.Connects), dur, tags),
			summary.NewCounter(MetricReconnects, summary.Default, float64(st.Reconnects), dur, tags),
			summary.NewCounter(MetricConnectFailures, summary.Default, float64(st.ConnectFailuresTotal()), dur, tags),
		)
		for _, tc := range typeCounters {
			out = append(out, summary.NewCounter(tc.name, tc.contains, float64(tc.get(st.Total)), dur, tags))
		}
		tr, err := trends(st)
		if err != nil {
			return nil, err
		}
		for _, m := range tr {
			m.Tags = tags
			out = append(out, m)
		}
	}
	return out, nil
}
