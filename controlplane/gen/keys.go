package gen

import (
	"strings"

	"github.com/xdslab/xdslab/controlplane/model"
)

// KeyScope names the proxy attributes the generator of typeURL reads, apart from the proxy's own
// IP: two proxies with the same scope get identical resources from the same snapshot, so the
// ADS server's cache shares marshalled bytes among them (it adds the IP itself for a sidecar that
// is an endpoint, whose inbound clusters and listeners are its own). EDS does not depend on the
// proxy's attributes here (scope ""; its locality, where locality load balancing applies, is
// LocalityClass); CDS and LDS depend only on the generator family; RDS also on the
// proxy's namespace and labels; SDS on the proxy's verified identity. Routers have their own
// class (routerKeyScope), so sidecar bytes are never served to a router nor the other way round.
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
	case SecretType:
		// Secrets are the proxy's identity's own (and never cached: Cacheable).
		if p == nil {
			return "secret|"
		}
		return "secret|" + p.Identity
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

// ViewKey names the proxy's view of s that the generator of typeURL reads (model.Scope.Key:
// the Sidecar that applies and the namespace exportTo is checked against), "" when it reads
// none: a named EDS request is answered the same for every proxy, a wildcard one lists only
// the clusters the proxy sees. The ADS server adds it to KeyScope in its cache keys, so
// proxies with different views never share bytes and proxies with the same view do.
func ViewKey(typeURL string, p *model.Proxy, s *model.Snapshot, wildcard bool) string {
	if s == nil || (typeURL == EndpointType && !wildcard) {
		return ""
	}
	return s.ScopeFor(p).Key()
}
