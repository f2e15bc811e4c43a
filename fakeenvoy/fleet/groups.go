package fleet

import (
	"time"

	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/probe"
)

// groupObservers splits the fleet's observations by client group: one Observer per group,
// fed by the same hooks as the fleet's own (which keeps the totals). It is built only for a
// fleet of several groups; with one, the group's figures are the fleet's. The map is read-only
// once the fleet is built.
type groupObservers map[string]*measure.Observer

var (
	_ probe.Hooks       = groupObservers(nil)
	_ probe.BacklogHook = groupObservers(nil)
)

func newGroupObservers(cfg Config) groupObservers {
	if len(cfg.Groups) < 2 {
		return nil
	}
	g := make(groupObservers, len(cfg.Groups))
	for _, gr := range cfg.Groups {
		if g[gr.Name] == nil {
			g[gr.Name] = measure.NewObserver(cfg.Observer)
		}
	}
	return g
}

func (g groupObservers) of(c probe.ClientInfo) *measure.Observer { return g[c.Group] }

func (g groupObservers) started(group string, index int, due, at time.Time) {
	if o := g[group]; o != nil {
		o.Started(index, due, at)
	}
}

// Connected implements probe.Hooks.
func (g groupObservers) Connected(c probe.ClientInfo, at time.Time, attempt int) {
	if o := g.of(c); o != nil {
		o.Connected(c, at, attempt)
	}
}

// Disconnected implements probe.Hooks.
func (g groupObservers) Disconnected(c probe.ClientInfo, at time.Time, err error) {
	if o := g.of(c); o != nil {
		o.Disconnected(c, at, err)
	}
}

// ConnectFailed implements probe.Hooks.
func (g groupObservers) ConnectFailed(c probe.ClientInfo, at time.Time, err error) {
	if o := g.of(c); o != nil {
		o.ConnectFailed(c, at, err)
	}
}

// Response implements probe.Hooks.
func (g groupObservers) Response(c probe.ClientInfo, r probe.ResponseInfo) {
	if o := g.of(c); o != nil {
		o.Response(c, r)
	}
}

// Applied implements probe.Hooks.
func (g groupObservers) Applied(probe.ClientInfo, probe.ResponseInfo, probe.View) {}

// AckSent implements probe.Hooks.
func (g groupObservers) AckSent(c probe.ClientInfo, r probe.ResponseInfo, at time.Time) {
	if o := g.of(c); o != nil {
		o.AckSent(c, r, at)
	}
}

// WarmingTimeout implements probe.Hooks.
func (g groupObservers) WarmingTimeout(c probe.ClientInfo, typeURL string, at time.Time) {
	if o := g.of(c); o != nil {
		o.WarmingTimeout(c, typeURL, at)
	}
}

// FirstFullConfig implements probe.Hooks.
func (g groupObservers) FirstFullConfig(c probe.ClientInfo, at time.Time) {
	if o := g.of(c); o != nil {
		o.FirstFullConfig(c, at)
	}
}

// ReceiveBacklog implements probe.BacklogHook.
func (g groupObservers) ReceiveBacklog(c probe.ClientInfo, d time.Duration) {
	if o := g.of(c); o != nil {
		o.ReceiveBacklog(c, d)
	}
}

// groupStats returns each group's observer stats, by group name: the fleet's own for a fleet
// of one group.
func (f *Fleet) groupStats() map[string]measure.FleetStats {
	out := map[string]measure.FleetStats{}
	if len(f.cfg.Groups) == 1 {
		out[f.cfg.Groups[0].Name] = f.obs.Stats()
		return out
	}
	for name, o := range f.groups {
		out[name] = o.Stats()
	}
	return out
}
