package probe

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// Op names what a Predicate checks.
type Op string

// The predicate operations. Each names the resource type it reads (see Op.TypeURL).
const (
	// EndpointPresent: ClusterLoadAssignment Resource has an lb endpoint Address:Port.
	EndpointPresent Op = "endpoint-present"
	// EndpointAbsent: ClusterLoadAssignment Resource has no lb endpoint Address:Port
	// (an absent assignment counts as absent).
	EndpointAbsent Op = "endpoint-absent"
	// EndpointCount: ClusterLoadAssignment Resource has exactly Count lb endpoints.
	EndpointCount Op = "endpoint-count"
	// ClusterPresent: Cluster Resource exists.
	ClusterPresent Op = "cluster-present"
	// ClusterAbsent: Cluster Resource does not exist.
	ClusterAbsent Op = "cluster-absent"
	// ClusterLbPolicy: Cluster Resource exists with lb_policy Value (Envoy enum name, e.g.
	// "LEAST_REQUEST").
	ClusterLbPolicy Op = "cluster-lb-policy"
	// ListenerPresent / ListenerAbsent: Listener Resource exists / does not.
	ListenerPresent Op = "listener-present"
	ListenerAbsent  Op = "listener-absent"
	// RouteTo: RouteConfiguration Resource has a virtual host whose domains contain Host and a
	// route on it that sends traffic to Cluster (directly or as one weighted cluster); with
	// Weight > 0 the weighted cluster must carry exactly that weight.
	RouteTo Op = "route-to"
	// ListenerRBACPolicies: Listener Resource holds exactly Count distinct RBAC policies whose
	// names start with Value, counted over every RBAC filter of its filter chains (the HTTP
	// filters of each HTTP connection manager and the network filters; rules and shadow rules).
	// An absent listener holds none. Istio names the policy of rule i of AuthorizationPolicy
	// NAME in NS "ns[NS]-policy[NAME]-rule[i]", so Value "ns[NS]-policy[NAME]-rule[" with
	// Count n says the proxy holds that policy's n rules (0: it holds no rule of it).
	ListenerRBACPolicies Op = "listener-rbac-policies"
)

// Predicate is one fact about a client's accepted resources.
type Predicate struct {
	Op       Op     `json:"op"`
	Resource string `json:"resource"`
	Address  string `json:"address,omitempty"`
	Port     uint32 `json:"port,omitempty"`
	Count    int    `json:"count,omitempty"`
	Host     string `json:"host,omitempty"`
	Cluster  string `json:"cluster,omitempty"`
	Weight   uint32 `json:"weight,omitempty"`
	Value    string `json:"value,omitempty"`
}

// TypeURL is the xDS type the operation reads.
func (o Op) TypeURL() string {
	switch o {
	case EndpointPresent, EndpointAbsent, EndpointCount:
		return resource.EndpointType
	case ClusterPresent, ClusterAbsent, ClusterLbPolicy:
		return resource.ClusterType
	case ListenerPresent, ListenerAbsent, ListenerRBACPolicies:
		return resource.ListenerType
	case RouteTo:
		return resource.RouteType
	}
	return ""
}

// Validate reports a predicate that names an unknown op or lacks the fields its op needs.
func (p Predicate) Validate() error {
	if p.Op.TypeURL() == "" {
		return fmt.Errorf("probe: unknown op %q", p.Op)
	}
	if p.Resource == "" {
		return fmt.Errorf("probe: %s needs a resource name", p.Op)
	}
	switch p.Op {
	case EndpointPresent, EndpointAbsent:
		if p.Address == "" || p.Port == 0 {
			return fmt.Errorf("probe: %s needs address and port", p.Op)
		}
	case EndpointCount:
		if p.Count < 0 {
			return fmt.Errorf("probe: %s needs a count >= 0", p.Op)
		}
	case ClusterLbPolicy:
		if _, ok := clusterv3.Cluster_LbPolicy_value[p.Value]; !ok {
			return fmt.Errorf("probe: %s: unknown lb policy %q", p.Op, p.Value)
		}
	case RouteTo:
		if p.Host == "" || p.Cluster == "" {
			return fmt.Errorf("probe: %s needs host and cluster", p.Op)
		}
	case ListenerRBACPolicies:
		if p.Value == "" || p.Count < 0 {
			return fmt.Errorf("probe: %s needs value (an RBAC policy name prefix) and a count >= 0", p.Op)
		}
	}
	return nil
}

// Subject identifies what a predicate is about, so that a later expectation about the same
// subject supersedes an earlier one a client has not yet observed (an endpoint removed and
// re-added before a client saw the removal, say). Predicates with equal subjects conflict.
func (p Predicate) Subject() string {
	// Concatenation, not fmt: the fleet compares subjects for every pending expectation.
	switch p.Op {
	case EndpointPresent, EndpointAbsent:
		return "eds/" + p.Resource + "/" + p.Address + ":" + strconv.FormatUint(uint64(p.Port), 10)
	case EndpointCount:
		return "eds-count/" + p.Resource
	case ClusterPresent, ClusterAbsent:
		return "cds/" + p.Resource
	case ClusterLbPolicy:
		return "cds-lb/" + p.Resource
	case ListenerPresent, ListenerAbsent:
		return "lds/" + p.Resource
	case RouteTo:
		// The virtual host, not the cluster: where a host routes is one state, so a later
		// re-binding of the host to another cluster conflicts with an earlier one (a push that
		// carries both shows only the later). Weighted destinations of one change share it.
		return "rds/" + p.Resource + "/" + p.Host
	case ListenerRBACPolicies:
		return "lds-rbac/" + p.Resource + "/" + p.Value
	}
	return string(p.Op) + "/" + p.Resource
}

// Scope is the service port a predicate is about: the cluster it reads (or, for RouteTo, the
// cluster it routes to) with the subset left out of Istio's "outbound|PORT|SUBSET|HOST" name, so
// that the assignment, lb policy and routes of every subset of a service port share one scope.
// A cluster name not in that form is its own scope. ListenerAbsent/Present and
// ListenerRBACPolicies read listeners, not a service port: their scope is "".
func (p Predicate) Scope() string {
	switch p.Op {
	case ListenerPresent, ListenerAbsent, ListenerRBACPolicies:
		return ""
	case RouteTo:
		return serviceScope(p.Cluster)
	}
	return serviceScope(p.Resource)
}

// serviceScope is cluster name c without its subset ("outbound|80|v1|h" → "outbound|80||h").
func serviceScope(c string) string {
	dir, rest, ok := strings.Cut(c, "|")
	if !ok {
		return c
	}
	port, rest, ok := strings.Cut(rest, "|")
	if !ok {
		return c
	}
	subset, host, ok := strings.Cut(rest, "|")
	if !ok || subset == "" || strings.Contains(host, "|") {
		return c
	}
	return dir + "|" + port + "||" + host
}

// Removes is the scope (see Scope) a predicate says is gone: ClusterAbsent of a service port's
// own cluster (no subset) says the service port was deleted, and with it its assignment, its
// subsets and the routes to it. ok is false for any other predicate.
func (p Predicate) Removes() (scope string, ok bool) {
	if p.Op != ClusterAbsent || serviceScope(p.Resource) != p.Resource {
		return "", false
	}
	return p.Resource, true
}

// RemovedBy reports whether removal r (a predicate with Removes) takes away the resource q is
// about, q being another subject than r's: q reads r's scope.
func (q Predicate) RemovedBy(r Predicate) bool {
	scope, ok := r.Removes()
	return ok && q.Scope() == scope && q.Subject() != r.Subject()
}

func (p Predicate) String() string {
	switch p.Op {
	case EndpointPresent:
		return fmt.Sprintf("ClusterLoadAssignment %s contains %s:%d", p.Resource, p.Address, p.Port)
	case EndpointAbsent:
		return fmt.Sprintf("ClusterLoadAssignment %s lacks %s:%d", p.Resource, p.Address, p.Port)
	case EndpointCount:
		return fmt.Sprintf("ClusterLoadAssignment %s has %d endpoints", p.Resource, p.Count)
	case ClusterPresent:
		return fmt.Sprintf("cluster %s present", p.Resource)
	case ClusterAbsent:
		return fmt.Sprintf("cluster %s absent", p.Resource)
	case ClusterLbPolicy:
		return fmt.Sprintf("cluster %s has lb policy %s", p.Resource, p.Value)
	case ListenerPresent:
		return fmt.Sprintf("listener %s present", p.Resource)
	case ListenerAbsent:
		return fmt.Sprintf("listener %s absent", p.Resource)
	case RouteTo:
		s := fmt.Sprintf("route config %s routes %s to %s", p.Resource, p.Host, p.Cluster)
		if p.Weight > 0 {
			s += fmt.Sprintf(" (weight %d)", p.Weight)
		}
		return s
	case ListenerRBACPolicies:
		return fmt.Sprintf("listener %s holds %d RBAC policies %s*", p.Resource, p.Count, p.Value)
	}
	return fmt.Sprintf("%s %s", p.Op, p.Resource)
}

// View is a client's set of accepted resources, decoded. Resource returns nil when the client
// holds no resource of that type and name. A message it returns is never modified afterwards
// (a new version of a resource is a new message): the matcher remembers answers by message.
type View interface {
	Resource(typeURL, name string) proto.Message
}

// Holds evaluates the predicate against v.
func (p Predicate) Holds(v View) bool { return p.HoldsOn(v.Resource(p.Op.TypeURL(), p.Resource)) }

// HoldsOn evaluates the predicate against m, its resource's message in a view (nil: the view
// holds no such resource).
func (p Predicate) HoldsOn(m proto.Message) bool {
	switch p.Op {
	case EndpointPresent, EndpointAbsent:
		cla, _ := m.(*endpointv3.ClusterLoadAssignment)
		found := cla != nil && claHas(cla, p.Address, p.Port)
		return found == (p.Op == EndpointPresent)
	case EndpointCount:
		cla, _ := m.(*endpointv3.ClusterLoadAssignment)
		if cla == nil {
			return p.Count == 0
		}
		n := 0
		for _, le := range cla.GetEndpoints() {
			n += len(le.GetLbEndpoints())
		}
		return n == p.Count
	case ClusterPresent:
		_, ok := m.(*clusterv3.Cluster)
		return ok
	case ClusterAbsent:
		return m == nil
	case ClusterLbPolicy:
		c, ok := m.(*clusterv3.Cluster)
		return ok && c.GetLbPolicy().String() == p.Value
	case ListenerPresent:
		_, ok := m.(*listenerv3.Listener)
		return ok
	case ListenerAbsent:
		return m == nil
	case RouteTo:
		rc, _ := m.(*routev3.RouteConfiguration)
		return rc != nil && routesTo(rc, p.Host, p.Cluster, p.Weight)
	case ListenerRBACPolicies:
		l, _ := m.(*listenerv3.Listener)
		return rbacPolicies(l, p.Value) == p.Count
	}
	return false
}

// RBAC filter type URLs, HTTP and network, and the field numbers rbacPolicies walks, read
// from the descriptors.
var (
	httpRBACType    = "type.googleapis.com/" + string((&rbachttpv3.RBAC{}).ProtoReflect().Descriptor().FullName())
	networkRBACType = "type.googleapis.com/" + string((&rbactcpv3.RBAC{}).ProtoReflect().Descriptor().FullName())
	hcmType         = "type.googleapis.com/" + string((&hcmv3.HttpConnectionManager{}).ProtoReflect().Descriptor().FullName())

	fieldHTTPFilters     = fieldNum(&hcmv3.HttpConnectionManager{}, "http_filters")
	fieldFilterTypedCfg  = fieldNum(&hcmv3.HttpFilter{}, "typed_config")
	fieldAnyTypeURL      = fieldNum(&anypb.Any{}, "type_url")
	fieldAnyValue        = fieldNum(&anypb.Any{}, "value")
	fieldHTTPRules       = fieldNum(&rbachttpv3.RBAC{}, "rules")
	fieldHTTPShadowRules = fieldNum(&rbachttpv3.RBAC{}, "shadow_rules")
	fieldNetRules        = fieldNum(&rbactcpv3.RBAC{}, "rules")
	fieldNetShadowRules  = fieldNum(&rbactcpv3.RBAC{}, "shadow_rules")
	fieldRBACPolicies    = fieldNum(&rbacv3.RBAC{}, "policies")
	fieldMapKey          = protowire.Number(1) // map entries: key 1, value 2
)

func fieldNum(m proto.Message, name protoreflect.Name) protowire.Number {
	return m.ProtoReflect().Descriptor().Fields().ByName(name).Number()
}

// rbacPolicies counts the distinct RBAC policy names starting with prefix over l's RBAC
// filters (rules and shadow rules). It is evaluated on every listener response a client with a
// pending expectation gets, so it reads the typed_configs' wire bytes instead of decoding them:
// a filter whose bytes do not contain the prefix is skipped, and only the policies' map keys
// are read. Filters are recognised by their typed_config's type; bytes that do not parse count
// nothing.
func rbacPolicies(l *listenerv3.Listener, prefix string) int {
	pfx := []byte(prefix)
	seen := map[string]struct{}{}
	policies := func(rbac []byte) {
		eachBytes(rbac, fieldRBACPolicies, func(entry []byte) {
			eachBytes(entry, fieldMapKey, func(key []byte) {
				if bytes.HasPrefix(key, pfx) {
					if _, ok := seen[string(key)]; !ok {
						seen[string(key)] = struct{}{}
					}
				}
			})
		})
	}
	filter := func(v []byte, rules, shadow protowire.Number) {
		eachBytes(v, rules, policies)
		eachBytes(v, shadow, policies)
	}
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			if !bytes.Contains(tc.GetValue(), pfx) {
				continue
			}
			switch tc.GetTypeUrl() {
			case networkRBACType:
				filter(tc.GetValue(), fieldNetRules, fieldNetShadowRules)
			case hcmType:
				eachBytes(tc.GetValue(), fieldHTTPFilters, func(hf []byte) {
					eachBytes(hf, fieldFilterTypedCfg, func(anyb []byte) {
						var url string
						eachBytes(anyb, fieldAnyTypeURL, func(u []byte) { url = string(u) })
						if url == httpRBACType {
							eachBytes(anyb, fieldAnyValue, func(v []byte) { filter(v, fieldHTTPRules, fieldHTTPShadowRules) })
						}
					})
				})
			}
		}
	}
	return len(seen)
}

// eachBytes calls fn with the payload of every length-delimited field num of the message b,
// in order; it stops at bytes that do not parse.
func eachBytes(b []byte, num protowire.Number, fn func([]byte)) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return
			}
			fn(v)
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return
		}
		b = b[l:]
	}
}

func claHas(cla *endpointv3.ClusterLoadAssignment, addr string, port uint32) bool {
	for _, le := range cla.GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			if sa.GetAddress() == addr && sa.GetPortValue() == port {
				return true
			}
		}
	}
	return false
}

func routesTo(rc *routev3.RouteConfiguration, host, cluster string, weight uint32) bool {
	for _, vh := range rc.GetVirtualHosts() {
		if !hasDomain(vh.GetDomains(), host) {
			continue
		}
		for _, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			if ra == nil {
				continue
			}
			if ra.GetCluster() == cluster && weight == 0 {
				return true
			}
			for _, wc := range ra.GetWeightedClusters().GetClusters() {
				if wc.GetName() == cluster && (weight == 0 || wc.GetWeight().GetValue() == weight) {
					return true
				}
			}
		}
	}
	return false
}

func hasDomain(domains []string, host string) bool {
	for _, d := range domains {
		if strings.EqualFold(d, host) {
			return true
		}
	}
	return false
}

// Reach says which clients an event should reach. The zero value means every client.
type Reach struct {
	// Groups limits the event to clients of these fleet groups (scenario client names).
	Groups []string `json:"groups,omitempty"`
	// Namespaces limits the event to clients whose proxy namespace is listed (Sidecar scoping).
	Namespaces []string `json:"namespaces,omitempty"`
	// WatchersOnly limits the event to clients that subscribe to every predicate's resource
	// (named subscriptions: proxyless gRPC clients, EDS/RDS of scoped sidecars).
	WatchersOnly bool `json:"watchersOnly,omitempty"`
	// ProxyType limits the event to clients of one Istio proxy type, the first field of the node
	// id: ProxySidecar (also proxyless gRPC clients, and clients of unknown type) or ProxyRouter
	// (gateways). Empty reaches both.
	ProxyType string `json:"proxyType,omitempty"`
	// PredicateNamespaces, when set, has one entry per predicate of the expectation (All): entry
	// i limits predicate i to sidecars whose namespace is listed, as Namespaces does for the
	// whole event (an empty entry limits nothing). An event that changes services of several
	// namespaces uses it under Sidecar scoping: a sidecar sees only some of those services, so it
	// is held to the predicates it can see, and one that can see none is not reached. Routers
	// are held to every predicate.
	PredicateNamespaces [][]string `json:"predicateNamespaces,omitempty"`
}

// Applies reports whether predicate i of the expectation concerns a client of the given proxy
// type in namespace (see PredicateNamespaces).
func (r Reach) Applies(i int, namespace, proxyType string) bool {
	if i >= len(r.PredicateNamespaces) || len(r.PredicateNamespaces[i]) == 0 || proxyType == ProxyRouter {
		return true
	}
	return contains(r.PredicateNamespaces[i], namespace)
}

// Proxy types for Reach.ProxyType.
const (
	ProxySidecar = "sidecar"
	ProxyRouter  = "router"
)

// Includes reports whether a client of group in namespace, of the given proxy type, is in reach
// (subscription is checked by the fleet, which knows what each client watches). Namespaces
// concern sidecars only: Sidecar scoping does not apply to routers.
func (r Reach) Includes(group, namespace, proxyType string) bool {
	if proxyType != ProxyRouter {
		proxyType = ProxySidecar
	}
	return (len(r.Groups) == 0 || contains(r.Groups, group)) &&
		(r.ProxyType == "" || r.ProxyType == proxyType) &&
		(len(r.Namespaces) == 0 || proxyType == ProxyRouter || contains(r.Namespaces, namespace))
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// Expectation is what a simulator event must produce at the clients it reaches. Every
// predicate must hold at once for the event to count as delivered to a client.
type Expectation struct {
	EventID   uint64      `json:"id"`
	Kind      string      `json:"kind"`
	Scheduled time.Time   `json:"scheduled"`
	T0        time.Time   `json:"t0"`
	All       []Predicate `json:"all"`
	// Rest holds the predicates a cap on All left out (the simulator's MaxPredicates): the
	// state the event leaves on the rest of what it changed. They never decide whether a
	// client received the event, and Reach.PredicateNamespaces does not cover them. A matcher
	// reads them only to tell that a client has moved past an earlier event on one of their
	// subjects (without them, a restore that a zone failure over hundreds of services changed
	// again before any client saw it would wait forever for a state no client can reach), and,
	// for a service deletion, which ports it removes (every earlier expectation on them is
	// superseded).
	Rest  []Predicate `json:"rest,omitempty"`
	Reach Reach       `json:"reach,omitzero"`
}

// Validate checks every predicate and that there is at least one.
func (e Expectation) Validate() error {
	if len(e.All) == 0 {
		return fmt.Errorf("probe: event %d (%s) has no predicates", e.EventID, e.Kind)
	}
	for i, p := range e.All {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("event %d predicate %d: %w", e.EventID, i, err)
		}
	}
	for i, p := range e.Rest {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("event %d rest predicate %d: %w", e.EventID, i, err)
		}
	}
	if n := len(e.Reach.PredicateNamespaces); n > 0 && n != len(e.All) {
		return fmt.Errorf("probe: event %d (%s): reach.predicateNamespaces has %d entries for %d predicates: give one per predicate (an empty one limits nothing)", e.EventID, e.Kind, n, len(e.All))
	}
	return nil
}

// For returns the expectation as a client of the given proxy type in namespace must meet it:
// only the predicates that apply to it (Reach.Applies), and ok false when none does (the event
// does not reach it). Without PredicateNamespaces it is e itself.
func (e Expectation) For(namespace, proxyType string) (Expectation, bool) {
	if len(e.Reach.PredicateNamespaces) == 0 {
		return e, true
	}
	out := e
	out.All = nil
	out.Reach.PredicateNamespaces = nil
	for i, p := range e.All {
		if e.Reach.Applies(i, namespace, proxyType) {
			out.All = append(out.All, p)
		}
	}
	return out, len(out.All) > 0
}

// Holds reports whether every predicate holds in v.
func (e Expectation) Holds(v View) bool {
	for _, p := range e.All {
		if !p.Holds(v) {
			return false
		}
	}
	return true
}

// Supersedes reports whether e, a later expectation, makes an earlier unobserved one moot: they
// share a subject with a different predicate, or e removes what the earlier one is about (a
// service deleted after a change of its endpoints, lb policy or routes: Predicate.RemovedBy).
// Either way the state the earlier one waited for may never be visible to a client any more.
// It reads All only: a client that holds e need not hold Rest.
func (e Expectation) Supersedes(earlier Expectation) bool {
	for _, p := range e.All {
		for _, q := range earlier.All {
			if (p.Subject() == q.Subject() && p != q) || q.RemovedBy(p) {
				return true
			}
		}
	}
	return false
}

// TypeURLs lists the resource types the expectation reads, once each.
func (e Expectation) TypeURLs() []string {
	var out []string
	for _, p := range e.All {
		t := p.Op.TypeURL()
		if !contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
