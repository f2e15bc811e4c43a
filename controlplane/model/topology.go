package model

import "strings"

// Topology labels: istiod adds them to a proxy's labels (after its workload's, before any
// selector reads them), and its registries to their workloads' labels.
const (
	LabelCluster  = "topology.istio.io/cluster"
	LabelRegion   = "topology.kubernetes.io/region"
	LabelZone     = "topology.kubernetes.io/zone"
	LabelSubzone  = "topology.istio.io/subzone"
	LabelNetwork  = "topology.istio.io/network"
	LabelHostname = "kubernetes.io/hostname"
	// LabelLocality ("region/zone/subzone") overrides a workload's locality; istio-locality
	// (LegacyLocalityLabel) is its older name, read when it is absent.
	LabelLocality       = "topology.istio.io/locality"
	LegacyLocalityLabel = "istio-locality"
)

// RegistryClusterID is the cluster id of xdslab's registries, istiod's default (its
// CLUSTER_ID): istiod labels their workloads with it, and looks for a proxy's workload only in
// the registries of the proxy's CLUSTER_ID when it sends one.
const RegistryClusterID = "Kubernetes"

// topoLabels is a small ordered set of labels, at most one per topology label key.
type topoLabels struct {
	n  int
	kv [6][2]string
}

func (t *topoLabels) set(k, v string) {
	for i := range t.n {
		if t.kv[i][0] == k {
			t.kv[i][1] = v
			return
		}
	}
	t.kv[t.n] = [2]string{k, v}
	t.n++
}

func (t *topoLabels) get(k string) (string, bool) {
	for i := range t.n {
		if t.kv[i][0] == k {
			return t.kv[i][1], true
		}
	}
	return "", false
}

// labelLayers are a proxy's labels as istiod builds them, without building the map: under
// (the node's STATIC_LABELS when a workload is found), over them over (the workload's labels,
// else the node's LABELS), over both top (the topology labels).
type labelLayers struct {
	under, over map[string]string
	top         topoLabels
}

func (l *labelLayers) get(k string) (string, bool) {
	if v, ok := l.top.get(k); ok {
		return v, true
	}
	if v, ok := l.over[k]; ok {
		return v, true
	}
	v, ok := l.under[k]
	return v, ok
}

// addLocality sets the region, zone and subzone labels of loc's non-empty parts.
func (t *topoLabels) addLocality(loc Locality) {
	if loc.Region != "" {
		t.set(LabelRegion, loc.Region)
	}
	if loc.Zone != "" {
		t.set(LabelZone, loc.Zone)
	}
	if loc.SubZone != "" {
		t.set(LabelSubzone, loc.SubZone)
	}
}

// addRegistry adds what istiod's registry adds to the labels of ep, the proxy's workload
// (kube: a Pod's endpoint): the registry's cluster and the workload's locality (a
// ServiceEntry workload without one takes its locality label's, "." read as "/" when it has
// no "/"; a Pod's is already its label's, else its Node's).
func (l *labelLayers) addRegistry(ep *Endpoint, kube bool) {
	loc := ep.Locality
	if !kube && loc == (Locality{}) {
		loc, _ = LocalityFromLabel(ep.Labels)
	}
	l.top.addLocality(loc)
	l.top.set(LabelCluster, RegistryClusterID)
}

// addProxy adds what istiod adds to every proxy's labels once its workload's are in place
// (its setTopologyLabels), and returns the proxy's locality: the region, zone and subzone
// labels when one is present, else the locality label's, else the node's (nodeLoc). The labels
// of that locality are set as istiod writes it out ("region/zone/subzone", cut after the
// last non-empty part but the region: a subzone without a zone is lost), then the cluster from
// CLUSTER_ID, the hostname from NODE_NAME and, when no label names one, the network from
// NETWORK.
func (l *labelLayers) addProxy(p *Proxy, nodeLoc Locality) Locality {
	r, okR := l.get(LabelRegion)
	z, okZ := l.get(LabelZone)
	sz, okS := l.get(LabelSubzone)
	loc := nodeLoc
	switch {
	case okR || okZ || okS:
		loc = Locality{Region: r, Zone: z, SubZone: sz}
	default:
		if v := localityLabel(l.get); v != "" {
			loc = splitLocality(v)
		}
	}
	if loc.Region != "" {
		l.top.set(LabelRegion, loc.Region)
	}
	if loc.Zone != "" {
		l.top.set(LabelZone, loc.Zone)
		if loc.SubZone != "" {
			l.top.set(LabelSubzone, loc.SubZone)
		}
	}
	if p.ClusterID != "" {
		l.top.set(LabelCluster, p.ClusterID)
	}
	if p.NodeName != "" {
		l.top.set(LabelHostname, p.NodeName)
	}
	if p.Network != "" {
		if v, _ := l.get(LabelNetwork); v == "" {
			l.top.set(LabelNetwork, p.Network)
		}
	}
	return loc
}

// localityLabel is the value of topology.istio.io/locality when present (even empty), else
// of istio-locality.
func localityLabel(get func(string) (string, bool)) string {
	if v, ok := get(LabelLocality); ok {
		return v
	}
	v, _ := get(LegacyLocalityLabel)
	return v
}

// splitLocality splits "region/zone/subzone" (parts beyond the third ignored).
func splitLocality(v string) Locality {
	parts := strings.SplitN(v, "/", 4)
	var loc Locality
	loc.Region = parts[0]
	if len(parts) > 1 {
		loc.Zone = parts[1]
	}
	if len(parts) > 2 {
		loc.SubZone = parts[2]
	}
	return loc
}

// same reports whether have equals the layered labels (nil and empty are the same).
func (l *labelLayers) same(have map[string]string) bool {
	n := len(l.over)
	for k, v := range l.under {
		if _, ok := l.over[k]; ok {
			continue
		}
		n++
		if _, ok := l.top.get(k); ok {
			continue
		}
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	for k, v := range l.over {
		if _, ok := l.top.get(k); ok {
			continue
		}
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	for i := range l.top.n {
		k, v := l.top.kv[i][0], l.top.kv[i][1]
		_, inOver := l.over[k]
		_, inUnder := l.under[k]
		if !inOver && !inUnder {
			n++
		}
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return n == len(have)
}

// build returns the layered labels as one map.
func (l *labelLayers) build() map[string]string {
	out := make(map[string]string, len(l.under)+len(l.over)+l.top.n)
	for k, v := range l.under {
		out[k] = v
	}
	for k, v := range l.over {
		out[k] = v
	}
	for i := range l.top.n {
		out[l.top.kv[i][0]] = l.top.kv[i][1]
	}
	return out
}

// RegistryLabels returns a workload's labels with the topology labels istiod's registries add
// to them (its AugmentLabels): the region, zone and subzone of its locality, the registry's
// cluster (RegistryClusterID), its node (hostname, "" for none) and its network when no label
// names one. labels is not modified.
func RegistryLabels(labels map[string]string, loc Locality, hostname, network string) map[string]string {
	var t topoLabels
	t.addLocality(loc)
	t.set(LabelCluster, RegistryClusterID)
	if hostname != "" {
		t.set(LabelHostname, hostname)
	}
	if network != "" && labels[LabelNetwork] == "" {
		t.set(LabelNetwork, network)
	}
	l := labelLayers{over: labels, top: t}
	return l.build()
}

// LocalityFromLabel is the locality a workload's locality label gives it (LabelLocality, else
// LegacyLocalityLabel; "." read as "/" when the value has no "/"), and whether it has one.
func LocalityFromLabel(labels map[string]string) (Locality, bool) {
	v := localityLabel(func(k string) (string, bool) { v, ok := labels[k]; return v, ok })
	if v == "" {
		return Locality{}, false
	}
	if !strings.Contains(v, "/") {
		v = strings.ReplaceAll(v, ".", "/")
	}
	return splitLocality(v), true
}
