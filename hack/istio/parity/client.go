package parity

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// Type URLs fetched.
const (
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// Proxy describes the proxy a dump is fetched as.
type Proxy struct {
	// Type is "sidecar" or "router".
	Type      string
	IP        string
	Pod       string
	Namespace string
	Labels    map[string]string
	// ServiceAccount is the SERVICE_ACCOUNT metadata (a name, not a SPIFFE id).
	ServiceAccount string
	// Locality is the node's locality ("region/zone/subzone"), empty for none.
	Locality string
	// InterceptionMode is the INTERCEPTION_MODE metadata, REDIRECT when empty (NONE: no
	// iptables, every listener binds its port).
	InterceptionMode string
	// Generator is the GENERATOR metadata, empty for none (an Envoy). "grpc" is what
	// istio-agent's gRPC bootstrap sends for a proxyless gRPC client (FetchGRPC).
	Generator string
	// NoNamespace leaves the NAMESPACE metadata out and Namespace empty: the id's third field
	// is Pod alone and its DNS domain is Domain, which should have no namespace either (a VM
	// whose agent knows none).
	NoNamespace bool
	// Domain is the id's fourth field; empty for NAMESPACE.svc.cluster.local.
	Domain string
	// NodeIP is the id's address field when it is not IP; IP is then only INSTANCE_IPS (which
	// istiod reads first).
	NodeIP string
}

// Node is the Envoy node Istio's agent sends for p: id TYPE~IP~POD.NS~NS.svc.cluster.local (but
// for NoNamespace, Domain and NodeIP) and
// the metadata istiod reads (NAMESPACE, LABELS, SERVICE_ACCOUNT, ISTIO_VERSION, CLUSTER_ID,
// INSTANCE_IPS, INTERCEPTION_MODE, …).
func (p Proxy) Node() *corev3.Node {
	labels := map[string]any{}
	for k, v := range p.Labels {
		labels[k] = v
	}
	meta := map[string]any{
		"LABELS":            labels,
		"ISTIO_VERSION":     "1.29.0",
		"CLUSTER_ID":        "Kubernetes",
		"INSTANCE_IPS":      p.IP,
		"INTERCEPTION_MODE": "REDIRECT",
		"WORKLOAD_NAME":     p.Pod,
		"MESH_ID":           "cluster.local",
	}
	if !p.NoNamespace {
		meta["NAMESPACE"] = p.Namespace
	}
	if p.InterceptionMode != "" {
		meta["INTERCEPTION_MODE"] = p.InterceptionMode
	}
	if p.ServiceAccount != "" {
		meta["SERVICE_ACCOUNT"] = p.ServiceAccount
	}
	if p.Generator != "" {
		meta["GENERATOR"] = p.Generator
	}
	st, err := structpb.NewStruct(meta)
	if err != nil {
		panic(fmt.Sprintf("parity: node metadata: %v", err)) // only literal JSON values above
	}
	id, domain, ip := p.Pod+"."+p.Namespace, p.Namespace+".svc.cluster.local", p.IP
	if p.NoNamespace {
		id = p.Pod
	}
	if p.Domain != "" {
		domain = p.Domain
	}
	if p.NodeIP != "" {
		ip = p.NodeIP
	}
	n := &corev3.Node{
		Id:       fmt.Sprintf("%s~%s~%s~%s", p.Type, ip, id, domain),
		Cluster:  id,
		Metadata: st,
	}
	if p.Locality != "" {
		parts := append(strings.SplitN(p.Locality, "/", 3), "", "")
		n.Locality = &corev3.Locality{Region: parts[0], Zone: parts[1], SubZone: parts[2]}
	}
	return n
}

// Dump is what one proxy received: every resource of each type, by name.
type Dump struct {
	Clusters  map[string]*clusterv3.Cluster
	Endpoints map[string]*endpointv3.ClusterLoadAssignment
	Listeners map[string]*listenerv3.Listener
	Routes    map[string]*routev3.RouteConfiguration
	// Router: the proxy is a gateway, whose listeners' server TLS parameters are compared.
	Router bool
}

// openADS opens an ADS stream to addr as p and returns get, which sends a request for typeURL
// and names and returns the resources of the first response of that type, ACKing every
// response on the way (pushes of other types may arrive meanwhile), and closeConn, which
// closes the connection. The stream ends with ctx.
func openADS(ctx context.Context, addr string, p Proxy) (get func(typeURL string, names []string) ([]*anypb.Any, error), closeConn func(), err error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("ADS %s: %w", addr, err)
	}
	node := p.Node()
	get = func(typeURL string, names []string) ([]*anypb.Any, error) {
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNames: names}); err != nil {
			return nil, fmt.Errorf("ADS %s: send %s: %w", addr, typeURL, err)
		}
		for {
			resp, err := stream.Recv()
			if err != nil {
				return nil, fmt.Errorf("ADS %s: waiting for %s: %w", addr, typeURL, err)
			}
			ack := &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: resp.GetTypeUrl(), VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()}
			if resp.GetTypeUrl() == typeURL {
				ack.ResourceNames = names
			}
			if err := stream.Send(ack); err != nil {
				return nil, fmt.Errorf("ADS %s: ack %s: %w", addr, resp.GetTypeUrl(), err)
			}
			if resp.GetTypeUrl() == typeURL {
				return resp.GetResources(), nil
			}
		}
	}
	return get, func() { conn.Close() }, nil
}

// newDump is an empty Dump.
func newDump() *Dump {
	return &Dump{
		Clusters:  map[string]*clusterv3.Cluster{},
		Endpoints: map[string]*endpointv3.ClusterLoadAssignment{},
		Listeners: map[string]*listenerv3.Listener{},
		Routes:    map[string]*routev3.RouteConfiguration{},
	}
}

// addClusters adds the clusters of a CDS response (rs, from addr) to d and returns the service
// names of its EDS clusters.
func (d *Dump) addClusters(addr string, rs []*anypb.Any) (map[string]bool, error) {
	edsNames := map[string]bool{}
	for _, a := range rs {
		c := &clusterv3.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			return nil, fmt.Errorf("ADS %s: cluster: %w", addr, err)
		}
		d.Clusters[c.GetName()] = c
		if c.GetType() == clusterv3.Cluster_EDS {
			n := c.GetEdsClusterConfig().GetServiceName()
			if n == "" {
				n = c.GetName()
			}
			edsNames[n] = true
		}
	}
	return edsNames, nil
}

// addListeners adds the listeners of an LDS response (rs, from addr) to d and returns the route
// configuration names routes finds in them.
func (d *Dump) addListeners(addr string, rs []*anypb.Any, routes func(l *listenerv3.Listener, names map[string]bool)) (map[string]bool, error) {
	names := map[string]bool{}
	for _, a := range rs {
		l := &listenerv3.Listener{}
		if err := a.UnmarshalTo(l); err != nil {
			return nil, fmt.Errorf("ADS %s: listener: %w", addr, err)
		}
		d.Listeners[l.GetName()] = l
		routes(l, names)
	}
	return names, nil
}

// fetchEndpoints asks (get, on the stream to addr) for the assignments of names and adds them
// to d; no names, no request.
func (d *Dump) fetchEndpoints(get func(string, []string) ([]*anypb.Any, error), addr string, names map[string]bool) error {
	if len(names) == 0 {
		return nil
	}
	rs, err := get(endpointType, slices.Sorted(maps.Keys(names)))
	if err != nil {
		return err
	}
	for _, a := range rs {
		cla := &endpointv3.ClusterLoadAssignment{}
		if err := a.UnmarshalTo(cla); err != nil {
			return fmt.Errorf("ADS %s: endpoints: %w", addr, err)
		}
		d.Endpoints[cla.GetClusterName()] = cla
	}
	return nil
}

// DrainingRoutes are route configuration names Fetch asks for beside those its listeners name,
// as Envoy still asks for the routes of listeners that drain: a port number no service has and
// a name that is no port. istiod answers every name.
var DrainingRoutes = []string{"9999", "http.9999"}

// Fetch connects to the ADS server at addr as p and fetches CDS (wildcard), EDS (every EDS
// cluster's service name), LDS (wildcard) and RDS (every route configuration an HTTP connection
// manager names, and DrainingRoutes), in Envoy's order, ACKing each response.
func Fetch(ctx context.Context, addr string, p Proxy) (*Dump, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	get, closeConn, err := openADS(ctx, addr, p)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	d := newDump()
	d.Router = p.Type == "router"
	rs, err := get(clusterType, nil)
	if err != nil {
		return nil, err
	}
	edsNames, err := d.addClusters(addr, rs)
	if err != nil {
		return nil, err
	}
	if err := d.fetchEndpoints(get, addr, edsNames); err != nil {
		return nil, err
	}
	rs, err = get(listenerType, nil)
	if err != nil {
		return nil, err
	}
	routeNames, err := d.addListeners(addr, rs, func(l *listenerv3.Listener, routeNames map[string]bool) {
		for _, fc := range append(slices.Clone(l.GetFilterChains()), l.GetDefaultFilterChain()) {
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().MessageIs(h) && f.GetTypedConfig().UnmarshalTo(h) == nil {
					if n := h.GetRds().GetRouteConfigName(); n != "" {
						routeNames[n] = true
					}
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, n := range DrainingRoutes {
		routeNames[n] = true
	}
	if len(routeNames) > 0 {
		rs, err := get(routeType, slices.Sorted(maps.Keys(routeNames)))
		if err != nil {
			return nil, err
		}
		for _, a := range rs {
			r := &routev3.RouteConfiguration{}
			if err := a.UnmarshalTo(r); err != nil {
				return nil, fmt.Errorf("ADS %s: route: %w", addr, err)
			}
			d.Routes[r.GetName()] = r
		}
	}
	return d, nil
}
