package xds

import (
	"fmt"
	"slices"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/istioconfig"
)

// deltaGot is what a Delta client received, per type: resource names and removals.
type deltaGot map[string]struct{ names, removed []string }

// drain ACKs every response the server has sent and keeps doing so until an ACK releases
// nothing more (the barrier proves the stream is empty), returning what arrived by type.
func (c *deltaClient) drain() deltaGot {
	c.t.Helper()
	got := deltaGot{}
	const probeType = "type.googleapis.com/xdslab.test.Barrier"
	for {
		c.send(probeType, []string{"x"}, nil, "", "")
		var rs []*discoveryv3.DeltaDiscoveryResponse
		for r := c.recv(); r.TypeUrl != probeType; r = c.recv() {
			rs = append(rs, r)
		}
		if len(rs) == 0 {
			return got
		}
		for _, r := range rs {
			g := got[r.TypeUrl]
			g.names = append(g.names, deltaNames(r)...)
			g.removed = append(g.removed, r.RemovedResources...)
			got[r.TypeUrl] = g
			c.send(r.TypeUrl, nil, nil, r.Nonce, "")
		}
	}
}

// TestDeltaNewServiceSendsOnlyItsResources: on a Delta stream that holds full config (CDS and
// LDS wildcards, EDS for every cluster, RDS for the routes its listeners name), a full push
// for a new service brings exactly the new cluster in CDS and nothing is removed; once the
// client subscribes to the new cluster's assignment, EDS brings exactly that one. Listeners and
// routes go out only where the service changed them: a service on the shared HTTP port adds a
// virtual host to route "8080", which is re-sent whole (a RouteConfiguration is one resource),
// and leaves the listeners alone; a service on a new port adds its listener and route only.
func TestDeltaNewServiceSendsOnlyItsResources(t *testing.T) {
	tests := []struct {
		name    string
		port    uint32
		wantLDS []string // listeners pushed with the new service
		wantRDS []string // routes pushed with it, or sent when the client subscribes to them
	}{
		{name: "shared HTTP port", port: 8080, wantRDS: []string{"8080"}},
		{name: "new HTTP port", port: 9090, wantLDS: []string{"0.0.0.0_9090"}, wantRDS: []string{"9090"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := topology(3, 2)
			ts := startServer(t, testOptions())
			ts.push(in, true)
			c := dialDelta(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))

			// Startup in Envoy's order.
			c.send(gen.ClusterType, nil, nil, "", "")
			startCDS := c.drain()[gen.ClusterType].names
			var eds []string
			for _, n := range startCDS {
				if isOutbound(n) {
					eds = append(eds, n)
				}
			}
			if len(eds) != 3 {
				t.Fatalf("startup CDS: %v, want 3 outbound clusters", startCDS)
			}
			c.send(gen.EndpointType, eds, nil, "", "")
			if got := c.drain()[gen.EndpointType].names; !slices.Equal(got, eds) {
				t.Fatalf("startup EDS: %v, want %v", got, eds)
			}
			c.send(gen.ListenerType, nil, nil, "", "")
			if got := c.drain()[gen.ListenerType].names; !slices.Contains(got, "0.0.0.0_8080") {
				t.Fatalf("startup LDS: %v, want 0.0.0.0_8080 among them", got)
			}
			c.send(gen.RouteType, []string{"8080"}, nil, "", "")
			if got := c.drain()[gen.RouteType].names; !slices.Equal(got, []string{"8080"}) {
				t.Fatalf("startup RDS: %v, want [8080]", got)
			}

			host := "new.ns-0.svc.cluster.local"
			in.Services = append(in.Services, &model.Service{Hostname: host, Namespace: "ns-0",
				Ports: []model.Port{{Name: "http", Number: tt.port, Protocol: model.ProtocolHTTP}}, ServiceAccounts: []string{"sa"}})
			in.Endpoints[host] = []*model.Endpoint{endpoint(host, "10.9.0.1"), endpoint(host, "10.9.0.2")}
			ts.seq++
			ts.Push(model.NewSnapshot(ts.seq, in), &model.PushRequest{Full: true,
				ConfigsUpdated: map[istioconfig.Key]struct{}{{Kind: model.KindService, Name: host, Namespace: "ns-0"}: {}},
				Reasons:        map[model.TriggerReason]int{model.ReasonServiceUpdate: 1}})
			ts.settle(t)
			pushed := c.drain()
			cluster := gen.ClusterName(gen.Outbound, tt.port, "", host)
			if got := pushed[gen.ClusterType]; !slices.Equal(got.names, []string{cluster}) || len(got.removed) > 0 {
				t.Errorf("CDS after the new service: resources %v removed %v, want exactly [%s]", got.names, got.removed, cluster)
			}
			if got, ok := pushed[gen.EndpointType]; ok {
				t.Errorf("EDS before the client subscribed to the new cluster: resources %v removed %v", got.names, got.removed)
			}
			if got := pushed[gen.ListenerType]; !slices.Equal(got.names, tt.wantLDS) || len(got.removed) > 0 {
				t.Errorf("LDS after the new service: resources %v removed %v, want %v", got.names, got.removed, tt.wantLDS)
			}
			rds := pushed[gen.RouteType]
			if tt.port != 8080 {
				// The new listener names a route the client has not subscribed to yet.
				if len(rds.names)+len(rds.removed) > 0 {
					t.Errorf("RDS before the client subscribed to the new route: resources %v removed %v", rds.names, rds.removed)
				}
				c.send(gen.RouteType, tt.wantRDS, nil, "", "")
				rds = c.drain()[gen.RouteType]
			}
			if !slices.Equal(rds.names, tt.wantRDS) || len(rds.removed) > 0 {
				t.Errorf("RDS after the new service: resources %v removed %v, want %v", rds.names, rds.removed, tt.wantRDS)
			}

			c.send(gen.EndpointType, []string{cluster}, nil, "", "")
			subscribed := c.drain()
			if got := subscribed[gen.EndpointType]; !slices.Equal(got.names, []string{cluster}) || len(got.removed) > 0 {
				t.Errorf("EDS after subscribing to %s: resources %v removed %v, want exactly it", cluster, got.names, got.removed)
			}
			delete(subscribed, gen.EndpointType)
			if len(subscribed) > 0 {
				t.Errorf("subscribing to the new assignment brought other types too: %s", fmt.Sprint(subscribed))
			}
		})
	}
}
