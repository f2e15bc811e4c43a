package simulator_test

import (
	"fmt"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
	"github.com/xdslab/xdslab/simulator/internal/simtest"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// istioView is the test's reference of what an Istio-like control plane generates for a
// sidecar from the objects in a store: clusters and ClusterLoadAssignments outbound|PORT||HOST
// (and per DestinationRule subset), HTTP route configurations named by port. It is deliberately
// small and independent of the simulator's model.
type istioView struct {
	clusters map[string]*clusterv3.Cluster
	clas     map[string]*endpointv3.ClusterLoadAssignment
	routes   map[string]*routev3.RouteConfiguration
}

func (v *istioView) Resource(typeURL, name string) proto.Message {
	var m proto.Message
	switch typeURL {
	case resource.ClusterType:
		if c, ok := v.clusters[name]; ok {
			m = c
		}
	case resource.EndpointType:
		if c, ok := v.clas[name]; ok {
			m = c
		}
	case resource.RouteType:
		if r, ok := v.routes[name]; ok {
			m = r
		}
	}
	return m
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func buildView(s simtest.Store) *istioView {
	v := &istioView{clusters: map[string]*clusterv3.Cluster{}, clas: map[string]*endpointv3.ClusterLoadAssignment{}, routes: map[string]*routev3.RouteConfiguration{}}
	drs := map[string]*networking.DestinationRule{}
	vss := map[string]*networking.VirtualService{}
	var wes []istioconfig.Config
	for _, c := range s {
		switch spec := c.Spec.(type) {
		case *networking.DestinationRule:
			drs[spec.Host] = spec
		case *networking.VirtualService:
			for _, h := range spec.Hosts {
				vss[h] = spec
			}
		case *networking.WorkloadEntry:
			wes = append(wes, c)
		}
	}
	for _, c := range s {
		se, ok := c.Spec.(*networking.ServiceEntry)
		if !ok {
			continue
		}
		eps := se.Endpoints
		if se.WorkloadSelector != nil {
			for _, we := range wes {
				spec := we.Spec.(*networking.WorkloadEntry)
				if we.Namespace == c.Namespace && labelsMatch(se.WorkloadSelector.Labels, spec.Labels) {
					eps = append(eps, spec)
				}
			}
		}
		for _, host := range se.Hosts {
			dr := drs[host]
			lb := clusterv3.Cluster_LEAST_REQUEST
			if p := dr.GetTrafficPolicy().GetLoadBalancer().GetSimple(); dr != nil {
				switch p {
				case networking.LoadBalancerSettings_ROUND_ROBIN:
					lb = clusterv3.Cluster_ROUND_ROBIN
				case networking.LoadBalancerSettings_RANDOM:
					lb = clusterv3.Cluster_RANDOM
				}
			}
			for _, p := range se.Ports {
				name := fmt.Sprintf("outbound|%d||%s", p.Number, host)
				v.clusters[name] = &clusterv3.Cluster{Name: name, LbPolicy: lb}
				for _, sub := range dr.GetSubsets() {
					sn := fmt.Sprintf("outbound|%d|%s|%s", p.Number, sub.Name, host)
					v.clusters[sn] = &clusterv3.Cluster{Name: sn, LbPolicy: lb}
				}
				cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
				for _, e := range eps {
					tp := p.TargetPort
					if pp, ok := e.Ports[p.Name]; ok {
						tp = pp
					}
					cla.Endpoints = append(cla.Endpoints, &endpointv3.LocalityLbEndpoints{LbEndpoints: []*endpointv3.LbEndpoint{{
						HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{
							Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
								Address: e.Address, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: tp}}}}}},
					}}})
				}
				v.clas[name] = cla
				if p.Protocol == "TCP" {
					continue
				}
				rcName := fmt.Sprint(p.Number)
				rc := v.routes[rcName]
				if rc == nil {
					rc = &routev3.RouteConfiguration{Name: rcName}
					v.routes[rcName] = rc
				}
				vh := &routev3.VirtualHost{Name: host, Domains: []string{host, fmt.Sprintf("%s:%d", host, p.Number)}}
				vh.Routes = append(vh.Routes, routeFor(vss[host], host, p.Number))
				rc.VirtualHosts = append(rc.VirtualHosts, vh)
			}
		}
	}
	// Gateway-bound VirtualServices: a router's route configuration http.80, a virtual host per
	// VS host.
	for _, c := range s {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok || len(vs.Gateways) == 0 || slices.Contains(vs.Gateways, "mesh") {
			continue
		}
		rcName := simulator.GatewayRouteName(simulator.GatewayHTTPPort)
		rc := v.routes[rcName]
		if rc == nil {
			rc = &routev3.RouteConfiguration{Name: rcName}
			v.routes[rcName] = rc
		}
		for _, h := range vs.Hosts {
			vh := &routev3.VirtualHost{Name: h, Domains: []string{h}}
			vh.Routes = append(vh.Routes, routeFor(vs, h, simulator.GatewayHTTPPort))
			rc.VirtualHosts = append(rc.VirtualHosts, vh)
		}
	}
	return v
}

func routeFor(vs *networking.VirtualService, host string, port uint32) *routev3.Route {
	direct := func(c string) *routev3.Route {
		return &routev3.Route{Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: c}}}}
	}
	for _, hr := range vs.GetHttp() {
		if len(hr.Match) > 0 && hr.Match[0].Port != 0 && hr.Match[0].Port != port {
			continue
		}
		var wcs []*routev3.WeightedCluster_ClusterWeight
		for _, d := range hr.Route {
			p := d.Destination.GetPort().GetNumber()
			if p == 0 {
				p = port
			}
			wcs = append(wcs, &routev3.WeightedCluster_ClusterWeight{Name: fmt.Sprintf("outbound|%d|%s|%s", p, d.Destination.Subset, d.Destination.Host), Weight: wrapperspb.UInt32(uint32(d.Weight))})
		}
		if len(wcs) == 1 {
			return direct(wcs[0].Name)
		}
		return &routev3.Route{Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{Clusters: wcs}}}}}
	}
	return direct(fmt.Sprintf("outbound|%d||%s", port, host))
}
