package kubeparity

// The differences from Istio that remain, each for a reason xdslab's kube registry cannot
// remove alone (docs/kubernetes.md, "Known differences from istiod").
var (
	// A headless Service: istiod gives each endpoint a listener for its TCP ports and
	// wildcard domains (*.hl.app…) for its HTTP ports; xdslab one 0.0.0.0 listener and the
	// plain names.
	headless = []knownDiff{
		{"listener 0.0.0.0_5432", "xdslab", "", "headless"},
		{"listener 10.1.1.1_5432", "istio", "", "headless"},
		{"listener 10.1.1.2_5432", "istio", "", "headless"},
		{"route 80", "istio", "vhost *.hl.app", "headless"},
		// Only when the view keys a virtual host by all its domains (which then differ).
		{"route 80", "xdslab", "vhost hl.app,hl.app.svc,hl.app.svc.cluster.local ", "headless, may not occur"},
	}
	// An address listed only by a slice without the service port: istiod leaves it out of
	// that port's cluster; model.Endpoint cannot say "does not serve this port", so xdslab
	// sends it with the service port number.
	portNotServed = []knownDiff{
		{"cluster outbound|80||split.app.svc.cluster.local", "istio", `locality_weight=1 endpoint:{address:{socket_address:{address:"10.1.5.1" port_value:8080}}}`, "ports"},
		{"cluster outbound|80||split.app.svc.cluster.local", "xdslab", `locality_weight=2 endpoint:{address:{socket_address:{address:"10.1.5.1" port_value:8080}}}`, "ports"},
		{"cluster outbound|80||split.app.svc.cluster.local", "xdslab", `address:"10.1.5.2" port_value:80}`, "ports"},
	}
)

// knownStatic are the differences from Istio that remain on the corpus files, by file.
var knownStatic = map[string][]knownDiff{
	"endpoints.yaml": headless,
	"protocols.yaml": portNotServed,
}
