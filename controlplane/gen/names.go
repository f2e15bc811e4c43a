package gen

import (
	"slices"
	"strconv"

	"github.com/xdslab/xdslab/controlplane/model"
)

// Names lists, sorted, the resource names a wildcard request of typeURL returns for p from s,
// without building the resources, so that a cache can look each one up (CacheKey) and generate
// only the misses. Sidecar listeners are the exception: they are cheap and proxy-specific, so
// Names builds them.
func Names(typeURL string, p *model.Proxy, s *model.Snapshot) []string {
	if s == nil {
		return nil
	}
	if p == nil {
		p = &model.Proxy{}
	}
	var out []string
	switch typeURL {
	case ClusterType:
		ix := newIndex(s)
		for _, svc := range s.Services() {
			if p.IsGRPC() && svc.Resolution == model.ResolutionPassthrough {
				continue
			}
			var subsets []string
			if dr := ix.destinationRule(svc.Hostname); dr != nil {
				for _, ss := range drSpec(dr).GetSubsets() {
					if checkSubsetName(ss.GetName()) == nil && !slices.Contains(subsets, ss.GetName()) {
						subsets = append(subsets, ss.GetName())
					}
				}
			}
			for _, port := range svc.Ports {
				out = append(out, ClusterName(Outbound, port.Number, "", svc.Hostname))
				for _, ss := range subsets {
					out = append(out, ClusterName(Outbound, port.Number, ss, svc.Hostname))
				}
			}
		}
		if !p.IsGRPC() {
			ports, _ := inboundPorts(p, s)
			for _, ip := range ports {
				out = append(out, ClusterName(Inbound, ip.target, "", ""))
			}
			out = append(out, BlackHoleCluster, PassthroughCluster, InboundPassthroughCluster)
		}
	case EndpointType:
		return edsClusterNames(s, newIndex(s))
	case ListenerType:
		if !p.IsGRPC() {
			rs, _ := sidecarListeners(p, s, nil)
			for _, r := range rs {
				out = append(out, r.Name)
			}
			return out
		}
		for _, svc := range s.Services() {
			if svc.Resolution == model.ResolutionPassthrough {
				continue
			}
			for _, port := range svc.Ports {
				out = append(out, HostPortName(svc.Hostname, port.Number))
			}
		}
	case RouteType:
		if !p.IsGRPC() {
			for num := range httpServicesByPort(s) {
				out = append(out, strconv.FormatUint(uint64(num), 10))
			}
			break
		}
		for _, svc := range s.Services() {
			if svc.Resolution == model.ResolutionPassthrough {
				continue
			}
			for _, port := range svc.Ports {
				out = append(out, HostPortName(svc.Hostname, port.Number))
			}
		}
	default:
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}
