package validate

import (
	"fmt"
	"strings"

	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

// analyzeGatewayRefs reports VirtualServices bound to a Gateway that no object defines
// (istioctl analyze's virtualservice/gateways analyzer, IST0101): their routes reach no router.
// References resolve as istiod resolves them: "namespace/name", legacy "name.namespace…", or a
// bare name in the VirtualService's namespace; "mesh" names the sidecars.
func analyzeGatewayRefs(cfgs []*istioconfig.Config) []Finding {
	gateways := map[string]bool{}
	for _, c := range cfgs {
		if _, ok := c.Spec.(*networking.Gateway); ok && c.Kind == istioconfig.KindGateway {
			gateways[c.Namespace+"/"+c.Name] = true
		}
	}
	var out []Finding
	for _, c := range cfgs {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok || c.Kind != istioconfig.KindVirtualService {
			continue
		}
		obj := fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Name)
		check := func(at Path, ref string) {
			key, ok := gatewayKey(ref, c.Namespace)
			if !ok || gateways[key] {
				return
			}
			out = append(out, Finding{Object: obj, Source: c.Source, Path: at.String(),
				Msg: fmt.Sprintf("gateway %q (%s) is not defined by any Gateway: these routes reach no router; create the Gateway or fix the reference (namespace/name)", ref, key)})
		}
		at := Path{"spec"}
		for i, g := range vs.GetGateways() {
			check(at.With("gateways", i), g)
		}
		for i, r := range vs.GetHttp() {
			for j, m := range r.GetMatch() {
				for k, g := range m.GetGateways() {
					check(at.With("http", i, "match", j, "gateways", k), g)
				}
			}
		}
	}
	return out
}

// gatewayKey resolves a gateway reference to "namespace/name"; ok is false for "mesh" and for
// references validation rejects.
func gatewayKey(ref, vsNS string) (string, bool) {
	if ref == "mesh" || ref == "" {
		return "", false
	}
	if ns, name, found := strings.Cut(ref, "/"); found {
		return ns + "/" + name, ns != "" && name != ""
	}
	if name, rest, found := strings.Cut(ref, "."); found {
		ns, _, _ := strings.Cut(rest, ".")
		return ns + "/" + name, ns != "" && name != ""
	}
	return vsNS + "/" + ref, true
}
