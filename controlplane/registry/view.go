package registry

import (
	"slices"

	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/internal/cow"
	"github.com/xdslab/xdslab/istioconfig"
)

// View is the aggregate's state as of one change: every merged service with its endpoints, and
// the config store's objects as of that change (the store's own immutable version, not a copy;
// ServiceEntries and WorkloadEntries reach a View only as the services they define). A View
// never changes once published; the aggregate publishes a new one with each Change
// (Change.View) and Aggregate.View returns the latest. A write copies only the shards of hosts
// it touches (a 64th each), so a View per change costs little, and a reader needs no lock.
type View struct {
	hosts   cow.Map[string, entry]
	configs Configs // nil: none
}

// Configs is one immutable version of the config store's objects (config.Version implements
// it): what the aggregate's View serves as its config objects.
type Configs interface {
	Config(key istioconfig.Key) *istioconfig.Config
	Configs() []*istioconfig.Config
}

// viewed reports whether a config kind reaches snapshots as itself: every kind but the ones the
// aggregate turns into services.
func viewed(k istioconfig.Kind) bool {
	return k != istioconfig.KindServiceEntry && k != istioconfig.KindWorkloadEntry
}

var _ model.SnapshotSource = (*View)(nil)

// Services returns every merged service, in no order.
func (v *View) Services() []*model.Service {
	out := make([]*model.Service, 0, v.hosts.Len())
	v.hosts.Range(func(_ string, e entry) bool {
		out = append(out, e.svc)
		return true
	})
	return out
}

// Service returns the merged service of host, or nil.
func (v *View) Service(host string) *model.Service { e, _ := v.hosts.Get(host); return e.svc }

// Endpoints returns the merged endpoints of host, sorted. The slice must not be modified.
func (v *View) Endpoints(host string) []*model.Endpoint { e, _ := v.hosts.Get(host); return e.eps }

// ServiceCount is the number of merged services.
func (v *View) ServiceCount() int { return v.hosts.Len() }

// Configs returns every config object of the kinds snapshots carry, in no order.
func (v *View) Configs() []*istioconfig.Config {
	if v.configs == nil {
		return nil
	}
	all := v.configs.Configs()
	return slices.DeleteFunc(all, func(c *istioconfig.Config) bool { return !viewed(c.Kind) })
}

// Config returns the config object with the key, or nil (always for the kinds the aggregate
// turns into services).
func (v *View) Config(key istioconfig.Key) *istioconfig.Config {
	if v.configs == nil || !viewed(key.Kind) {
		return nil
	}
	return v.configs.Config(key)
}
