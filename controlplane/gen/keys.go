package gen

import (
	"strings"

	"github.com/xdslab/xdslab/controlplane/model"
)

// KeyScope names the proxy attributes the generator of typeURL reads, apart from the proxy's own
// IP: two proxies with the same scope get identical resources from the same snapshot, so the
// ADS server's cache shares marshalled bytes among them (it adds the IP itself for a sidecar that
// is an endpoint, whose inbound clusters and listeners are its own). EDS does not depend on the
// proxy at all (scope ""); CDS and LDS depend only on the generator family; RDS also on the
// proxy's namespace and labels. Routers have their own class (routerKeyScope), so sidecar bytes
// are never served to a router nor the other way round.
func KeyScope(typeURL string, p *model.Proxy) string {
	if p != nil && p.Type == model.Router && !p.IsGRPC() {
		return routerKeyScope(typeURL, p)
	}
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
