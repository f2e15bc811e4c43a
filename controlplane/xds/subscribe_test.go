package xds

import (
	"maps"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
)

func resourceNames(t *testing.T, r *discoveryv3.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	switch r.TypeUrl {
	case gen.ClusterType:
		out = slices.Collect(maps.Keys(decode(t, r, func() *clusterv3.Cluster { return &clusterv3.Cluster{} })))
	case gen.ListenerType:
		out = slices.Collect(maps.Keys(decode(t, r, func() *listenerv3.Listener { return &listenerv3.Listener{} })))
	default:
		t.Fatalf("resourceNames: unexpected type %s", r.TypeUrl)
	}
	slices.Sort(out)
	return out
}

// SotW transcripts: an empty resource_names on CDS/LDS is the legacy wildcard only on the
// stream's first request of the type; after explicit names it unsubscribes from everything.
func TestSotWEmptyNamesAfterNamesIsUnsubscribeAll(t *testing.T) {
	for _, typeURL := range []string{gen.ClusterType, gen.ListenerType} {
		t.Run(typeURL, func(t *testing.T) {
			ts := startServer(t, testOptions())
			in := topology(4, 1)
			snap := ts.push(in, true)
			node := sidecarNode(t, "10.200.0.1", "ns-0", "grpc")
			p, err := model.ParseProxy(node)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := gen.ForType(typeURL, p).Generate(p, snap, nil)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, r := range rs {
				all = append(all, r.Name)
			}
			slices.Sort(all)
			if len(all) < 2 {
				t.Fatalf("topology has %d %s names, want at least 2", len(all), typeURL)
			}
			c := dial(t, ts.addr, node)

			// 1. Named: only that resource.
			c.send(typeURL, "", "", all[:1], "")
			r := c.recv()
			if got := resourceNames(t, r); !slices.Equal(got, all[:1]) {
				t.Fatalf("named request: got %v, want %v", got, all[:1])
			}
			c.ack(r)
			// 2. Empty list after names: unsubscribe all, answered with an empty set.
			c.send(typeURL, r.VersionInfo, r.Nonce, nil, "")
			r = c.recv()
			if r.TypeUrl != typeURL || len(r.Resources) != 0 {
				t.Fatalf("empty list after names: got %s with %v, want an empty %s response", r.TypeUrl, resourceNames(t, r), typeURL)
			}
			c.ack(r)
			// 3. A full push that adds a service sends this client nothing of the type.
			in.Services = append(in.Services, topology(5, 1).Services[4])
			ts.push(in, true)
			ts.settle(t)
			c.barrier()
			// 4. Naming resources again subscribes to them.
			c.send(typeURL, r.VersionInfo, r.Nonce, all[1:2], "")
			if got := resourceNames(t, c.recv()); !slices.Equal(got, all[1:2]) {
				t.Fatalf("re-named: got %v, want %v", got, all[1:2])
			}
		})
	}
}

// The first request's empty list stays a wildcard across ACKs that restate it.
func TestSotWFirstEmptyListIsWildcard(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(3, 1)
	ts.push(in, true)
	c := dial(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	c.send(gen.ClusterType, "", "", nil, "")
	r := c.recv()
	n := len(r.Resources)
	c.ack(r)
	in.Services = append(in.Services, topology(4, 1).Services[3])
	ts.push(in, true)
	if r := c.recv(); r.TypeUrl != gen.ClusterType || len(r.Resources) != n+1 {
		t.Fatalf("wildcard CDS after a new service: %s with %d resources, want %d", r.TypeUrl, len(r.Resources), n+1)
	}
}

func deltaNames(r *discoveryv3.DeltaDiscoveryResponse) []string {
	var out []string
	for _, x := range r.GetResources() {
		out = append(out, x.GetName())
	}
	slices.Sort(out)
	return out
}

// Delta transcripts: subscribing again to a name the server thinks the client holds gets it
// again (the client may have forgotten its copy); under a wildcard, unsubscribing a name
// gets a response carrying it (in resources if it exists, else in removed_resources).
func TestDeltaResubscribeAndWildcardUnsubscribe(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(3, 1)
	ts.push(in, true)
	eds := "outbound|8080||svc-1.ns-1.svc.cluster.local"
	cluster := eds
	missing := "outbound|8080||nosuch.ns-0.svc.cluster.local"
	c := dialDelta(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))

	// EDS: subscribe, ACK, subscribe again (no unsubscribe seen by the server).
	c.send(gen.EndpointType, []string{eds}, nil, "", "")
	r := c.recv()
	if got := deltaNames(r); !slices.Equal(got, []string{eds}) {
		t.Fatalf("EDS subscribe: %v", got)
	}
	c.send(gen.EndpointType, nil, nil, r.Nonce, "")
	c.send(gen.EndpointType, []string{eds}, nil, r.Nonce, "")
	r = c.recv()
	if got := deltaNames(r); r.TypeUrl != gen.EndpointType || !slices.Equal(got, []string{eds}) {
		t.Fatalf("EDS re-subscribe of a held name: %s %v, want %s again", r.TypeUrl, got, eds)
	}
	c.send(gen.EndpointType, nil, nil, r.Nonce, "")

	// CDS: legacy wildcard, then explicit name, then unsubscribe the name (still wildcard).
	c.send(gen.ClusterType, nil, nil, "", "")
	r = c.recv()
	if len(r.Resources) < 3 {
		t.Fatalf("wildcard CDS: %d resources", len(r.Resources))
	}
	c.send(gen.ClusterType, nil, nil, r.Nonce, "")
	c.send(gen.ClusterType, []string{cluster}, nil, r.Nonce, "")
	r = c.recv()
	if got := deltaNames(r); !slices.Equal(got, []string{cluster}) {
		t.Fatalf("explicit subscribe under a wildcard of a held cluster: %v, want %s", got, cluster)
	}
	c.send(gen.ClusterType, nil, nil, r.Nonce, "")
	c.send(gen.ClusterType, nil, []string{cluster, missing}, r.Nonce, "")
	r = c.recv()
	if got := deltaNames(r); !slices.Equal(got, []string{cluster}) || !slices.Equal(r.RemovedResources, []string{missing}) {
		t.Fatalf("unsubscribe under a wildcard: resources %v removed %v, want [%s] and [%s]", got, r.RemovedResources, cluster, missing)
	}
	c.send(gen.ClusterType, nil, nil, r.Nonce, "")
	c.barrier()

	// Still wildcard: a new service's cluster comes.
	in.Services = append(in.Services, topology(4, 1).Services[3])
	ts.push(in, true)
	for {
		r = c.recv()
		if r.TypeUrl == gen.ClusterType {
			break
		}
	}
	if got := deltaNames(r); !slices.Contains(got, "outbound|8080||svc-3.ns-0.svc.cluster.local") {
		t.Fatalf("wildcard after unsubscribing a name: push carried %v", got)
	}
}

// TestDeltaSubscribeAndUnsubscribeInOneRequest: a name both subscribed and unsubscribed in one
// request ends unsubscribed: nothing is sent for it, then or on a later push.
func TestDeltaSubscribeAndUnsubscribeInOneRequest(t *testing.T) {
	ts := startServer(t, testOptions())
	in := topology(3, 1)
	ts.push(in, true)
	kept := "outbound|8080||svc-0.ns-0.svc.cluster.local"
	both := "outbound|8080||svc-1.ns-1.svc.cluster.local"
	c := dialDelta(t, ts.addr, sidecarNode(t, "10.200.0.1", "ns-0", ""))
	c.send(gen.EndpointType, []string{kept}, nil, "", "")
	r := c.recv()
	c.send(gen.EndpointType, nil, nil, r.Nonce, "")
	c.send(gen.EndpointType, []string{both}, []string{both}, r.Nonce, "")
	c.barrier()

	// svc-1's endpoints change: the stream is not subscribed to them.
	in.Endpoints["svc-1.ns-1.svc.cluster.local"] = append(in.Endpoints["svc-1.ns-1.svc.cluster.local"],
		endpoint("svc-1.ns-1.svc.cluster.local", "10.9.9.9"))
	ts.push(in, false, "svc-1.ns-1.svc.cluster.local")
	ts.settle(t)
	c.barrier()
}
