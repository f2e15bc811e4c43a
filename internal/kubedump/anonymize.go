package kubedump

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/xdslab/xdslab/scenarios"
)

// DefaultSalt keys the hashes when the user gives no salt. With it, anyone can hash a guessed
// name and compare; a salt of one's own (kept private) prevents that.
const DefaultSalt = "xdslab-import"

// keptNamespaces are Kubernetes' and Istio's own namespaces: their names say nothing about a
// cluster, and Istio gives istio-system meaning (the root namespace of mesh-wide config).
var keptNamespaces = []string{"default", "istio-system", "kube-system", "kube-public", "kube-node-lease"}

// keptLabelKeys keep their values: istio (gateway selectors the lab's routers carry:
// ingressgateway), version (subset names such as v1 say nothing and DestinationRules select
// on them) and Istio's own labels whose values are Istio's vocabulary (tlsMode istio drives
// auto-mTLS). Every other label value is hashed.
var keptLabelKeys = []string{"istio", "version", "security.istio.io/tlsMode", "istio.io/rev", "sidecar.istio.io/inject"}

// Anonymizer rewrites names, hosts, label values, localities and addresses with keyed hashes.
// It is deterministic: the same salt and input give the same output, and the same name gives
// the same hash wherever it appears, so references (hosts, subsets' labels, selectors,
// exportTo, Sidecar and Gateway host namespaces) still resolve.
type Anonymizer struct {
	salt []byte
	// names maps class:original → anonymized; taken detects collisions.
	names map[string]string
	taken map[string]string
}

// NewAnonymizer returns an anonymizer keyed with salt (DefaultSalt when empty).
func NewAnonymizer(salt string) *Anonymizer {
	if salt == "" {
		salt = DefaultSalt
	}
	return &Anonymizer{salt: []byte(salt), names: map[string]string{}, taken: map[string]string{}}
}

func (a *Anonymizer) mac(s string) []byte {
	m := hmac.New(sha256.New, a.salt)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// name maps a name of a class (ns, svc, sa, obj, label, host, loc) to prefix-HASH, 8 hex
// digits (more if two names would collide), a valid DNS label.
func (a *Anonymizer) name(class, prefix, s string) string {
	if s == "" {
		return s
	}
	key := class + ":" + s
	if out, ok := a.names[key]; ok {
		return out
	}
	sum := hex.EncodeToString(a.mac(key))
	for n := 8; n <= len(sum); n += 4 {
		out := prefix + "-" + sum[:n]
		if prev, clash := a.taken[class+":"+out]; !clash || prev == s {
			a.names[key] = out
			a.taken[class+":"+out] = s
			return out
		}
	}
	panic("kubedump: anonymizer: 256-bit hash collision") // unreachable in practice
}

// Namespace anonymizes a namespace name (Kubernetes' and Istio's own are kept).
func (a *Anonymizer) Namespace(ns string) string {
	if slices.Contains(keptNamespaces, ns) {
		return ns
	}
	return a.name("ns", "ns", ns)
}

// Service anonymizes a service (or host's first label) name.
func (a *Anonymizer) Service(s string) string { return a.name("svc", "svc", s) }

func (a *Anonymizer) object(s string) string  { return a.name("obj", "obj", s) }
func (a *Anonymizer) account(s string) string { return a.name("sa", "sa", s) }

func (a *Anonymizer) labelValue(k, v string) string {
	if slices.Contains(keptLabelKeys, k) || v == "" {
		return v
	}
	if k == "app" || k == "service.istio.io/canonical-name" || k == "app.kubernetes.io/name" {
		return a.Service(v) // usually the service's name: the same hash keeps them equal
	}
	return a.name("label", "v", v)
}

// Labels anonymizes label values (keys are kept: they name kinds of facts, not facts).
func (a *Anonymizer) Labels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = a.labelValue(k, v)
	}
	return out
}

// Locality anonymizes each part of region/zone/subzone; the structure (which zones share a
// region) is kept.
func (a *Anonymizer) Locality(l string) string {
	if l == "" {
		return l
	}
	parts := strings.Split(l, "/")
	prefixes := []string{"region", "zone", "subzone"}
	for i, p := range parts {
		if p != "" && i < len(prefixes) {
			parts[i] = a.name("loc"+prefixes[i], prefixes[i], strings.Join(parts[:i+1], "/"))
		}
	}
	return strings.Join(parts, "/")
}

// Host anonymizes a hostname as written in Istio config: NAME.NS.svc.cluster.local, NAME.NS
// and NAME (a short name, in the object's namespace) keep their shape with each part hashed;
// * and wildcard prefixes are kept; other names (external hosts) keep their top-level domain
// and get each other label hashed with its suffix (h-HASH.h-HASH.com), so suffixes shared
// before are shared after.
func (a *Anonymizer) Host(h string) string {
	if h == "" || h == "*" {
		return h
	}
	wild := strings.HasPrefix(h, "*.")
	rest := strings.TrimPrefix(h, "*.")
	if base, ok := strings.CutSuffix(rest, ".svc.cluster.local"); ok {
		labels := strings.Split(base, ".")
		if len(labels) == 1 { // *.NS.svc.cluster.local
			labels[0] = a.Namespace(labels[0])
		} else {
			labels[len(labels)-1] = a.Namespace(labels[len(labels)-1])
			for i := range labels[:len(labels)-1] {
				labels[i] = a.Service(labels[i])
			}
		}
		out := strings.Join(labels, ".") + ".svc.cluster.local"
		if wild {
			out = "*." + out
		}
		return out
	}
	if !wild && !strings.Contains(rest, ".") {
		return a.Service(rest) // a short name, in the object's namespace
	}
	if labels := strings.Split(rest, "."); !wild && len(labels) == 2 && a.isNamespace(labels[1]) {
		return a.Service(labels[0]) + "." + a.Namespace(labels[1]) // NAME.NS
	}
	// An external host: each label but the top-level domain hashed on its own, so that a
	// wildcard (*.example.com) still covers the hosts under it (api.example.com).
	labels := strings.Split(rest, ".")
	for i := range labels[:len(labels)-1] {
		labels[i] = a.name("dns", "h", strings.Join(labels[i:], "."))
	}
	out := strings.Join(labels, ".")
	if wild {
		out = "*." + out
	}
	return out
}

// isNamespace reports whether ns was seen as a namespace (so NAME.NS is a service, not an
// external two-label host such as example.com).
func (a *Anonymizer) isNamespace(ns string) bool {
	if slices.Contains(keptNamespaces, ns) {
		return true
	}
	_, ok := a.names["ns:"+ns]
	return ok
}

// nsHost anonymizes a "namespace/host" of Sidecar egress and Gateway servers (".", "*" and "~"
// namespaces are kept).
func (a *Anonymizer) nsHost(s string) string {
	ns, host, ok := strings.Cut(s, "/")
	if !ok {
		return a.Host(s)
	}
	if ns != "." && ns != "*" && ns != "~" {
		ns = a.Namespace(ns)
	}
	return ns + "/" + a.Host(host)
}

// Address anonymizes an IP address or CIDR prefix-preservingly: two addresses that share their
// first n bits still do after, so subnets stay subnets (a CIDR keeps its length, host bits
// cleared). Loopback, unspecified and non-IP values (a DNS name) are hashed as hosts.
func (a *Anonymizer) Address(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		addr := a.ip(p.Addr())
		return netip.PrefixFrom(addr, p.Bits()).Masked().String()
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return a.ip(ip).String()
	}
	return a.Host(s)
}

// privateRanges keep their prefix: a private address stays private (and in its range), so an
// anonymized dump never names a public host and the ranges' structure stays readable.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"),
}

// ip maps an address bit by bit: bit i is flipped by a keyed hash of the bits before it
// (prefix-preserving), except the bits of a private range it is in.
func (a *Anonymizer) ip(ip netip.Addr) netip.Addr {
	if ip.IsLoopback() || ip.IsUnspecified() {
		return ip
	}
	keep := 0
	for _, p := range privateRanges {
		if p.Contains(ip) {
			keep = p.Bits()
		}
	}
	in := ip.AsSlice()
	out := make([]byte, len(in))
	prefix := make([]byte, len(in)+1)
	for i := range len(in) * 8 {
		// prefix holds the first i bits of the input and the bit count.
		prefix[len(in)] = byte(i)
		bit := in[i/8] >> (7 - i%8) & 1
		flip := a.mac("ip:" + string(prefix))[0] & 1
		if i < keep {
			flip = 0
		}
		out[i/8] |= (bit ^ flip) << (7 - i%8)
		prefix[i/8] |= bit << (7 - i%8)
	}
	addr, _ := netip.AddrFromSlice(out)
	return addr
}

// Result anonymizes a conversion in place: services (names, namespaces, service accounts,
// endpoint labels and localities) and the Istio objects (metadata and every name, host,
// namespace, label value and address in their specs). Namespaces are collected first, so
// NAME.NS hosts are recognised in any order.
func (a *Anonymizer) Result(r *Result) error {
	for _, s := range r.Mesh.Services {
		a.Namespace(s.Namespace)
	}
	for _, c := range r.Configs {
		a.Namespace(c.Namespace)
	}
	for i := range r.Mesh.Services {
		s := &r.Mesh.Services[i]
		s.Name, s.Namespace = a.Service(s.Name), a.Namespace(s.Namespace)
		if s.ServiceAccount != "default" {
			s.ServiceAccount = a.account(s.ServiceAccount)
		}
		// Port names say the protocol (http-web, grpc-api); their suffixes could say more.
		for j := range s.Ports {
			p := &s.Ports[j]
			p.Name = scenarios.DefaultPortName(p.Protocol, p.Number)
		}
		for j := range s.Endpoints {
			g := &s.Endpoints[j]
			g.Locality = a.Locality(g.Locality)
			g.Labels = a.Labels(g.Labels)
		}
	}
	for _, c := range r.Configs {
		c.Namespace = a.Namespace(c.Namespace)
		if c.Name != "default" { // Istio's conventional name for namespace-wide objects
			c.Name = a.object(c.Name)
		}
		spec, err := a.value("", c.Spec)
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
		}
		c.Spec, _ = spec.(map[string]any)
		c.File = ""
	}
	r.Files = []string{"an anonymized dump"}
	if r.SidecarsByNamespace != nil {
		byNS := make(map[string]int, len(r.SidecarsByNamespace))
		for ns, n := range r.SidecarsByNamespace {
			byNS[a.Namespace(ns)] += n
		}
		r.SidecarsByNamespace = byNS
	}
	for i, w := range r.Workloads {
		r.Workloads[i] = Workload{Namespace: a.Namespace(w.Namespace), Kind: w.Kind, Name: a.object(w.Name), Pods: w.Pods}
	}
	r.Notes = nil // they name objects; the counts stay in Unmodelled
	return nil
}

// value rewrites a spec value by the key it sits under.
func (a *Anonymizer) value(key string, v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if m, ok := x[k].(map[string]any); ok && isLabelKey(k) && !hasNested(m) {
				lm := make(map[string]any, len(m))
				for lk, lv := range m {
					s, _ := lv.(string)
					lm[lk] = a.labelValue(lk, s)
				}
				out[k] = lm
				continue
			}
			if _, ok := x[k].(string); ok && k == "name" && (key == "ports" || key == "port") && x["number"] != nil {
				// A port's name may say more than its protocol (tcp-tn3270): name it by both
				// (port-NUMBER without a protocol, which then stays unnamed).
				proto, _ := x["protocol"].(string)
				out[k] = fmt.Sprintf("%s-%v", strings.ToLower(cmp.Or(proto, "port")), x["number"])
				continue
			}
			if s, ok := x[k].(string); ok && (key == "delegate" || key == "targetRef" || key == "targetRefs") && k == "name" {
				out[k] = a.object(s) // a delegate names a VirtualService, a targetRef a Gateway
				continue
			}
			if vs, ok := x[k].([]any); ok && key == "when" && (k == "values" || k == "notValues") {
				// An AuthorizationPolicy condition: its values are what its key says.
				ck, _ := x["key"].(string)
				out[k] = a.conditionValues(ck, vs)
				continue
			}
			nv, err := a.value(k, x[k])
			if err != nil {
				return nil, err
			}
			out[k] = nv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			ne, err := a.value(key, e)
			if err != nil {
				return nil, err
			}
			out[i] = ne
		}
		return out, nil
	case string:
		switch key {
		case "host", "hosts", "sniHosts":
			return a.nsHost(x), nil
		case "principals", "notPrincipals":
			return a.principal(x), nil
		case "notNamespaces":
			return wildcarded(x, a.Namespace), nil
		case "notHosts":
			return a.nsHost(x), nil
		case "ipBlocks", "notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks":
			return a.Address(x), nil
		case "exportTo", "namespace", "namespaces":
			if x == "." || x == "*" || x == "~" {
				return x, nil
			}
			if key == "namespaces" { // an AuthorizationPolicy source may match a prefix or suffix
				return wildcarded(x, a.Namespace), nil
			}
			return a.Namespace(x), nil
		case "gateways", "gateway":
			if x == "mesh" {
				return x, nil
			}
			if ns, name, ok := strings.Cut(x, "/"); ok {
				return a.Namespace(ns) + "/" + a.object(name), nil
			}
			return a.object(x), nil
		case "name":
			return x, nil // route, port and subset names say nothing about the cluster
		case "address", "addresses":
			return a.Address(x), nil
		case "serviceAccount":
			return a.account(x), nil
		case "locality":
			return a.Locality(x), nil
		case "credentialName":
			return a.name("secret", "secret", x), nil
		case "audiences": // a RequestAuthentication's: often a service's name
			return a.object(x), nil
		}
		return x, nil
	}
	return v, nil
}

// principal anonymizes an AuthorizationPolicy principal, TRUST-DOMAIN/ns/NS/sa/SA: the
// namespace and the service account as everywhere else, so the policy still names the
// mesh's identities; "*" segments, and a trust domain, are kept; a segment with a wildcard
// inside (prefix or suffix match) is hashed with the wildcard kept in its place.
func (a *Anonymizer) principal(p string) string {
	segs := strings.Split(p, "/")
	for i := 1; i < len(segs); i++ {
		seg := segs[i]
		if seg == "" || seg == "*" {
			continue
		}
		var mapped func(string) string
		switch segs[i-1] {
		case "ns":
			mapped = a.Namespace
		case "sa":
			mapped = func(s string) string {
				if s == "default" {
					return s
				}
				return a.account(s)
			}
		default:
			continue
		}
		segs[i] = wildcarded(seg, mapped)
	}
	return strings.Join(segs, "/")
}

// wildcarded maps s, keeping "*" and the "*" of a prefix or suffix match ("*-prod",
// "team-*") beside the mapped rest, as AuthorizationPolicy matches them.
func wildcarded(s string, mapped func(string) string) string {
	switch {
	case s == "*" || s == "":
		return s
	case strings.HasPrefix(s, "*"):
		return "*" + mapped(s[1:])
	case strings.HasSuffix(s, "*"):
		return mapped(s[:len(s)-1]) + "*"
	}
	return mapped(s)
}

// conditionValues anonymizes the values of an AuthorizationPolicy condition by its key:
// namespaces, principals and addresses as elsewhere; other keys (headers, claims, ports) are
// kept as written, like the other match values.
func (a *Anonymizer) conditionValues(key string, vs []any) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		s, ok := v.(string)
		switch {
		case !ok:
			out[i] = v
		case key == "source.namespace":
			out[i] = a.Namespace(s)
		case key == "source.principal":
			out[i] = a.principal(s)
		case key == "source.ip" || key == "remote.ip" || key == "destination.ip":
			out[i] = a.Address(s)
		default:
			out[i] = s
		}
	}
	return out
}

// isLabelKey reports whether a spec key holds a label map (workload selectors, subsets,
// endpoints, Gateway selectors, sourceLabels).
func isLabelKey(k string) bool {
	return k == "labels" || k == "matchLabels" || k == "sourceLabels" || k == "selector"
}

func hasNested(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return true
		}
	}
	return false
}
