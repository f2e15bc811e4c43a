package gen

import (
	"net"
	"net/netip"
	"strings"

	"github.com/xdslab/xdslab/controlplane/model"
)

// cidrDomains are the virtual host domains istiod lists for the addresses of a service that are
// CIDRs (a ServiceEntry's, not one IP: a /32 is that IP, a VIP), when it has no IP address: the
// CIDR as written, and with the route configuration's port (generateVirtualHostDomains lists a
// service's addresses whatever they are). An IPv6 CIDR is bracketed, as istiod writes it.
// A service with several addresses is one of the gaps docs/parity.md lists.
func cidrDomains(svc *model.Service, port string) []string {
	if len(ipAddresses(svc.Addresses)) > 0 {
		return nil
	}
	var out []string
	for _, a := range svc.Addresses {
		p, err := netip.ParsePrefix(a)
		if err != nil || p.IsSingleIP() {
			continue
		}
		d := a
		if strings.Contains(a, ":") {
			d = "[" + a + "]"
		}
		out = append(out, d, net.JoinHostPort(a, port))
	}
	return out
}
