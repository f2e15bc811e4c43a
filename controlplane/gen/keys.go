package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/xdslab/xdslab/controlplane/model"
)

// CacheKey returns a key for the resource name of typeURL as ForType(typeURL, p) would build it
// from s. Two calls that return the same key with ok true build identical resources, whatever
// the proxy or snapshot, so a cache may store marshalled bytes under (typeURL, key) and share
// them across clients and snapshots. ok is false for resources that are specific to one proxy
// or cheap to build (inbound clusters, sidecar listeners): generate those. See KeyScope to share
// the keys themselves across proxies.
//
// Keys are built from the snapshot's generations (Snapshot.ServiceGen, EndpointGen) and from the
// identity of the config objects a resource reads: namespace/name@ResourceVersion, or
// @ConfigGen when a store leaves ResourceVersion empty (any config change then changes the key).
// A store must change ResourceVersion whenever it changes a spec.
func CacheKey(typeURL string, p *model.Proxy, s *model.Snapshot, name string) (key string, ok bool) {
	k := newKeyer(typeURL, p, s)
	return k.key(name)
}

// KeyScope names the proxy attributes CacheKey reads for typeURL: for two proxies with the same
// scope, CacheKey returns the same key for every name of the same snapshot, so a cache can compute
// keys once per (snapshot, typeURL, scope) and share them. EDS keys do not depend on the proxy at
// all (scope ""); CDS and LDS keys depend only on the generator family; RDS keys also on the
// proxy's namespace and labels.
func KeyScope(typeURL string, p *model.Proxy) string {
	fam := "sidecar"
	if p != nil && p.IsGRPC() {
		fam = "grpc"
	}
	switch typeURL {
	case EndpointType:
		return ""
	case RouteType:
		if p == nil {
			return fam
		}
		var b strings.Builder
		b.WriteString(fam + "|" + p.Namespace)
		for _, k := range sortedKeys(p.Labels) {
			b.WriteString("|" + k + "=" + p.Labels[k])
		}
		return b.String()
	}
	return fam
}

// CacheKeys is CacheKey for many names at once (sharing the lookups); "" marks a name that is not
// cacheable.
func CacheKeys(typeURL string, p *model.Proxy, s *model.Snapshot, names []string) []string {
	k := newKeyer(typeURL, p, s)
	out := make([]string, len(names))
	for i, n := range names {
		out[i], _ = k.key(n)
	}
	return out
}

type keyer struct {
	typeURL string
	p       *model.Proxy
	s       *model.Snapshot
	ix      *index
	grpc    bool
	byPort  map[uint32][]*model.Service
}

func newKeyer(typeURL string, p *model.Proxy, s *model.Snapshot) *keyer {
	return &keyer{typeURL: typeURL, p: p, s: s, ix: newIndex(s), grpc: p != nil && p.IsGRPC()}
}

func (k *keyer) family() string {
	if k.grpc {
		return "grpc"
	}
	return "sidecar"
}

func (k *keyer) configIdent(c *model.Config) string {
	if c == nil {
		return "-"
	}
	v := c.ResourceVersion
	if v == "" {
		v = "c" + strconv.FormatUint(k.s.ConfigGen(), 10)
	}
	return c.Namespace + "/" + c.Name + "@" + v
}

func itoa64(n uint64) string { return strconv.FormatUint(n, 10) }

func (k *keyer) key(name string) (string, bool) {
	switch k.typeURL {
	case EndpointType:
		return k.edsKey(name), true
	case ClusterType:
		return k.cdsKey(name)
	case ListenerType:
		if !k.grpc {
			return "", false
		}
		svc, _, ok := lookupHostPort(k.s, name)
		if !ok {
			return "L|grpc|" + name + "|missing", true
		}
		return "L|grpc|" + name + "|s" + itoa64(k.s.ServiceGen(svc.Hostname)), true
	case RouteType:
		return k.rdsKey(name), true
	}
	return "", false
}

func (k *keyer) edsKey(name string) string {
	cn, err := ParseClusterName(name)
	if err != nil || cn.Direction != Outbound {
		return "E|" + name + "|-"
	}
	svc := k.s.Service(cn.Host)
	if svc == nil {
		return "E|" + name + "|missing"
	}
	key := "E|" + name + "|s" + itoa64(k.s.ServiceGen(cn.Host)) + "|e" + itoa64(k.s.EndpointGen(cn.Host))
	if cn.Subset != "" {
		key += "|" + k.configIdent(k.ix.destinationRule(cn.Host))
	}
	return key
}

func (k *keyer) cdsKey(name string) (string, bool) {
	switch name {
	case BlackHoleCluster, PassthroughCluster, InboundPassthroughCluster:
		return "C|const|" + name, true
	}
	cn, err := ParseClusterName(name)
	if err != nil || cn.Direction != Outbound {
		return "", false
	}
	svc := k.s.Service(cn.Host)
	if svc == nil {
		return "C|" + k.family() + "|" + name + "|missing", true
	}
	key := "C|" + k.family() + "|" + name + "|s" + itoa64(k.s.ServiceGen(cn.Host)) + "|" + k.configIdent(k.ix.destinationRule(cn.Host))
	if svc.Resolution == model.ResolutionDNS {
		key += "|e" + itoa64(k.s.EndpointGen(cn.Host))
	}
	return key, true
}

// rdsKey covers what a route configuration reads: the services' definitions, the VSs applying
// to them, the destination services whose port list picks a port, and the proxy's namespace
// (short names, sourceNamespace) and, when some match uses sourceLabels, its labels.
func (k *keyer) rdsKey(name string) string {
	var svcs []*model.Service
	var num uint32
	if k.grpc {
		svc, port, ok := lookupHostPort(k.s, name)
		if !ok {
			return "R|grpc|" + name + "|missing"
		}
		svcs, num = []*model.Service{svc}, port.Number
	} else {
		n, err := parsePort(name)
		if err != nil {
			return "R|sidecar|" + name + "|missing"
		}
		if k.byPort == nil {
			k.byPort = httpServicesByPort(k.s)
		}
		svcs, num = k.byPort[n], n
		if len(svcs) == 0 {
			return "R|sidecar|" + name + "|missing"
		}
	}
	var b strings.Builder
	ns := ""
	if k.p != nil {
		ns = k.p.Namespace
	}
	b.WriteString(ns)
	b.WriteByte('|')
	b.WriteString(itoa64(uint64(num)))
	labels := false
	for _, svc := range svcs {
		b.WriteString("|" + svc.Hostname + "@" + itoa64(k.s.ServiceGen(svc.Hostname)))
		for _, c := range k.ix.virtualServices(svc.Hostname) {
			b.WriteString("|" + k.configIdent(c))
			for _, hr := range vsSpec(c).GetHttp() {
				for _, m := range hr.GetMatch() {
					labels = labels || len(m.GetSourceLabels()) > 0
				}
				for _, d := range hr.GetRoute() {
					h := resolveHost(d.GetDestination().GetHost(), c.Namespace)
					b.WriteString("|d" + h + "@" + itoa64(k.s.ServiceGen(h)))
				}
			}
		}
	}
	if labels && k.p != nil {
		for _, lk := range sortedKeys(k.p.Labels) {
			b.WriteString("|l" + lk + "=" + k.p.Labels[lk])
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "R|" + k.family() + "|" + name + "|" + hex.EncodeToString(sum[:16])
}

// DepsUnion merges the Deps of resources, sorted and unique: what a whole response depends on.
func DepsUnion(rs []Resource) []model.ConfigKey {
	var all []model.ConfigKey
	for _, r := range rs {
		all = append(all, r.Deps...)
	}
	return sortDeps(slices.Clip(all))
}
