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
)

// knownStatic are the differences from Istio that remain on the corpus files, by file.
var knownStatic = map[string][]knownDiff{
	"endpoints.yaml": headless,
}
