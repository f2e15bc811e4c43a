package model

import (
	"cmp"
	"strings"

	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

// Visibility as istiod decides it, as pure functions of config and proxy: which Sidecar
// applies to a proxy, and which services a namespace may see through exportTo and a Sidecar's
// egress hosts. Nothing here builds resources; generators and the push filter use these.

// ExportedTo reports whether an object of namespace objNS with the given exportTo list is
// visible from namespace from, as istiod reads exportTo: an empty list exports everywhere
// (istiod's default, meshConfig.defaultServiceExportTo "*"), "*" everywhere, "." to the
// object's own namespace, "~" nowhere, any other entry to the namespace it names.
func ExportedTo(exportTo []string, objNS, from string) bool {
	if len(exportTo) == 0 {
		return true
	}
	for _, e := range exportTo {
		switch e {
		case "*":
			return true
		case ".":
			if from == objNS {
				return true
			}
		case "~":
		default:
			if e == from {
				return true
			}
		}
	}
	return false
}

// SelectSidecar returns the Sidecar that applies to a proxy in namespace ns with the given
// labels, as istiod picks it: among the Sidecars of the proxy's namespace, the oldest (by
// creation time, then name) whose workloadSelector matches the labels; else the oldest of
// that namespace without a selector; else the oldest without a selector in rootNS (istiod's
// root namespace, usually istio-system). nil when none applies: the proxy sees the whole
// mesh. Entries that are not Sidecars are ignored.
func SelectSidecar(sidecars []*istioconfig.Config, ns string, labels map[string]string, rootNS string) *istioconfig.Config {
	var selected, nsDefault, rootDefault *istioconfig.Config
	older := func(a, b *istioconfig.Config) bool {
		if b == nil {
			return true
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
			return c < 0
		}
		return cmp.Less(a.Name, b.Name)
	}
	for _, c := range sidecars {
		sc, ok := c.Spec.(*networking.Sidecar)
		if !ok || c.Kind != istioconfig.KindSidecar {
			continue
		}
		sel := sc.GetWorkloadSelector().GetLabels()
		switch {
		case c.Namespace == ns && len(sel) > 0:
			if LabelsMatch(sel, labels) && older(c, selected) {
				selected = c
			}
		case c.Namespace == ns:
			if older(c, nsDefault) {
				nsDefault = c
			}
		case c.Namespace == rootNS && len(sel) == 0:
			if older(c, rootDefault) {
				rootDefault = c
			}
		}
	}
	switch {
	case selected != nil:
		return selected
	case nsDefault != nil:
		return nsDefault
	}
	return rootDefault
}

// EgressHost is one parsed Sidecar egress host "namespace/dnsName", or an exclusion
// "~namespace/dnsName".
type EgressHost struct {
	// Namespace is a namespace name or "*" (any).
	Namespace string
	// Host is "*", a host name, or a wildcard suffix such as "*.example.com".
	Host string
	// Exclude marks a "~"-prefixed entry: it imports nothing, and the services it matches are
	// not imported through its egress listener by the listener's other entries (istiod's
	// excluded hosts; "~/h" excludes h in every namespace, so "~/*" alone imports nothing).
	Exclude bool
	// Port is the egress listener's port when it narrows what the entry imports to that port
	// of each service (istiod: a port whose protocol is not HTTP_PROXY), else 0 (every port).
	Port uint32
}

// EgressPort is the port an egress listener narrows its imports to: its port, unless none is
// set or its protocol is HTTP_PROXY (an HTTP proxy port imports every port), then 0.
func EgressPort(l *networking.IstioEgressListener) uint32 {
	if strings.EqualFold(l.GetPort().GetProtocol(), "HTTP_PROXY") {
		return 0
	}
	return l.GetPort().GetNumber()
}

// ParseEgressHost reads an egress host of a Sidecar in namespace sidecarNS: "./h" is h in
// sidecarNS, "*/h" is h in any namespace; a "~" before the namespace makes it an exclusion
// ("~/h" and "~*/h" of h in any namespace, "~./h" in sidecarNS). ok is false for a value
// without a slash (validation rejects those).
func ParseEgressHost(s, sidecarNS string) (EgressHost, bool) {
	ns, host, ok := strings.Cut(s, "/")
	if !ok || host == "" {
		return EgressHost{}, false
	}
	ns, exclude := strings.CutPrefix(ns, "~")
	switch {
	case ns == ".":
		ns = sidecarNS
	case ns == "" && exclude:
		ns = "*"
	}
	return EgressHost{Namespace: ns, Host: host, Exclude: exclude}, true
}

// Matches reports whether the entry names a service with the given host name in namespace
// svcNS (to import it, or for an exclusion to exclude it). A wildcard host matches names that
// end in its suffix ("*.example.com" matches a.example.com, not example.com); "*" matches
// every name.
func (e EgressHost) Matches(hostname, svcNS string) bool {
	if e.Namespace == "" || (e.Namespace != "*" && e.Namespace != svcNS) {
		return false
	}
	return HostMatches(e.Host, hostname)
}

// egressImports reports whether the hosts of one egress listener import a service (host name
// hostname in namespace ns; port 0 for any port): an entry that is not an exclusion matches
// it (with its port, when port is given) and no exclusion of the listener does.
func egressImports(hosts []EgressHost, hostname, ns string, port uint32) bool {
	imported := false
	for _, e := range hosts {
		if !e.Matches(hostname, ns) {
			continue
		}
		if e.Exclude {
			return false
		}
		imported = imported || port == 0 || e.Port == 0 || e.Port == port
	}
	return imported
}

// HostMatches reports whether pattern ("*", "*.suffix", "*suffix" or an exact name) matches
// the host name, case-insensitively as DNS names compare.
func HostMatches(pattern, hostname string) bool {
	if pattern == "*" {
		return true
	}
	pattern, hostname = strings.ToLower(pattern), strings.ToLower(hostname)
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		return len(hostname) > len(suffix) && strings.HasSuffix(hostname, suffix)
	}
	return pattern == hostname
}

// SidecarEgress is the Sidecar's egress listeners as istiod reads them: one catch-all
// listener of hosts "*/*" (every namespace) when it lists none, as a Sidecar with only ingress
// listeners or an inboundConnectionPool does.
func SidecarEgress(sc *networking.Sidecar) []*networking.IstioEgressListener {
	if eg := sc.GetEgress(); len(eg) > 0 {
		return eg
	}
	return defaultEgress
}

var defaultEgress = []*networking.IstioEgressListener{{Hosts: []string{"*/*"}}}

// SidecarImports reports whether a proxy using Sidecar sc (in namespace sidecarNS) sees a
// service with the given host name, namespace and exportTo: the service must be exported to
// the Sidecar's namespace, and some egress listener must import it (egressImports). A nil
// Sidecar imports every service exported to sidecarNS.
func SidecarImports(sc *networking.Sidecar, sidecarNS, hostname, svcNS string, svcExportTo []string) bool {
	if !ExportedTo(svcExportTo, svcNS, sidecarNS) {
		return false
	}
	if sc == nil {
		return true
	}
	for _, eg := range SidecarEgress(sc) {
		var hosts []EgressHost
		for _, h := range eg.GetHosts() {
			if e, ok := ParseEgressHost(h, sidecarNS); ok {
				hosts = append(hosts, e)
			}
		}
		if egressImports(hosts, hostname, svcNS, 0) {
			return true
		}
	}
	return false
}
