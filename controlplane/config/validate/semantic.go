package validate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/istioconfig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
)

// Semantic validation: the rules istiod's validating webhook applies to each kind
// (istio.io/istio pkg/config/validation, ValidateServiceEntry, ValidateWorkloadEntry,
// ValidateVirtualService, ValidateDestinationRule, ValidateSidecar, ValidateGateway,
// ValidatePeerAuthentication and their
// helpers). The rules are restated here, in our words, with the istiod check each mirrors
// named in a comment. Where istiod only warns (it admits the object), so do we: a warning is
// reported but the object is kept.

// Problem is one violated rule: the field (a path from the spec's root, "spec", for the line)
// and what is wrong with the fix. Warn marks a finding istiod admits the object with.
type Problem struct {
	Path Path
	Msg  string
	Warn bool
}

type checker struct {
	problems []Problem
	// namespace is the checked object's namespace (Check's), for rules that compare with it.
	namespace string
}

func (c *checker) errf(at Path, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: at, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) warnf(at Path, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: at, Msg: fmt.Sprintf(format, args...), Warn: true})
}

// SpecError is one rule a spec breaks: Path names the field (spec.ports[0].number), Msg says
// what is wrong and how to fix it.
type SpecError struct {
	Path string
	Msg  string
}

func (e *SpecError) Error() string { return e.Path + ": " + e.Msg }

// Spec applies istiod's semantic validation of cfg's kind to its spec, and istiod's checks of
// its annotations (Metadata) (cfg must pass istioconfig.Validate first). It returns the errors, joined (each a *SpecError), and
// separately the warnings: findings istiod admits the object with.
func Spec(cfg *istioconfig.Config) (warnings []*SpecError, err error) {
	var errs []error
	for _, p := range append(Metadata(cfg), Check(cfg.Namespace, cfg.Spec)...) {
		e := &SpecError{Path: p.Path.String(), Msg: p.Msg}
		if p.Warn {
			warnings = append(warnings, e)
		} else {
			errs = append(errs, e)
		}
	}
	return warnings, errors.Join(errs...)
}

// Check runs the rules of spec's kind (namespace is the object's) and returns the problems in
// the order found; paths start at "spec". A decoder joins them to the document's path to find
// the line; Spec is the same for callers without a document.
func Check(namespace string, spec proto.Message) []Problem {
	c := &checker{namespace: namespace}
	at := Path{"spec"}
	switch s := spec.(type) {
	case *networking.ServiceEntry:
		c.serviceEntry(at, namespace, s)
	case *networking.WorkloadEntry:
		c.workloadEntry(at, s)
	case *networking.VirtualService:
		c.virtualService(at, namespace, s)
	case *networking.DestinationRule:
		c.destinationRule(at, namespace, s)
	case *networking.Sidecar:
		c.sidecar(at, s)
		c.notGeneratedSidecar(at, s)
	case *networking.Gateway:
		c.gateway(at, s)
		c.notGeneratedGateway(at, s)
	case *securityapi.PeerAuthentication:
		c.peerAuthentication(at, s)
	case *securityapi.AuthorizationPolicy:
		c.authorizationPolicy(at, s)
	case *securityapi.RequestAuthentication:
		c.requestAuthentication(at, s)
	}
	return c.problems
}

// ---- shared rules ----

var (
	dnsLabelRE   = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`)
	labelValueRE = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	labelNameRE  = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }

// hostError checks a host name that may start with a wildcard label ("*.example.com" or "*"),
// as istiod's ValidateWildcardDomain: at most 255 characters; a first label that is "*", a
// DNS-1123 label, or one with a "*" or "*-" prefix ("*foo.example.com", "*-foo.example.com");
// every later label a DNS-1123 label, the last one not all digits, and an empty last label
// allowed (a trailing dot, "api.example.com.").
func hostError(host string) string {
	switch {
	case host == "":
		return "is empty: write a host name such as reviews.default.svc.cluster.local"
	case len(host) > 255:
		return fmt.Sprintf("%q is longer than 255 characters: shorten it", host)
	}
	invalid := fmt.Sprintf("%q is not a valid host: use DNS labels (letters, digits, '-') separated by dots, with '*' allowed only at the start of the first label (*.example.com)", host)
	first, rest, dotted := strings.Cut(host, ".")
	if !wildcardLabel(first) {
		return invalid
	}
	if !dotted {
		return ""
	}
	labels := strings.Split(rest, ".")
	if last := labels[len(labels)-1]; last != "" && strings.Trim(last, "0123456789") == "" {
		return fmt.Sprintf("%q is not a valid host: its last label %q is all digits (an IP address belongs in addresses or endpoints; a host needs a name)", host, last)
	}
	for i, l := range labels {
		if i == len(labels)-1 && l == "" {
			break
		}
		if !isDNSLabel(l) {
			return invalid
		}
	}
	return ""
}

// wildcardLabel reports whether l may be a host's first label: "*", a DNS-1123 label, or one
// after a "*" or "*-" prefix.
func wildcardLabel(l string) bool {
	if l == "*" {
		return true
	}
	if len(l) > 63 { // the limit counts the wildcard prefix too
		return false
	}
	if after, wild := strings.CutPrefix(l, "*"); wild {
		l = strings.TrimPrefix(after, "-")
	}
	return isDNSLabel(l)
}

// sniHost checks a tls match's SNI host as istiod does: a host name (a wildcard allowed as its
// first label) that one of the VirtualService's hosts covers, so that the route never claims
// TLS traffic for names the VirtualService is not about; an IP address is only warned about
// (SNI carries names, and most clients send none for an IP). Unless the VirtualService is
// bound to the mesh gateway by name, istiod also takes the SNI a sidecar sends for an
// AUTO_PASSTHROUGH gateway (outbound_.PORT_._.HOST).
func (c *checker) sniHost(at Path, h string, vs *networking.VirtualService) {
	vsHosts := vs.GetHosts()
	if isIP(h) {
		c.warnf(at, "%q is an IP address: SNI carries host names and most TLS clients send none for an IP, so this match may never apply", h)
		return
	}
	if strings.HasPrefix(h, "outbound_") && !slices.Contains(vs.GetGateways(), "mesh") {
		if !autoPassthroughSNI(h) {
			c.errf(at, "%q is not a valid auto-generated SNI: write outbound_.PORT_._.HOST (outbound_.443_._.api.example.com)", h)
			return
		}
	} else if msg := hostError(h); msg != "" {
		c.errf(at, "%s", msg)
		return
	}
	for _, vh := range vsHosts {
		if hostSubsetOf(h, vh) {
			return
		}
	}
	c.errf(at, "%q is not covered by any of the VirtualService's hosts [%s]: add it (or a wildcard covering it) to hosts, or match a host they cover", h, strings.Join(vsHosts, ", "))
}

// autoPassthroughSNI reports whether h has the shape of the SNI a sidecar sends through an
// AUTO_PASSTHROUGH gateway, outbound_.PORT_SUBSET_.HOST, by istiod's loose reading: at least
// four parts split at '_', the first "outbound", a port part holding a digit and a host part
// holding a letter.
func autoPassthroughSNI(h string) bool {
	parts := strings.Split(h, "_")
	if len(parts) < 4 || parts[0] != "outbound" {
		return false
	}
	port, host := strings.Trim(parts[1], "."), strings.Trim(parts[3], ".")
	return strings.ContainsAny(port, "0123456789") &&
		strings.IndexFunc(host, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0
}

// hostSubsetOf reports whether every name host h (which may be a wildcard) stands for is also
// one that pattern stands for: equal names, or a pattern "*suffix" whose suffix ends h (past
// h's own wildcard). As istiod compares them, names are compared as written.
func hostSubsetOf(h, pattern string) bool {
	if h == pattern {
		return true
	}
	suffix, wild := strings.CutPrefix(pattern, "*")
	if !wild {
		return false
	}
	return strings.HasSuffix(strings.TrimPrefix(h, "*"), suffix)
}

// partialWildcard reports a host like "*foo.com": a wildcard that is not a whole label.
func partialWildcard(h string) bool {
	return strings.HasPrefix(h, "*") && h != "*" && !strings.HasPrefix(h, "*.")
}

// fqdnError checks a host name without wildcards, as istiod's ValidateFQDN.
func fqdnError(host string) string {
	if host == "" {
		return "is empty: write a host name such as api.example.com"
	}
	if len(host) > 255 {
		return fmt.Sprintf("%q is longer than 255 characters: shorten it", host)
	}
	parts := strings.Split(host, ".")
	if tld := parts[len(parts)-1]; tld != "" && strings.Trim(tld, "0123456789") == "" {
		// istiod reads an all-digit last label as a number (an IP-like name): refused.
		return fmt.Sprintf("%q is not a fully qualified domain name: its top-level label %q is all digits: use a host name", host, tld)
	}
	for _, l := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if !isDNSLabel(l) {
			return fmt.Sprintf("%q is not a fully qualified domain name: use DNS labels (letters, digits, '-') separated by dots, without wildcards", host)
		}
	}
	return ""
}

// port mirrors istiod's ValidatePort.
func (c *checker) port(at Path, n uint32) {
	if n < 1 || n > 65535 {
		c.errf(at, "%d is not a valid port: use a number from 1 to 65535", n)
	}
}

// portName mirrors istiod's ValidatePortName: a DNS-1123 label.
func (c *checker) portName(at Path, name string) {
	switch {
	case name == "":
		c.errf(at, "is required: name the port with lowercase letters, digits and '-' (e.g. http-web)")
	case !isDNSLabel(name):
		c.errf(at, "%q is not a valid port name: use at most 63 letters, digits and '-', starting and ending with a letter or digit", name)
	}
}

// protocols are the port protocols istiod's protocol.Parse recognises (case-insensitive).
var protocols = []string{"HTTP", "HTTPS", "HTTP2", "HTTP_PROXY", "GRPC", "GRPC-WEB", "TCP", "TLS", "UDP", "MONGO", "REDIS", "MYSQL"}

// protocol mirrors istiod's ValidateProtocol; empty means "sniff", allowed where required is
// false.
func (c *checker) protocol(at Path, p string, required bool) {
	if p == "" {
		if required {
			c.errf(at, "is required: set one of %s", strings.Join(protocols, ", "))
		}
		return
	}
	if !slices.Contains(protocols, strings.ToUpper(p)) {
		c.errf(at, "%q is not a supported protocol: use one of %s%s", p, strings.Join(protocols, ", "), suggest.Hint(strings.ToUpper(p), protocols))
	}
}

func isHTTPOrTLS(p string) bool {
	switch strings.ToUpper(p) {
	case "HTTP", "HTTPS", "HTTP2", "HTTP_PROXY", "GRPC", "GRPC-WEB", "TLS":
		return true
	}
	return false
}

// labels mirrors istiod's labels.Instance.Validate: Kubernetes label keys ([prefix/]name, the
// prefix a DNS subdomain, the name at most 63 characters) and values (at most 63 characters of
// letters, digits, '-', '_' and '.', starting and ending alphanumeric).
func (c *checker) labels(at Path, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if msg := labelKeyError(k); msg != "" {
			c.errf(at.With(k), "%s", msg)
		}
		if len(v) > 63 || !labelValueRE.MatchString(v) {
			c.errf(at.With(k), "label value %q is invalid: use at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit", v)
		}
	}
}

func labelKeyError(k string) string {
	name := k
	if i := strings.LastIndexByte(k, '/'); i >= 0 {
		prefix := k[:i]
		name = k[i+1:]
		if !istioconfig.IsDNS1123Subdomain(prefix) {
			return fmt.Sprintf("label key %q has an invalid prefix: the part before '/' must be a lowercase DNS subdomain (example.com/)", k)
		}
	}
	if name == "" || len(name) > 63 || !labelNameRE.MatchString(name) {
		return fmt.Sprintf("label key %q is invalid: use at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit", k)
	}
	return ""
}

// selector mirrors istiod's validateWorkloadSelector: valid labels, and no wildcards (a
// selector matches labels exactly).
func (c *checker) selector(at Path, m map[string]string, kindName string) {
	rest := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case k == "":
			c.errf(at, "a %s has an empty label key: remove it or name the label", kindName)
		case strings.Contains(k, "*") || strings.Contains(m[k], "*"):
			c.errf(at.With(k), "wildcards are not supported in a selector: match the label's exact value")
		default:
			rest[k] = m[k]
		}
	}
	c.labels(at, rest)
}

// duration mirrors istiod's ValidateDuration: at least 1ms and a whole number of milliseconds.
func (c *checker) duration(at Path, d *durationpb.Duration) {
	if d == nil {
		return
	}
	if err := d.CheckValid(); err != nil {
		c.errf(at, "is not a valid duration: write it like \"5s\" or \"250ms\"")
		return
	}
	v := d.AsDuration()
	switch {
	case v < time.Millisecond:
		c.errf(at, "%v is too short: a duration must be at least 1ms", v)
	case v%time.Millisecond != 0:
		c.errf(at, "%v has sub-millisecond precision: round it to whole milliseconds", v)
	}
}

// percent mirrors istiod's ValidatePercent and validatePercentage.
func (c *checker) percent(at Path, v float64) {
	if v < 0 || v > 100 {
		c.errf(at, "%v is not a percentage: use a value from 0 to 100", v)
	}
}

// exportTo mirrors istiod's validateExportTo: "." (this namespace), "*" (every namespace),
// "~" (none; ServiceEntry only) or namespace names, without duplicates, and "*" or "~" alone.
func (c *checker) exportTo(at Path, namespace string, list []string, allowNone bool) {
	seen := make(map[string]bool, len(list))
	for i, e := range list {
		v := e
		if v == "." {
			v = namespace
		}
		switch {
		case e == "*", e == ".":
		case e == "~":
			if !allowNone {
				c.errf(at.With(i), "\"~\" (export to no namespace) is only allowed on a ServiceEntry: remove it")
			}
		case !isDNSLabel(e):
			c.errf(at.With(i), "%q is not a namespace: use \".\", \"*\" or a namespace name", e)
		case strings.ToLower(e) != e:
			// istiod's check (a DNS label) admits upper case, which no namespace has.
			c.warnf(at.With(i), "%q names no namespace (namespaces are lower case), so nothing is exported there: write it in lower case", e)
		}
		if seen[v] {
			c.errf(at.With(i), "%q is listed twice: remove the duplicate", e)
		}
		seen[v] = true
	}
	if len(list) > 1 {
		for i, e := range list {
			if e == "*" || e == "~" {
				c.errf(at.With(i), "%q cannot be combined with other entries: keep it alone", e)
			}
		}
	}
}

func isIP(s string) bool { _, err := netip.ParseAddr(s); return err == nil }

func isIPOrCIDR(s string) bool {
	if strings.Contains(s, "/") {
		_, err := netip.ParsePrefix(s)
		return err == nil
	}
	return isIP(s)
}

const unixPrefix = "unix://"

// unixAddressError mirrors istiod's ValidateUnixAddress: an absolute path (or an @abstract
// socket name) after unix://.
func unixAddressError(addr string) string {
	p := strings.TrimPrefix(addr, unixPrefix)
	switch {
	case p == "":
		return fmt.Sprintf("%q has no socket path: write unix:///path/to/socket", addr)
	case strings.HasPrefix(p, "@"):
		return ""
	case !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/"):
		return fmt.Sprintf("%q is not an absolute socket path (to a file, not a directory): write unix:///path/to/socket", addr)
	}
	return ""
}

// ---- ServiceEntry (istiod: ValidateServiceEntry) ----

func (c *checker) serviceEntry(at Path, namespace string, se *networking.ServiceEntry) {
	hasSelector := se.GetWorkloadSelector() != nil
	if hasSelector {
		if len(se.GetWorkloadSelector().GetLabels()) == 0 {
			c.warnf(at.With("workloadSelector", "labels"), "is empty, so the selector picks every workload of the namespace: add labels")
		}
		c.selector(at.With("workloadSelector", "labels"), se.GetWorkloadSelector().GetLabels(), "workloadSelector")
		if len(se.GetEndpoints()) > 0 {
			c.errf(at.With("workloadSelector"), "a ServiceEntry takes either endpoints or a workloadSelector, not both: remove one")
		}
	}
	if len(se.GetHosts()) == 0 {
		c.errf(at.With("hosts"), "is required: add at least one host, e.g. hosts: [api.example.com]")
	}
	for i, h := range se.GetHosts() {
		if h == "*" {
			c.errf(at.With("hosts", i), "\"*\" is not allowed in a ServiceEntry: name the hosts (a wildcard prefix such as *.example.com is fine)")
		} else if msg := hostError(h); msg != "" {
			c.errf(at.With("hosts", i), "%s", msg)
		} else if partialWildcard(h) {
			// istiod: ValidatePartialWildCard, a warning.
			c.warnf(at.With("hosts", i), "%q is a partial wildcard (the '*' is not a whole label), which istiod admits only with a warning: write *.%s to match subdomains", h, strings.TrimPrefix(h[1:], "."))
		}
	}
	cidr := false
	for i, a := range se.GetAddresses() {
		cidr = cidr || strings.Contains(a, "/")
		if !isIPOrCIDR(a) {
			c.errf(at.With("addresses", i), "%q is not an IP address or CIDR: write e.g. 10.0.0.1 or 10.0.0.0/24", a)
		}
	}
	res := se.GetResolution()
	if cidr && res != networking.ServiceEntry_NONE && res != networking.ServiceEntry_STATIC {
		c.errf(at.With("resolution"), "%s cannot be used with CIDR addresses: use NONE or STATIC, or list single IPs", res)
	}
	names := map[string]bool{}
	numbers := map[uint32]bool{}
	for i, p := range se.GetPorts() {
		pa := at.With("ports", i)
		if p == nil {
			c.errf(pa, "is empty: give the port a number, name and protocol")
			continue
		}
		if names[p.GetName()] && p.GetName() != "" {
			c.errf(pa.With("name"), "port name %q is used twice: give each port its own name", p.GetName())
		}
		names[p.GetName()] = true
		if numbers[p.GetNumber()] {
			c.errf(pa.With("number"), "port %d is listed twice: give each port its own number", p.GetNumber())
		}
		numbers[p.GetNumber()] = true
		c.port(pa.With("number"), p.GetNumber())
		c.portName(pa.With("name"), p.GetName())
		c.protocol(pa.With("protocol"), p.GetProtocol(), false)
		if p.GetTargetPort() != 0 {
			c.port(pa.With("targetPort"), p.GetTargetPort())
		}
	}
	eps := se.GetEndpoints()
	switch res {
	case networking.ServiceEntry_NONE:
		if len(eps) > 0 {
			c.errf(at.With("endpoints"), "resolution NONE takes no endpoints: remove them, or set resolution: STATIC (IPs) or DNS (host names)")
		}
		if hasSelector {
			c.warnf(at.With("workloadSelector"), "with resolution NONE only gives each selected workload an outbound listener of its own for the ports not served through HTTP (as for a headless Service, and none when it selects nothing), with no load balancing: set resolution: STATIC to balance over the selected workloads")
		}
	case networking.ServiceEntry_STATIC:
		unix := false
		for i, ep := range eps {
			ea := at.With("endpoints", i)
			addr := ep.GetAddress()
			switch {
			case strings.HasPrefix(addr, unixPrefix):
				unix = true
				if msg := unixAddressError(addr); msg != "" {
					c.errf(ea.With("address"), "%s", msg)
				}
				if len(ep.GetPorts()) > 0 {
					c.errf(ea.With("ports"), "a unix socket endpoint has no ports: remove them")
				}
			case addr == "" && ep.GetNetwork() != "":
				c.warnf(ea.With("address"), "is empty: the endpoint on network %q is reached through that network's gateway only", ep.GetNetwork())
			case addr == "":
				c.errf(ea.With("address"), "is required: resolution STATIC needs an IP address (or unix:///socket) per endpoint")
			case !isIP(addr):
				c.errf(ea.With("address"), "%q is not an IP address, as resolution STATIC needs: use an IP, or set resolution: DNS for host names", addr)
			}
			c.endpointPorts(ea, ep, names)
			c.labels(ea.With("labels"), ep.GetLabels())
		}
		if unix && len(se.GetPorts()) != 1 {
			c.errf(at.With("ports"), "a ServiceEntry with unix socket endpoints needs exactly one port")
		}
		// istiod admits a STATIC entry with neither endpoints nor a selector, and so do we
		// silently: a service scaled to zero is one.
	case networking.ServiceEntry_DNS, networking.ServiceEntry_DNS_ROUND_ROBIN:
		if len(eps) == 0 {
			for i, h := range se.GetHosts() {
				if h != "" && fqdnError(h) != "" && hostError(h) == "" {
					c.errf(at.With("hosts", i), "%q cannot be resolved by DNS: resolution %s without endpoints needs fully qualified hosts (no wildcards); add endpoints or use resolution: NONE", h, res)
				}
			}
		}
		if res == networking.ServiceEntry_DNS_ROUND_ROBIN && len(eps) > 1 {
			c.errf(at.With("endpoints"), "resolution DNS_ROUND_ROBIN takes at most one endpoint: use resolution: DNS for several")
		}
		for i, ep := range eps {
			ea := at.With("endpoints", i)
			if addr := ep.GetAddress(); !isIP(addr) && fqdnError(addr) != "" {
				c.errf(ea.With("address"), "%q is neither an IP address nor a fully qualified domain name: fix the address", addr)
			}
			c.endpointPorts(ea, ep, names)
			c.labels(ea.With("labels"), ep.GetLabels())
		}
	case networking.ServiceEntry_DYNAMIC_DNS:
		// istiod's rules; gen builds istiod's dynamic forward proxy cluster and filters
		// (gen/dfp.go).
		for i, h := range se.GetHosts() {
			if !strings.HasPrefix(h, "*") {
				c.errf(at.With("hosts", i), "%q: resolution DYNAMIC_DNS needs wildcard hosts (*.example.com)", h)
			}
		}
		if len(se.GetAddresses()) > 0 {
			c.errf(at.With("addresses"), "are not allowed with resolution DYNAMIC_DNS: the destination comes from the request's host")
		}
		if len(eps) > 0 {
			c.errf(at.With("endpoints"), "are not allowed with resolution DYNAMIC_DNS: the destination comes from the request's host")
		}
		for i, p := range se.GetPorts() {
			switch strings.ToUpper(p.GetProtocol()) {
			case "HTTP", "TLS", "GRPC", "HTTP2":
			default:
				c.errf(at.With("ports", i, "protocol"), "%q: resolution DYNAMIC_DNS takes HTTP, TLS, GRPC or HTTP2 ports", p.GetProtocol())
			}
		}
	default:
		c.errf(at.With("resolution"), "%v is not a supported resolution: use NONE, STATIC, DNS, DNS_ROUND_ROBIN or DYNAMIC_DNS", res)
	}
	// A plain TCP port cannot tell hosts apart (no Host header, no SNI), so several hosts only
	// make sense on HTTP or TLS ports, unless resolution NONE ignores the hosts.
	if res != networking.ServiceEntry_NONE && len(se.GetHosts()) > 1 {
		for i, p := range se.GetPorts() {
			if !isHTTPOrTLS(p.GetProtocol()) {
				c.errf(at.With("ports", i, "protocol"), "several hosts share port %d, which is not HTTP or TLS, so traffic cannot be told apart: use one host per ServiceEntry, or an HTTP/TLS protocol", p.GetNumber())
				break
			}
		}
	}
	c.exportTo(at.With("exportTo"), namespace, se.GetExportTo(), true)
}

// endpointPorts checks an endpoint's port map: each name is one of the ServiceEntry's ports
// (whose names are checked there), each number a valid port.
func (c *checker) endpointPorts(ea Path, ep *networking.WorkloadEntry, names map[string]bool) {
	for _, name := range slices.Sorted(maps.Keys(ep.GetPorts())) {
		pa := ea.With("ports", name)
		if !names[name] {
			c.errf(pa, "port %q is not one of the ServiceEntry's ports: use a name from spec.ports", name)
		}
		c.port(pa, ep.GetPorts()[name])
	}
}

// ---- WorkloadEntry (istiod: ValidateWorkloadEntry) ----

func (c *checker) workloadEntry(at Path, we *networking.WorkloadEntry) {
	addr := we.GetAddress()
	switch {
	case addr == "" && we.GetNetwork() == "":
		c.errf(at.With("address"), "is required: set the workload's IP address (or host name, or unix:///socket)")
	case addr == "":
		c.warnf(at.With("address"), "is empty: the workload on network %q is reached through that network's gateway only", we.GetNetwork())
	case strings.HasPrefix(addr, unixPrefix):
		if msg := unixAddressError(addr); msg != "" {
			c.errf(at.With("address"), "%s", msg)
		}
		if len(we.GetPorts()) > 0 {
			c.errf(at.With("ports"), "a unix socket workload has no ports: remove them")
		}
	case addr != "" && !isIP(addr):
		if strings.Contains(addr, "*") {
			c.errf(at.With("address"), "%q: wildcards are not allowed in an address: use an IP or a host name", addr)
		} else if msg := fqdnError(addr); msg != "" {
			c.errf(at.With("address"), "%s", msg)
		}
	}
	c.labels(at.With("labels"), we.GetLabels())
	for _, name := range slices.Sorted(maps.Keys(we.GetPorts())) {
		c.portName(at.With("ports", name), name)
		c.port(at.With("ports", name), we.GetPorts()[name])
	}
}

// ---- VirtualService (istiod: ValidateVirtualService, virtualservice.go) ----

func (c *checker) virtualService(at Path, namespace string, vs *networking.VirtualService) {
	delegate := len(vs.GetHosts()) == 0
	if delegate {
		// istiod reads a VirtualService without hosts as a delegate, which binds to no
		// gateway and carries HTTP routes only.
		if len(vs.GetGateways()) > 0 {
			c.errf(at.With("hosts"), "is required when gateways are set: add the hosts this VirtualService routes (only a delegate VirtualService has none)")
		}
		if len(vs.GetTls()) > 0 || len(vs.GetTcp()) > 0 {
			c.errf(at.With("hosts"), "is required for tls and tcp routes: add the hosts (a delegate VirtualService without hosts carries http routes only)")
		}
	}
	mesh := len(vs.GetGateways()) == 0
	for _, g := range vs.GetGateways() {
		if g == "mesh" {
			mesh = true
		}
	}
	c.gatewayNames(at.With("gateways"), vs.GetGateways())
	hostsValid := true
	for i, h := range vs.GetHosts() {
		ha := at.With("hosts", i)
		switch {
		case h == "*":
			if mesh {
				c.errf(ha, "\"*\" is not allowed for a VirtualService bound to the mesh (no gateways, or \"mesh\"): name the hosts, or bind it to a gateway only")
				hostsValid = false
			}
		case isIP(h):
		default:
			if msg := hostError(h); msg != "" {
				c.errf(ha, "%s", msg)
				hostsValid = false
			}
		}
	}
	if hostsValid {
		c.duplicateHosts(at.With("hosts"), vs.GetHosts())
	}
	if len(vs.GetHttp()) == 0 && len(vs.GetTls()) == 0 && len(vs.GetTcp()) == 0 {
		c.errf(at, "a VirtualService needs http, tls or tcp routes: add at least one")
	}
	for i, r := range vs.GetHttp() {
		c.delegateRoute(at.With("http", i), r, delegate)
		c.httpRoute(at.With("http", i), r)
	}
	c.vsNotGenerated(at, vs) // semantic_routes.go
	for i, r := range vs.GetTls() {
		ra := at.With("tls", i)
		if len(r.GetMatch()) == 0 {
			c.errf(ra.With("match"), "is required: a tls route matches on SNI, add match: [{sniHosts: [...]}]")
		}
		for j, m := range r.GetMatch() {
			ma := ra.With("match", j)
			if len(m.GetSniHosts()) == 0 {
				c.errf(ma.With("sniHosts"), "is required: list the SNI host names this route matches")
			}
			for k, h := range m.GetSniHosts() {
				c.sniHost(ma.With("sniHosts", k), h, vs)
			}
			for k, d := range m.GetDestinationSubnets() {
				if !isIPOrCIDR(d) {
					c.errf(ma.With("destinationSubnets", k), "%q is not an IP address or CIDR", d)
				}
			}
			if m.GetPort() != 0 {
				c.port(ma.With("port"), m.GetPort())
			}
			c.labels(ma.With("sourceLabels"), m.GetSourceLabels())
			c.gatewayNames(ma.With("gateways"), m.GetGateways())
		}
		if len(r.GetRoute()) == 0 {
			c.errf(ra.With("route"), "is required: list the destinations this tls route sends to")
		}
		c.routeDestinations(ra.With("route"), routeDests(r.GetRoute()))
	}
	for i, r := range vs.GetTcp() {
		ra := at.With("tcp", i)
		for j, m := range r.GetMatch() {
			ma := ra.With("match", j)
			for k, d := range m.GetDestinationSubnets() {
				if !isIPOrCIDR(d) {
					c.errf(ma.With("destinationSubnets", k), "%q is not an IP address or CIDR", d)
				}
			}
			if m.GetPort() != 0 {
				c.port(ma.With("port"), m.GetPort())
			}
			c.labels(ma.With("sourceLabels"), m.GetSourceLabels())
			c.gatewayNames(ma.With("gateways"), m.GetGateways())
		}
		if len(r.GetRoute()) == 0 {
			c.errf(ra.With("route"), "is required: list the destinations this tcp route sends to")
		}
		c.routeDestinations(ra.With("route"), routeDests(r.GetRoute()))
	}
	c.exportTo(at.With("exportTo"), namespace, vs.GetExportTo(), false)
}

// delegateRoute mirrors istiod's validateHTTPRouteConflict for delegation: a root route (one
// with delegate) takes its destinations from the delegate, so it has no route or redirect of
// its own; a delegate VirtualService's (no hosts) routes cannot delegate again. Whether the
// delegate exists, has no hosts and is exported to the root is checked by Analyze.
func (c *checker) delegateRoute(at Path, r *networking.HTTPRoute, inDelegate bool) {
	ref := r.GetDelegate()
	if ref == nil {
		return
	}
	if inDelegate {
		c.errf(at.With("delegate"), "a delegate VirtualService (one without hosts) cannot delegate again: delegation is one level deep; inline the routes of %s here", ref.GetName())
		return
	}
	// istiod admits these and finds no delegate, so the route is dropped.
	if ref.GetName() == "" {
		c.warnf(at.With("delegate", "name"), "is empty: no VirtualService has that name, so this route is dropped; name the VirtualService (without hosts) whose routes this route takes")
	}
	if ns := ref.GetNamespace(); ns != "" && !isDNSLabel(ns) {
		c.warnf(at.With("delegate", "namespace"), "%q is not a namespace name: no delegate is found there, so this route is dropped", ns)
	}
	if len(r.GetRoute()) > 0 {
		c.errf(at.With("route"), "a route with delegate takes its destinations from the delegate VirtualService: remove route (or delegate)")
	}
	if r.GetRedirect() != nil {
		c.errf(at.With("redirect"), "a route with delegate takes its actions from the delegate VirtualService: remove redirect (or delegate)")
	}
}

// duplicateHosts mirrors istiod's check of a VirtualService's hosts: no two may overlap, the
// same host twice or a wildcard and a host it covers (*.example.com and a.example.com, or
// *.com), for which of the two would route the host is not said.
func (c *checker) duplicateHosts(at Path, hosts []string) {
	for j := 1; j < len(hosts); j++ {
		for i := range j {
			if hostsOverlap(hosts[i], hosts[j]) {
				c.errf(at.With(j), "%q overlaps %q (hosts[%d]): list each host once; a wildcard already covers the hosts it matches, so remove one", hosts[j], hosts[i], i)
				break
			}
		}
	}
}

// hostsOverlap says whether two host names (each maybe a *-prefixed wildcard) match a common
// host, as istiod's host.Name.Matches: case-sensitively, by suffix.
func hostsOverlap(a, b string) bool {
	aw, bw := strings.HasPrefix(a, "*"), strings.HasPrefix(b, "*")
	switch {
	case aw && bw:
		if len(a) < len(b) {
			return strings.HasSuffix(b[1:], a[1:])
		}
		return strings.HasSuffix(a[1:], b[1:])
	case aw:
		return strings.HasSuffix(b, a[1:])
	case bw:
		return strings.HasSuffix(a, b[1:])
	}
	return a == b
}

// gatewayNames mirrors istiod's validateGatewayNames over a list of gateway references
// (gatewayName): istiod checks the entries up to the first one without a namespace ("mesh", a
// name) and none after it, so a bad reference there is admitted, and is only a warning here
// (it names no Gateway, so nothing is bound to it).
func (c *checker) gatewayNames(at Path, gs []string) {
	for i, g := range gs {
		c.gatewayName(at.With(i), g)
		if !strings.Contains(g, "/") {
			for j := i + 1; j < len(gs); j++ {
				w := &checker{}
				w.gatewayName(at.With(j), gs[j])
				for _, e := range w.problems {
					c.warnf(at.With(j), "%s (istiod admits it, as it checks no reference after %q: it binds to no Gateway)", e.Msg, g)
				}
			}
			return
		}
	}
}

// gatewayName mirrors istiod's validateGatewayNames for one reference: "mesh", a gateway name,
// or namespace/name. A reference without a slash (a name, or the legacy name.namespace form)
// is checked as istiod's ValidateFQDN checks it: DNS labels of any case, an optional trailing
// dot, a last label that is not all digits (so no IP address); one with upper case letters is
// admitted, as istiod admits it, with a warning: it names no Gateway.
func (c *checker) gatewayName(at Path, g string) {
	if g == "mesh" {
		return
	}
	ns, name, slash := strings.Cut(g, "/")
	if !slash {
		switch {
		case fqdnError(g) != "":
			c.errf(at, "%q is not a gateway reference: use \"mesh\", a Gateway name, or namespace/name (an IP address is not one)", g)
		case strings.ToLower(g) != g:
			c.warnf(at, "%q names no Gateway (names and namespaces are lower case): write namespace/name in lower case", g)
		}
		return
	}
	switch {
	case isDNSLabel(ns) && istioconfig.IsDNS1123Subdomain(name) && !isDNSLabel(name):
		c.errf(at, "%q names Gateway %q, which cannot exist: a Gateway's name is a DNS label (no dots)", g, name)
	case !isDNSLabel(ns) || !isDNSLabel(name):
		c.errf(at, "%q is not a gateway reference: use \"mesh\", a Gateway name, or namespace/name", g)
	case strings.ToLower(g) != g:
		// istiod's check (DNS labels) admits upper case, which no name or namespace has.
		c.warnf(at, "%q names no Gateway (names and namespaces are lower case): write namespace/name in lower case", g)
	}
}

type dest struct {
	d      *networking.Destination
	weight int32
}

func routeDests(rs []*networking.RouteDestination) []dest {
	out := make([]dest, len(rs))
	for i, r := range rs {
		out[i] = dest{r.GetDestination(), r.GetWeight()}
	}
	return out
}

// routeDestinations mirrors istiod's validateRouteDestinations and
// validateHTTPRouteDestinations: every destination is set and valid, no weight is negative,
// and several destinations do not all weigh 0. istiod up to 1.1x also required the weights
// to add up to 100; current istiod (and Envoy) read them as relative shares, so a weight past
// 100 is admitted and a sum other than 100 is a warning here, not an error.
func (c *checker) routeDestinations(at Path, ds []dest) {
	total := int64(0)
	for i, d := range ds {
		da := at.With(i)
		if d.d == nil {
			c.errf(da.With("destination"), "is required: set destination.host")
		} else {
			c.destination(da.With("destination"), d.d)
		}
		if d.weight < 0 {
			c.errf(da.With("weight"), "%d is negative: use a weight of 0 or more (weights are relative shares, best written as percentages)", d.weight)
		}
		total += int64(d.weight)
	}
	switch {
	case len(ds) > 1 && total == 0:
		c.errf(at, "every destination has weight 0, so no traffic can flow: give the destinations weights adding up to 100")
	case len(ds) > 1 && total != 100:
		c.warnf(at, "the weights add up to %d, not 100: they are read as relative shares; make them add up to 100 to say what you mean (older istiod rejects this)", total)
	}
}

// destination mirrors istiod's validateDestination.
func (c *checker) destination(at Path, d *networking.Destination) {
	switch h := d.GetHost(); {
	case h == "":
		c.errf(at.With("host"), "is required: name the service to route to")
	case h == "*":
		c.errf(at.With("host"), "\"*\" is not a destination: name one service")
	default:
		if msg := hostError(h); msg != "" {
			c.errf(at.With("host"), "%s", msg)
		}
	}
	if s := d.GetSubset(); s != "" && !isDNSLabel(s) {
		c.errf(at.With("subset"), "%q is not a valid subset name: use letters, digits and '-' (as in the DestinationRule)", s)
	}
	if d.GetPort() != nil {
		c.port(at.With("port", "number"), d.GetPort().GetNumber())
	}
}

func (c *checker) httpRoute(at Path, r *networking.HTTPRoute) {
	switch {
	case r.GetRedirect() != nil:
		if len(r.GetRoute()) > 0 {
			c.errf(at.With("redirect"), "an http route has either route or redirect, not both: remove one")
		}
		if r.GetFault() != nil {
			c.errf(at.With("fault"), "fault injection does not apply to a redirect: remove fault or redirect")
		}
		if r.GetRewrite() != nil {
			c.errf(at.With("rewrite"), "an http route has either rewrite or redirect, not both: remove one")
		}
		rd := r.GetRedirect()
		// istiod's validateHTTPRedirect: uri or prefixRewrite, the latter only under prefix
		// matches of the URI; something to change (a port or derivePort counts when set,
		// whatever its value).
		if rd.GetUri() != "" && rd.GetPrefixRewrite() != "" {
			c.errf(at.With("redirect", "prefixRewrite"), "cannot be set with uri: keep one")
		}
		if rd.GetPrefixRewrite() != "" {
			for i, m := range r.GetMatch() {
				if m.GetUri() != nil && m.GetUri().GetPrefix() == "" {
					c.errf(at.With("match", i, "uri"), "must be a prefix match for the redirect's prefixRewrite, which replaces the matched prefix: use prefix, or redirect.uri")
				}
			}
		}
		if rd.GetUri() == "" && rd.GetPrefixRewrite() == "" && rd.GetAuthority() == "" && rd.GetScheme() == "" {
			switch p, isPort := rd.GetRedirectPort().(*networking.HTTPRedirect_Port); {
			case rd.GetRedirectPort() == nil:
				c.errf(at.With("redirect"), "says nothing to change: set uri, prefixRewrite, authority, scheme or port")
			case isPort && p.Port == 0:
				c.warnf(at.With("redirect", "port"), "0 keeps the port, so the redirect changes nothing and loops (istiod admits it): set a port, uri, authority or scheme")
			}
		}
		if code := rd.GetRedirectCode(); code != 0 && (code < 300 || code > 399) {
			c.errf(at.With("redirect", "redirectCode"), "%d is not a redirect status: use a 3xx code such as 301", code)
		}
		if sc := rd.GetScheme(); sc != "" && sc != "http" && sc != "https" {
			c.errf(at.With("redirect", "scheme"), "%q is not a redirect scheme: use http or https", sc)
		}
		if p := rd.GetPort(); p != 0 {
			c.port(at.With("redirect", "port"), p)
		}
	case r.GetDirectResponse() != nil:
		if len(r.GetRoute()) > 0 {
			c.errf(at.With("directResponse"), "an http route has either route or directResponse, not both: remove one")
		}
		if st := r.GetDirectResponse().GetStatus(); st < 200 || st > 599 {
			c.errf(at.With("directResponse", "status"), "%d is not an HTTP status: use 200 to 599", st)
		}
	case r.GetDelegate() != nil:
	case len(r.GetRoute()) == 0:
		c.errf(at.With("route"), "is required: an http route needs route destinations (or a redirect or directResponse)")
	}
	if rw := r.GetRewrite(); rw != nil {
		switch {
		case rw.GetUri() == "" && rw.GetAuthority() == "" && rw.GetUriRegexRewrite() == nil:
			c.errf(at.With("rewrite"), "says nothing to rewrite: set uri, uriRegexRewrite or authority")
		case rw.GetUri() != "" && rw.GetUriRegexRewrite() != nil:
			c.errf(at.With("rewrite", "uriRegexRewrite"), "a rewrite has either uri or uriRegexRewrite, not both: remove one")
		}
		if rr := rw.GetUriRegexRewrite(); rr != nil && (rr.GetMatch() == "" || rr.GetRewrite() == "") {
			c.errf(at.With("rewrite", "uriRegexRewrite"), "needs both match and rewrite")
		} else if rr != nil {
			c.regex(at.With("rewrite", "uriRegexRewrite", "match"), rr.GetMatch()) // validateURIRegexRewrite
		}
	}
	for j, m := range r.GetMatch() {
		ma := at.With("match", j)
		if m.GetPort() != 0 {
			c.port(ma.With("port"), m.GetPort())
		}
		c.labels(ma.With("sourceLabels"), m.GetSourceLabels())
		c.httpMatch(ma, m) // matches.go
		if sn := m.GetSourceNamespace(); sn != "" && !isDNSLabel(sn) {
			c.errf(ma.With("sourceNamespace"), "%q is not a namespace name", sn)
		}
		c.gatewayNames(ma.With("gateways"), m.GetGateways())
	}
	ds := make([]dest, len(r.GetRoute()))
	for i, d := range r.GetRoute() {
		ds[i] = dest{d.GetDestination(), d.GetWeight()}
	}
	c.routeDestinations(at.With("route"), ds)
	if r.GetTimeout() != nil {
		c.duration(at.With("timeout"), r.GetTimeout())
	}
	if rt := r.GetRetries(); rt != nil {
		if rt.GetAttempts() < 0 {
			c.errf(at.With("retries", "attempts"), "%d is negative: use 0 (no retries) or more", rt.GetAttempts())
		}
		if rt.GetAttempts() == 0 && (rt.GetPerTryTimeout() != nil || rt.GetRetryOn() != "") {
			c.errf(at.With("retries", "attempts"), "is 0, which disables retries, yet perTryTimeout or retryOn is set: set attempts, or remove the retry settings")
		}
		c.duration(at.With("retries", "perTryTimeout"), rt.GetPerTryTimeout())
	}
	if f := r.GetFault(); f != nil {
		if d := f.GetDelay(); d != nil {
			if d.GetPercentage() != nil {
				c.percent(at.With("fault", "delay", "percentage", "value"), d.GetPercentage().GetValue())
			}
			if d.GetFixedDelay() == nil && d.GetExponentialDelay() == nil { // exponentialDelay: semantic_routes.go
				c.errf(at.With("fault", "delay", "fixedDelay"), "is required: set the delay, e.g. fixedDelay: 5s")
			}
			c.duration(at.With("fault", "delay", "fixedDelay"), d.GetFixedDelay())
		}
		if a := f.GetAbort(); a != nil {
			if a.GetPercentage() != nil {
				c.percent(at.With("fault", "abort", "percentage", "value"), a.GetPercentage().GetValue())
			}
			if st, ok := a.GetErrorType().(*networking.HTTPFaultInjection_Abort_HttpStatus); ok && (st.HttpStatus < 200 || st.HttpStatus > 599) {
				c.errf(at.With("fault", "abort", "httpStatus"), "%d is not an HTTP status: use 200 to 599", st.HttpStatus)
			}
		}
		if f.GetDelay() == nil && f.GetAbort() == nil {
			c.errf(at.With("fault"), "is empty: set delay or abort")
		}
	}
	if r.GetMirror() != nil {
		c.destination(at.With("mirror"), r.GetMirror())
	}
	if mp := r.GetMirrorPercentage(); mp != nil {
		c.percent(at.With("mirrorPercentage", "value"), mp.GetValue())
	}
	c.httpRouteFeatures(at, r) // semantic_routes.go
}

// ---- DestinationRule (istiod: ValidateDestinationRule) ----

func (c *checker) destinationRule(at Path, namespace string, dr *networking.DestinationRule) {
	switch h := dr.GetHost(); {
	case h == "":
		c.errf(at.With("host"), "is required: name the service this rule applies to")
	default:
		if msg := hostError(h); msg != "" {
			c.errf(at.With("host"), "%s", msg)
		}
	}
	c.trafficPolicy(at.With("trafficPolicy"), dr.GetTrafficPolicy())
	seen := map[string]bool{}
	for i, s := range dr.GetSubsets() {
		sa := at.With("subsets", i)
		switch name := s.GetName(); {
		case name == "":
			c.errf(sa.With("name"), "is required: name the subset (e.g. v1)")
		case !isDNSLabel(name):
			c.errf(sa.With("name"), "%q is not a valid subset name: use at most 63 letters, digits and '-'", name)
		case seen[name]:
			c.errf(sa.With("name"), "subset %q is defined twice: give each subset its own name", name)
		}
		seen[s.GetName()] = true
		c.labels(sa.With("labels"), s.GetLabels())
		c.trafficPolicy(sa.With("trafficPolicy"), s.GetTrafficPolicy())
	}
	if ws := dr.GetWorkloadSelector(); ws != nil {
		c.selector(at.With("workloadSelector", "matchLabels"), ws.GetMatchLabels(), "workloadSelector")
	}
	c.exportTo(at.With("exportTo"), namespace, dr.GetExportTo(), false)
}

func (c *checker) trafficPolicy(at Path, tp *networking.TrafficPolicy) {
	if tp == nil {
		return
	}
	if tp.GetConnectionPool() == nil && tp.GetOutlierDetection() == nil && tp.GetLoadBalancer() == nil && tp.GetTls() == nil &&
		len(tp.GetPortLevelSettings()) == 0 && tp.GetTunnel() == nil && tp.GetProxyProtocol() == nil && tp.GetRetryBudget() == nil {
		c.errf(at, "is empty: set a policy (connectionPool, outlierDetection, loadBalancer, tls, portLevelSettings, tunnel, proxyProtocol, retryBudget) or remove it")
	}
	if tp.GetTunnel() != nil && tp.GetProxyProtocol() != nil {
		c.errf(at.With("proxyProtocol"), "cannot be set with tunnel (istiod rejects both together): remove one")
	}
	if t := tp.GetTunnel(); t != nil {
		// istiod's validateTunnelSettings.
		if p := t.GetProtocol(); p != "" && p != "CONNECT" && p != "POST" {
			c.errf(at.With("tunnel", "protocol"), "%q is not a tunnel protocol: use CONNECT or POST (upper case)", p)
		}
		if h := t.GetTargetHost(); !isIP(h) {
			if msg := fqdnError(h); msg != "" {
				c.errf(at.With("tunnel", "targetHost"), "%s (or an IP address)", msg)
			}
		}
		if n := t.GetTargetPort(); n == 0 || n > 65535 {
			c.errf(at.With("tunnel", "targetPort"), "%d is not a port: use 1 to 65535", n)
		}
	}
	if v := tp.GetProxyProtocol().GetVersion(); v != networking.TrafficPolicy_ProxyProtocol_V1 && v != networking.TrafficPolicy_ProxyProtocol_V2 {
		c.errf(at.With("proxyProtocol", "version"), "%d is not a PROXY protocol version: use V1 or V2", v)
	}
	c.policyParts(at, tp.GetConnectionPool(), tp.GetOutlierDetection())
	c.loadBalancer(at.With("loadBalancer"), tp.GetLoadBalancer(), tp.GetOutlierDetection())
	c.clientTLS(at.With("tls"), tp.GetTls())
	c.notGeneratedPolicy(at, tp)
	ports := map[uint32]bool{}
	for i, pl := range tp.GetPortLevelSettings() {
		pa := at.With("portLevelSettings", i)
		if pl.GetPort() == nil {
			c.errf(pa.With("port"), "is required: say which port these settings apply to (port: {number: 8080})")
		} else {
			n := pl.GetPort().GetNumber()
			c.port(pa.With("port", "number"), n)
			if ports[n] {
				c.errf(pa.With("port", "number"), "port %d has settings twice: merge them", n)
			}
			ports[n] = true
		}
		if pl.GetOutlierDetection() == nil && pl.GetConnectionPool() == nil && pl.GetLoadBalancer() == nil && pl.GetTls() == nil {
			c.errf(pa, "sets nothing for its port: add connectionPool, outlierDetection, loadBalancer or tls, or remove it")
		}
		c.policyParts(pa, pl.GetConnectionPool(), pl.GetOutlierDetection())
		c.loadBalancer(pa.With("loadBalancer"), pl.GetLoadBalancer(), pl.GetOutlierDetection())
		c.clientTLS(pa.With("tls"), pl.GetTls())
	}
}

// clientTLS mirrors istiod's validateTLS: ISTIO_MUTUAL takes its certificates from the mesh,
// so none may be given; insecureSkipVerify excludes what only verification reads (CA
// certificates and subject alt names, and in SIMPLE mode a credentialName, which there holds
// only the CA); a credentialName of SIMPLE or MUTUAL holds the certificates, so none may be
// given beside it; MUTUAL needs a client certificate and key unless credentialName names them.
func (c *checker) clientTLS(at Path, t *networking.ClientTLSSettings) {
	mode := t.GetMode()
	c.configMapCredential(at.With("credentialName"), t.GetCredentialName())
	if t.GetInsecureSkipVerify().GetValue() {
		verifies := t.GetCaCertificates() != "" || len(t.GetSubjectAltNames()) > 0
		switch {
		case mode == networking.ClientTLSSettings_SIMPLE && (verifies || t.GetCredentialName() != ""):
			c.errf(at.With("insecureSkipVerify"), "cannot be true with caCertificates, credentialName or subjectAltNames in SIMPLE mode, which only verify the server: remove them, or insecureSkipVerify")
		case mode == networking.ClientTLSSettings_MUTUAL && verifies:
			c.errf(at.With("insecureSkipVerify"), "cannot be true with caCertificates or subjectAltNames, which only verify the server: remove them, or insecureSkipVerify")
		}
	}
	if (mode == networking.ClientTLSSettings_SIMPLE || mode == networking.ClientTLSSettings_MUTUAL) && t.GetCredentialName() != "" &&
		(t.GetClientCertificate() != "" || t.GetPrivateKey() != "" || t.GetCaCertificates() != "" || t.GetCaCrl() != "") {
		c.errf(at.With("credentialName"), "holds the certificates: remove clientCertificate, privateKey, caCertificates and caCrl, or credentialName")
	}
	switch mode {
	case networking.ClientTLSSettings_ISTIO_MUTUAL:
		if t.GetClientCertificate() != "" || t.GetPrivateKey() != "" || t.GetCaCertificates() != "" || t.GetCredentialName() != "" {
			c.errf(at, "ISTIO_MUTUAL uses the mesh's certificates: remove clientCertificate, privateKey, caCertificates and credentialName (or use MUTUAL)")
		}
	case networking.ClientTLSSettings_MUTUAL:
		if t.GetCredentialName() != "" {
			return
		}
		if t.GetClientCertificate() == "" {
			c.errf(at.With("clientCertificate"), "is required for MUTUAL TLS (or set credentialName)")
		}
		if t.GetPrivateKey() == "" {
			c.errf(at.With("privateKey"), "is required for MUTUAL TLS (or set credentialName)")
		}
	}
}

// configMapPrefix marks a credentialName read from a ConfigMap (CA certificates) rather than a
// Secret.
const configMapPrefix = "configmap://"

// configMapCredential mirrors istiod's ValidateTLS for a configmap://NAMESPACE/NAME
// credentialName: istiod reads such a ConfigMap from the config cluster, and only from the
// rule's own namespace, so both parts are required and the namespace must be the rule's.
func (c *checker) configMapCredential(at Path, cred string) {
	rest, ok := strings.CutPrefix(cred, configMapPrefix)
	if !ok {
		return
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) < 2 || parts[0] == "" || parts[1] == "":
		c.errf(at, "%q needs a namespace and a name: write %sNAMESPACE/NAME", cred, configMapPrefix)
	case parts[0] != c.namespace || c.namespace == "":
		c.errf(at, "%q names a ConfigMap of namespace %q: a rule reads ConfigMaps of its own namespace only: write %s%s/%s, or move the ConfigMap", cred, parts[0], configMapPrefix, c.namespace, parts[1])
	}
}

// loadBalancer mirrors istiod's validateLoadBalancer: a consistent-hash cookie needs a name
// and uniquely named attributes; the deprecated minimumRingSize warns and excludes ringHash
// and maglev; a Maglev table size is a prime below maglevMaxTableSize; localityLbSetting and
// zoneAwareLbSetting exclude each other; warmup needs a duration, a minimumPercent up to 100
// and a positive aggression; the locality and zone-aware settings are checked as istiod
// checks them (locality.go).
func (c *checker) loadBalancer(at Path, lb *networking.LoadBalancerSettings, od *networking.OutlierDetection) {
	if ch := lb.GetConsistentHash(); ch != nil {
		cha := at.With("consistentHash")
		if ck := ch.GetHttpCookie(); ck != nil {
			if ck.GetName() == "" {
				c.errf(cha.With("httpCookie", "name"), "is required: name the cookie to hash on")
			}
			seen := map[string]bool{}
			for i, a := range ck.GetAttributes() {
				switch n := a.GetName(); {
				case n == "":
					c.errf(cha.With("httpCookie", "attributes", i, "name"), "is required: name the cookie attribute (e.g. SameSite)")
				case seen[n]:
					c.errf(cha.With("httpCookie", "attributes", i, "name"), "cookie attribute %q is set twice: keep one", n)
				default:
					seen[n] = true
				}
			}
		}
		//nolint:staticcheck // the deprecated field is what the rule is about
		if ch.GetMinimumRingSize() != 0 {
			if ch.GetHashAlgorithm() != nil {
				c.errf(cha.With("minimumRingSize"), "cannot be set with ringHash or maglev: move the size into ringHash.minimumRingSize")
			} else {
				c.warnf(cha.With("minimumRingSize"), "is deprecated: use ringHash: {minimumRingSize: N}")
			}
		}
		if ml := ch.GetMaglev(); ml != nil {
			ta := cha.With("maglev", "tableSize")
			switch n := ml.GetTableSize(); {
			case n == 0:
				c.errf(ta, "is required for maglev: set a prime such as 65537 (Envoy's default)")
			case n >= maglevMaxTableSize:
				c.errf(ta, "%d is too large: Maglev's table size must be a prime below %d, e.g. 65537", n, maglevMaxTableSize)
			case !isPrime(n):
				c.errf(ta, "%d is not a prime number, which Maglev needs: use %d (the next prime), or 65537 (Envoy's default)", n, nextPrime(n))
			}
		}
	}
	if lb.GetLocalityLbSetting() != nil && lb.GetZoneAwareLbSetting() != nil {
		c.errf(at.With("zoneAwareLbSetting"), "cannot be set with localityLbSetting: keep one")
	}
	if w := lb.GetWarmup(); w != nil {
		wa := at.With("warmup")
		if w.GetDuration() == nil {
			c.errf(wa.With("duration"), "is required: say how long a new endpoint warms up (e.g. 60s)")
		}
		c.duration(wa.With("duration"), w.GetDuration())
		if mp := w.GetMinimumPercent(); mp != nil && mp.GetValue() > 100 {
			c.errf(wa.With("minimumPercent"), "%v is more than 100: use a percentage from 0 to 100", mp.GetValue())
		}
		if ag := w.GetAggression(); ag != nil && ag.GetValue() <= 0 {
			c.errf(wa.With("aggression"), "%v is not positive: use a value above 0 (1 ramps up linearly)", ag.GetValue())
		}
	}
	c.localityLB(at.With("localityLbSetting"), lb.GetLocalityLbSetting(), od)
	c.zoneAwareLB(at.With("zoneAwareLbSetting"), lb.GetZoneAwareLbSetting(), od)
}

// maglevMaxTableSize bounds a Maglev table size (istiod's and Envoy's limit: 5000011, itself
// a prime, is too large).
const maglevMaxTableSize = 5000011

// isPrime is the primality test istiod and Envoy apply to a Maglev table size; as theirs, it
// counts 1 a prime (and 0 not).
func isPrime(n uint64) bool {
	if n < 4 {
		return n != 0
	}
	if n%2 == 0 {
		return false
	}
	for f := uint64(3); f*f <= n; f += 2 {
		if n%f == 0 {
			return false
		}
	}
	return true
}

// MaglevTableSize reports whether n is a Maglev table size istiod and Envoy accept: a prime
// (1 counts) below 5000011. The generator sends only such a size.
func MaglevTableSize(n uint64) bool { return n < maglevMaxTableSize && isPrime(n) }

// nextPrime is the smallest prime above n (n below maglevMaxTableSize, so the answer is at
// most maglevMaxTableSize).
func nextPrime(n uint64) uint64 {
	for n++; !isPrime(n); n++ {
	}
	return n
}

// policyParts mirrors istiod's validateConnectionPool and validateOutlierDetection.
func (c *checker) policyParts(at Path, cp *networking.ConnectionPoolSettings, od *networking.OutlierDetection) {
	c.connectionPool(at.With("connectionPool"), cp)
	if od != nil {
		oa := at.With("outlierDetection")
		//nolint:staticcheck // the deprecated field is what the rule is about
		if od.GetConsecutiveErrors() != 0 {
			c.warnf(oa.With("consecutiveErrors"), "is deprecated and %s (istiod ignores it too): use consecutive5xxErrors or consecutiveGatewayErrors", notGenerated)
		}
		if !od.GetSplitExternalLocalOriginErrors() && od.GetConsecutiveLocalOriginFailures().GetValue() > 0 {
			c.errf(oa.With("consecutiveLocalOriginFailures"), "has no effect unless splitExternalLocalOriginErrors is true: set it, or remove this field")
		}
		c.duration(oa.With("interval"), od.GetInterval())
		c.duration(oa.With("baseEjectionTime"), od.GetBaseEjectionTime())
		if v := od.GetMaxEjectionPercent(); v < 0 || v > 100 {
			c.errf(oa.With("maxEjectionPercent"), "%d is not a percentage: use 0 to 100", v)
		}
		if v := od.GetMinHealthPercent(); v < 0 || v > 100 {
			c.errf(oa.With("minHealthPercent"), "%d is not a percentage: use 0 to 100", v)
		}
	}
}

// connectionPool mirrors istiod's validateConnectionPool (of a traffic policy, a port's, or a
// Sidecar's inbound pools); at is the pool's path.
func (c *checker) connectionPool(pa Path, cp *networking.ConnectionPoolSettings) {
	if cp == nil {
		return
	}
	if cp.GetTcp() == nil && cp.GetHttp() == nil {
		c.errf(pa, "is empty: set tcp or http settings, or remove it")
	}
	if t := cp.GetTcp(); t != nil {
		if t.GetMaxConnections() < 0 {
			c.errf(pa.With("tcp", "maxConnections"), "%d is negative: use 0 (the default) or more", t.GetMaxConnections())
		}
		c.duration(pa.With("tcp", "connectTimeout"), t.GetConnectTimeout())
		c.duration(pa.With("tcp", "maxConnectionDuration"), t.GetMaxConnectionDuration())
		// istiod checks no idle timeout under 1ms (0s turns the timeout off; it reads
		// the value in whole milliseconds).
		if d := t.GetIdleTimeout(); d != nil && d.AsDuration().Milliseconds() != 0 {
			c.duration(pa.With("tcp", "idleTimeout"), d)
		}
		if ka := t.GetTcpKeepalive(); ka != nil {
			c.duration(pa.With("tcp", "tcpKeepalive", "time"), ka.GetTime())
			c.duration(pa.With("tcp", "tcpKeepalive", "interval"), ka.GetInterval())
		}
	}
	if h := cp.GetHttp(); h != nil {
		for name, v := range map[string]int32{"http1MaxPendingRequests": h.GetHttp1MaxPendingRequests(),
			"http2MaxRequests": h.GetHttp2MaxRequests(), "maxRequestsPerConnection": h.GetMaxRequestsPerConnection(),
			"maxRetries": h.GetMaxRetries(), "maxConcurrentStreams": h.GetMaxConcurrentStreams()} {
			if v < 0 {
				c.errf(pa.With("http", name), "%d is negative: use 0 (the default) or more", v)
			}
		}
		c.duration(pa.With("http", "idleTimeout"), h.GetIdleTimeout())
		if ka := h.GetHttp2KeepAlive(); ka != nil {
			kaAt := pa.With("http", "http2KeepAlive")
			for _, f := range []struct {
				name string
				d    *durationpb.Duration
			}{{"interval", ka.GetInterval()}, {"timeout", ka.GetTimeout()}} {
				name, d := f.name, f.d
				if d == nil {
					c.errf(kaAt.With(name), "is required: say how often to ping and how long to wait (e.g. 30s)")
				}
				c.duration(kaAt.With(name), d)
			}
		}
		if h.GetH2UpgradePolicy() == networking.ConnectionPoolSettings_HTTPSettings_UPGRADE && h.GetUseClientProtocol() {
			c.errf(pa.With("http", "useClientProtocol"), "cannot be true with h2UpgradePolicy UPGRADE: keep one")
		}
	}
}

// ---- Sidecar (istiod: ValidateSidecar) ----

func (c *checker) sidecar(at Path, sc *networking.Sidecar) {
	if ws := sc.GetWorkloadSelector(); ws != nil {
		if len(ws.GetLabels()) == 0 {
			c.warnf(at.With("workloadSelector", "labels"), "is empty, so the Sidecar applies to every workload of the namespace: add labels, or remove the selector to say so")
		}
		c.selector(at.With("workloadSelector", "labels"), ws.GetLabels(), "workloadSelector")
	}
	if len(sc.GetEgress()) == 0 && len(sc.GetIngress()) == 0 && sc.GetOutboundTrafficPolicy() == nil && sc.GetInboundConnectionPool() == nil {
		c.errf(at, "the Sidecar configures nothing: add egress (e.g. hosts: [\"./*\"]), ingress or outboundTrafficPolicy")
	}
	ports := map[uint32]bool{}
	for i, in := range sc.GetIngress() {
		ia := at.With("ingress", i)
		if in.GetPort() == nil {
			c.errf(ia.With("port"), "is required: an ingress listener needs port: {number, protocol, name}")
		} else {
			c.sidecarPort(ia.With("port"), in.GetPort().GetNumber(), in.GetPort().GetName(), in.GetPort().GetProtocol())
			c.noTargetPort(ia.With("port"), in.GetPort())
			if ports[in.GetPort().GetNumber()] {
				c.errf(ia.With("port", "number"), "port %d has two ingress listeners: keep one", in.GetPort().GetNumber())
			}
			ports[in.GetPort().GetNumber()] = true
		}
		if b := in.GetBind(); b != "" && !isIP(b) {
			c.errf(ia.With("bind"), "%q is not an IP address", b)
		}
		if ep := in.GetDefaultEndpoint(); ep != "" {
			c.defaultEndpoint(ia.With("defaultEndpoint"), ep)
		}
		c.sidecarIngressTLS(ia, in)
		c.connectionPool(ia.With("connectionPool"), in.GetConnectionPool())
	}
	c.connectionPool(at.With("inboundConnectionPool"), sc.GetInboundConnectionPool())
	egressPorts := map[uint32]bool{}
	portless := 0
	for i, eg := range sc.GetEgress() {
		ea := at.With("egress", i)
		if eg.GetPort() == nil {
			portless++
			if portless > 1 {
				c.errf(ea.With("port"), "a second egress listener without a port: only one may omit the port")
			}
			if i != len(sc.GetEgress())-1 {
				c.errf(ea.With("port"), "the egress listener without a port must be the last one: move it to the end")
			}
		} else if c.noTargetPort(ea.With("port"), eg.GetPort()); eg.GetPort().GetNumber() == 0 {
			// Port 0 is a unix domain socket listener, named by its bind address.
			c.protocol(ea.With("port", "protocol"), eg.GetPort().GetProtocol(), false)
			switch b := eg.GetBind(); {
			case !strings.HasPrefix(b, unixPrefix):
				c.errf(ea.With("bind"), "port 0 is a unix socket listener and needs bind: unix:///path (or give the port a number)")
			default:
				if msg := unixAddressError(b); msg != "" {
					c.errf(ea.With("bind"), "%s", msg)
				}
			}
		} else {
			n := eg.GetPort().GetNumber()
			c.sidecarPort(ea.With("port"), n, eg.GetPort().GetName(), eg.GetPort().GetProtocol())
			if egressPorts[n] {
				c.errf(ea.With("port", "number"), "port %d has two egress listeners: merge their hosts", n)
			}
			egressPorts[n] = true
			if b := eg.GetBind(); b != "" && !isIP(b) {
				c.errf(ea.With("bind"), "%q is not an IP address: bind a listener to an IP (or use port 0 with a unix:// bind)", b)
			}
		}
		if len(eg.GetHosts()) == 0 {
			c.errf(ea.With("hosts"), "is required: list namespace/host entries, e.g. [\"./*\", \"istio-system/*\"]")
		}
		for j, h := range eg.GetHosts() {
			c.namespacedHost(ea.With("hosts", j), h, true)
		}
	}
	c.outboundTrafficPolicy(at.With("outboundTrafficPolicy"), sc.GetOutboundTrafficPolicy())
}

// outboundTrafficPolicy mirrors istiod's validateSidecarOutboundTrafficPolicy: an egressProxy
// only with mode ALLOW_ANY, with a fully qualified host and a port, and a valid destination.
func (c *checker) outboundTrafficPolicy(at Path, tp *networking.OutboundTrafficPolicy) {
	ep := tp.GetEgressProxy()
	if ep == nil {
		return
	}
	ea := at.With("egressProxy")
	if tp.GetMode() != networking.OutboundTrafficPolicy_ALLOW_ANY {
		c.errf(ea, "is only read with mode ALLOW_ANY (under %s unknown destinations are dropped): remove it or set mode: ALLOW_ANY", tp.GetMode())
		return
	}
	if msg := fqdnError(ep.GetHost()); msg != "" {
		c.errf(ea.With("host"), "%s", msg)
	}
	if ep.GetPort() == nil {
		c.errf(ea.With("port"), "is required: unknown destinations go to cluster outbound|PORT||HOST, so name the egress proxy's port ({number: 3128})")
		return
	}
	c.destination(ea, ep)
}

// noTargetPort mirrors istiod's ValidateSidecar: a Sidecar port's (deprecated) targetPort is
// refused, as a Sidecar listener forwards to no other port.
func (c *checker) noTargetPort(at Path, p *networking.SidecarPort) {
	//nolint:staticcheck // the deprecated field is what the rule is about
	if p.GetTargetPort() > 0 {
		c.errf(at.With("targetPort"), "has no effect on a Sidecar listener: remove it")
	}
}

// sidecarIngressTLS mirrors istiod's ValidateSidecar for an ingress listener's tls: only on
// an HTTPS or TLS port, in a mode other than ISTIO_MUTUAL or AUTO_PASSTHROUGH, with
// certificate files (no credentials, subject alt names or HTTPS redirect), and as a Gateway
// server's TLS settings otherwise.
func (c *checker) sidecarIngressTLS(ia Path, in *networking.IstioIngressListener) {
	tls := in.GetTls()
	if tls == nil {
		return
	}
	ta := ia.With("tls")
	for _, f := range []struct {
		set  bool
		name string
	}{
		{len(tls.GetSubjectAltNames()) > 0, "subjectAltNames"},
		{tls.GetHttpsRedirect(), "httpsRedirect"},
		{tls.GetCredentialName() != "", "credentialName"},
		{len(tls.GetCredentialNames()) > 0, "credentialNames"},
		{len(tls.GetTlsCertificates()) > 0, "tlsCertificates"},
	} {
		if f.set {
			c.errf(ta.With(f.name), "is not supported on a Sidecar ingress listener: remove it (use serverCertificate, privateKey and caCertificates files)")
		}
	}
	if m := tls.GetMode(); m == networking.ServerTLSSettings_ISTIO_MUTUAL || m == networking.ServerTLSSettings_AUTO_PASSTHROUGH {
		c.errf(ta.With("mode"), "%s is not supported on a Sidecar ingress listener: use SIMPLE or MUTUAL with certificate files, or remove tls", m)
	}
	if p := strings.ToUpper(in.GetPort().GetProtocol()); p != "HTTPS" && p != "TLS" {
		c.errf(ta, "applies to HTTPS or TLS ports only, not %s: set the port's protocol to HTTPS or TLS, or remove tls", cmp.Or(in.GetPort().GetProtocol(), "a port without protocol"))
	}
	c.serverTLS(ta, tls)
}

func (c *checker) sidecarPort(at Path, n uint32, name, proto string) {
	c.port(at.With("number"), n)
	if name != "" && !isDNSLabel(name) {
		c.errf(at.With("name"), "%q is not a valid port name: use letters, digits and '-'", name)
	}
	c.protocol(at.With("protocol"), proto, false)
}

// defaultEndpoint mirrors istiod's Sidecar ingress validation: 127.0.0.1:PORT, 0.0.0.0:PORT,
// [::1]:PORT, [::]:PORT, :PORT (no host: the port's cluster is ORIGINAL_DST, as without a
// defaultEndpoint) or a unix socket; no other host, not even another loopback address.
func (c *checker) defaultEndpoint(at Path, ep string) {
	if strings.HasPrefix(ep, unixPrefix) {
		if msg := unixAddressError(ep); msg != "" {
			c.errf(at, "%s", msg)
		}
		return
	}
	host, portText, err := net.SplitHostPort(ep)
	port, perr := strconv.Atoi(portText) // as istiod: "+8080" is 8080
	if err != nil || perr != nil || port < 1 || port > 65535 || !slices.Contains([]string{"", "127.0.0.1", "0.0.0.0", "::1", "::"}, host) {
		c.errf(at, "%q is not a local endpoint: use 127.0.0.1:PORT, 0.0.0.0:PORT, :PORT or unix:///socket", ep)
	}
}

// namespacedHost mirrors istiod's validateNamespaceSlashWildcardHostname: namespace/host with
// the namespace "*", "." (this namespace) or a name, in a Sidecar also "~"-prefixed (an
// exclusion: "~/h" and "~*/h" in any namespace, "~./h" and "~NS/h"), and the host "*" or a
// host name with an optional wildcard prefix.
func (c *checker) namespacedHost(at Path, h string, sidecar bool) {
	ns, host, ok := strings.Cut(h, "/")
	if !ok {
		if sidecar {
			c.errf(at, "%q has no namespace: write namespace/host, e.g. \"./%s\" or \"*/%s\"", h, h, h)
			return
		}
		ns, host = "*", h // a Gateway host without a namespace means any namespace
	}
	if rest, excl := strings.CutPrefix(ns, "~"); excl {
		if !sidecar {
			c.errf(at, "%q: \"~\" (an exclusion) is only allowed in a Sidecar", h)
			return
		}
		ns = cmp.Or(rest, "*")
	}
	switch {
	case ns == "*", ns == ".":
	case !isDNSLabel(ns):
		c.errf(at, "%q: %q is not a namespace: use \"*\", \".\" or a namespace name", h, ns)
		return
	}
	if host == "*" {
		return
	}
	if msg := hostError(host); msg != "" {
		c.errf(at, "%s", msg)
	} else if !strings.Contains(host, ".") {
		// istiod's validateSidecarOrGatewayHostnamePart: the host is matched as written.
		c.errf(at, "%q: %q is a short host name, which is not allowed here: write the full name (NAME.NAMESPACE.svc.cluster.local for a Kubernetes service)", h, host)
	}
}

// ---- Gateway (istiod: ValidateGateway) ----

func (c *checker) gateway(at Path, gw *networking.Gateway) {
	c.selector(at.With("selector"), gw.GetSelector(), "selector")
	if len(gw.GetServers()) == 0 {
		c.errf(at.With("servers"), "is required: add at least one server with port and hosts")
	}
	names := map[string]bool{}
	for i, s := range gw.GetServers() {
		sa := at.With("servers", i)
		if s == nil {
			c.errf(sa, "is empty: give the server a port and hosts")
			continue
		}
		if len(s.GetHosts()) == 0 {
			c.errf(sa.With("hosts"), "is required: list the hosts this server exposes (\"*\" for any)")
		}
		for j, h := range s.GetHosts() {
			c.namespacedHost(sa.With("hosts", j), h, false)
		}
		p := s.GetPort()
		if p == nil {
			c.errf(sa.With("port"), "is required: set port: {number, name, protocol}")
			continue
		}
		// istiod's validateServerPort and validateServerBind: a server bound to a unix socket
		// has port 0 (its listener is named by the socket), any other a port.
		unixBind := strings.HasPrefix(s.GetBind(), unixPrefix)
		switch {
		case unixBind && p.GetNumber() != 0:
			c.errf(sa.With("port", "number"), "must be 0 for a server bound to a unix socket (%s): set number: 0, or bind to an IP address", s.GetBind())
		case !unixBind:
			c.port(sa.With("port", "number"), p.GetNumber())
		}
		c.protocol(sa.With("port", "protocol"), p.GetProtocol(), true)
		if p.GetName() == "" {
			c.errf(sa.With("port", "name"), "is required: name the server's port, e.g. http-%d", p.GetNumber())
		}
		switch b := s.GetBind(); {
		case unixBind:
			if msg := unixAddressError(b); msg != "" {
				c.errf(sa.With("bind"), "%s", msg)
			} else if p.GetNumber() == 0 {
				c.warnf(sa.With("bind"), "a Gateway server on a unix socket is %s (istiod builds a listener on the socket; xdslab builds none for port 0)", notGenerated)
			}
		case b != "" && !isIP(b):
			c.errf(sa.With("bind"), "%q is not an IP address: bind the server to an IP address, or remove bind", b)
		}
		if p.GetName() != "" {
			if names[p.GetName()] {
				c.errf(sa.With("port", "name"), "port name %q is used by another server: give each server port its own name", p.GetName())
			}
			names[p.GetName()] = true
		}
		//nolint:staticcheck // the deprecated field is what the rule is about
		if p.GetTargetPort() > 0 {
			c.errf(sa.With("port", "targetPort"), "has no effect on a Gateway server: remove it")
		}
		proto := strings.ToUpper(p.GetProtocol())
		tls := s.GetTls()
		if (proto == "HTTPS" || proto == "TLS") && tls == nil {
			c.errf(sa.With("tls"), "is required for protocol %s: add tls: {mode: SIMPLE, credentialName: ...} (or mode: PASSTHROUGH)", p.GetProtocol())
		}
		if tls == nil {
			continue
		}
		ta := sa.With("tls")
		httpProto := slices.Contains([]string{"HTTP", "HTTP2", "HTTP_PROXY", "GRPC", "GRPC-WEB"}, proto)
		switch {
		case proto == "HTTPS" || proto == "TLS" || !slices.Contains(protocols, proto):
		case !httpProto:
			// istiod's validateServer: TLS settings on a port of another protocol.
			c.errf(ta, "applies to HTTPS or TLS servers only, not %s: set the port's protocol to HTTPS or TLS, or remove tls", p.GetProtocol())
		case (tls.GetMode() != networking.ServerTLSSettings_PASSTHROUGH && tls.GetMode() != networking.ServerTLSSettings_AUTO_PASSTHROUGH) ||
			tls.GetCaCertificates() != "" || tls.GetPrivateKey() != "" || tls.GetServerCertificate() != "":
			// An HTTP server takes tls for httpsRedirect only (the default mode, PASSTHROUGH).
			c.errf(ta, "a plain text %s server terminates no TLS: keep only httpsRedirect in tls (without a mode or certificates), or make the port HTTPS", p.GetProtocol())
		}
		if tls.GetHttpsRedirect() && !httpProto {
			c.warnf(ta.With("httpsRedirect"), "is meant for HTTP servers (istiod admits it on a %s server with a warning): remove it", p.GetProtocol())
		}
		c.serverTLS(ta, tls)
	}
}

// serverTLS mirrors istiod's validateTLSOptions for a Gateway server's certificates:
// ISTIO_MUTUAL takes the mesh's certificates and admits no other source; a server names at most
// one certificate source (credentialName, credentialNames, serverCertificate/privateKey,
// tlsCertificates); SIMPLE and (OPTIONAL_)MUTUAL without a credential need a certificate and key
// in each source entry, and the mutual modes a CA bundle.
func (c *checker) serverTLS(ta Path, tls *networking.ServerTLSSettings) {
	mode := tls.GetMode()
	c.serverCipherSuites(ta, tls)
	if mode == networking.ServerTLSSettings_ISTIO_MUTUAL {
		for _, f := range []struct {
			set  bool
			name string
		}{
			{tls.GetServerCertificate() != "", "serverCertificate"},
			{tls.GetPrivateKey() != "", "privateKey"},
			{tls.GetCaCertificates() != "", "caCertificates"},
			{len(tls.GetTlsCertificates()) > 0, "tlsCertificates"},
			{tls.GetCredentialName() != "", "credentialName"},
			{len(tls.GetCredentialNames()) > 0, "credentialNames"},
		} {
			if f.set {
				c.errf(ta.With(f.name), "mode ISTIO_MUTUAL uses the mesh's certificates: remove %s (or use mode MUTUAL)", f.name)
			}
		}
		return
	}
	var sources []string
	if tls.GetServerCertificate() != "" && tls.GetPrivateKey() != "" {
		sources = append(sources, "serverCertificate/privateKey")
	}
	if tls.GetCredentialName() != "" {
		sources = append(sources, "credentialName")
	}
	if len(tls.GetCredentialNames()) > 0 {
		sources = append(sources, "credentialNames")
	}
	if len(tls.GetTlsCertificates()) > 0 {
		sources = append(sources, "tlsCertificates")
	}
	if len(sources) > 1 {
		c.errf(ta, "sets %s: give the server one certificate source only", strings.Join(sources, " and "))
	}
	terminating := mode == networking.ServerTLSSettings_SIMPLE || mode == networking.ServerTLSSettings_MUTUAL ||
		mode == networking.ServerTLSSettings_OPTIONAL_MUTUAL
	if terminating && (tls.GetCredentialName() != "" || len(tls.GetCredentialNames()) > 0) {
		// The certificates come from the credential: istiod checks nothing more, the CRL included.
		return
	}
	if tls.GetCaCrl() != "" {
		if tls.GetCredentialName() != "" {
			c.errf(ta.With("caCrl"), "cannot be used with credentialName: put the CRL in the credential")
		}
		if mode == networking.ServerTLSSettings_SIMPLE {
			c.errf(ta.With("caCrl"), "is not supported with mode SIMPLE, which verifies no client: remove it")
		}
	}
	if !terminating {
		return
	}
	if mode != networking.ServerTLSSettings_SIMPLE && tls.GetCaCertificates() == "" {
		c.errf(ta.With("caCertificates"), "mode %s verifies clients and needs CA certificates: set caCertificates or credentialName", mode)
	}
	if certs := tls.GetTlsCertificates(); len(certs) > 0 {
		for i, cert := range certs {
			ca := ta.With("tlsCertificates", i)
			if cert.GetServerCertificate() == "" {
				c.errf(ca.With("serverCertificate"), "is required: each tlsCertificates entry needs a certificate and a private key")
			}
			if cert.GetPrivateKey() == "" {
				c.errf(ca.With("privateKey"), "is required: each tlsCertificates entry needs a certificate and a private key")
			}
		}
		return
	}
	if tls.GetServerCertificate() == "" {
		c.errf(ta.With("serverCertificate"), "mode %s needs a certificate: set credentialName, serverCertificate and privateKey, or tlsCertificates", mode)
	}
	if tls.GetPrivateKey() == "" {
		c.errf(ta.With("privateKey"), "mode %s needs a private key: set credentialName, serverCertificate and privateKey, or tlsCertificates", mode)
	}
}

// peerAuthentication mirrors istiod's ValidatePeerAuthentication: port-level modes only with a
// workload selector (a mesh- or namespace-wide policy has no ports of its own), no port 0 or
// beyond 65535, and a valid selector.
func (c *checker) peerAuthentication(at Path, pa *securityapi.PeerAuthentication) {
	sel := pa.GetSelector().GetMatchLabels()
	if pa.PortLevelMtls != nil && len(pa.PortLevelMtls) == 0 {
		c.errf(at.With("portLevelMtls"), "is empty: list ports with their mode, or remove it")
	}
	if len(pa.GetPortLevelMtls()) > 0 && len(sel) == 0 {
		c.errf(at.With("portLevelMtls"), "a mesh- or namespace-wide PeerAuthentication (no selector) cannot set port-level mTLS: add selector.matchLabels or remove portLevelMtls")
	}
	for _, port := range slices.Sorted(maps.Keys(pa.GetPortLevelMtls())) {
		if port == 0 || port > 65535 {
			c.errf(at.With("portLevelMtls", strconv.FormatUint(uint64(port), 10)), "port %d is not in 1..65535", port)
		}
	}
	c.selector(at.With("selector", "matchLabels"), sel, "PeerAuthentication selector")
}
