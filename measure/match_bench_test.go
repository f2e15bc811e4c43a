package measure

import (
	"fmt"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/probe"
)

// BenchmarkMatcherPush is the matcher's share of a push cycle like eds-churn-1k's: events
// endpoint changes (one endpoint added to a cluster each) registered together, then one EDS
// response naming their assignments to each of clients sidecars that subscribe to every one of
// services clusters, reported through the hooks a fake Envoy calls (a hook that claims the
// events, then Response, Applied, AckSent). An iteration is one push to every client;
// ns/event-client is the cost per event and client reached, the unit the matcher's work grows
// with. It includes the synthetic clients' own updates of their state (a map write per event
// and client), as a fleet's figures include its clients'.
//
// With backlog > 0, each client also holds that many events pending on other clusters that no
// push in the benchmark carries, as a debounce that holds a push for seconds leaves events
// pending (eds-churn-1k: about 580 per response): every response walks them too.
func BenchmarkMatcherPush(b *testing.B) {
	for _, backlog := range []int{0, 512} {
		b.Run(fmt.Sprint("backlog=", backlog), func(b *testing.B) { benchMatcherPush(b, backlog) })
	}
}

func benchMatcherPush(b *testing.B, backlog int) {
	const clients, services, events = 1000, 1000, 64
	m := NewMatcher(MatcherConfig{Now: mtNow})
	cs := make([]*mbClient, clients)
	names := make([]string, services)
	base := make(map[string]proto.Message, services)
	for k := range names {
		names[k] = fmt.Sprintf("outbound|80||svc-%04d.ns-%d.svc.cluster.local", k, k%10)
		base[names[k]] = mtCLA(names[k], fmt.Sprintf("10.0.%d.%d", k/250, k%250))
	}
	for i := range cs {
		c := &mbClient{info: probe.ClientInfo{Index: i, Group: "sidecars", Namespace: fmt.Sprint("ns-", i%10)}, eds: make(map[string]proto.Message, services)}
		for k, v := range base {
			c.eds[k] = v
		}
		c.info.State = c
		cs[i] = c
		m.Track(i, c.info.Group, c.info.Namespace)
	}
	// The backlog: events on clusters beyond the pushed ones, claimed by every client at its
	// first hook and never carried.
	for e := range backlog {
		name := fmt.Sprintf("outbound|80||held-%04d.ns.svc.cluster.local", e)
		if _, err := m.Expect(probe.Expectation{EventID: uint64(1<<40 + e), Kind: "endpoint-flap", T0: mtBase,
			All: []probe.Predicate{present(name, "10.9.0.1")}}); err != nil {
			b.Fatal(err)
		}
	}
	// Each cluster's endpoints as pushed so far: a push replaces the assignments its events
	// change.
	cur := make([][]string, services)
	for k := range cur {
		cur[k] = []string{fmt.Sprintf("10.0.%d.%d", k/250, k%250)}
	}
	next, cycle := 0, 0
	touched := make([]probe.Touched, events)
	msgs := make([]proto.Message, events)
	for b.Loop() {
		cycle++
		t0 := mtBase.Add(time.Duration(cycle) * 100 * time.Millisecond)
		for e := range events {
			k := next % services
			next++
			addr := fmt.Sprintf("10.%d.%d.%d", 1+cycle/60000, cycle/250%240, cycle%250)
			cur[k] = append(cur[k], addr)
			msgs[e] = mtCLA(names[k], cur[k]...)
			touched[e].Name = names[k]
			if _, err := m.Expect(probe.Expectation{EventID: uint64(cycle*events + e), Kind: "endpoint-flap", T0: t0,
				All: []probe.Predicate{present(names[k], addr)}}); err != nil {
				b.Fatal(err)
			}
		}
		// A running fleet's clients claim new events at a hook in the debounce window (the ACK of
		// the last push, another type's response) before the push reaches them: many hold an
		// event pending at once, as they share its answers (matchEvent.memo) only then.
		for _, c := range cs {
			m.touch(c.info)
		}
		recv := t0.Add(10 * time.Millisecond)
		for _, c := range cs {
			c.seq++
			r := probe.ResponseInfo{Seq: c.seq, TypeURL: resource.EndpointType, Recv: recv, Touched: make([]probe.Touched, events)}
			for e := range touched {
				name := touched[e].Name
				r.Touched[e] = probe.Touched{Name: name, Prev: c.eds[name]}
				c.eds[name] = msgs[e]
			}
			m.Response(c.info, r)
			m.Applied(c.info, r, c)
			m.AckSent(c.info, r, recv.Add(time.Millisecond))
		}
	}
	if n := m.Outstanding(); n != backlog*clients {
		b.Fatalf("%d expectations outstanding after every client received them, want the backlog's %d", n, backlog*clients)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events*clients), "ns/event-client")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*clients), "µs/response")
}

// mbClient is a sidecar that subscribes to every EDS assignment and holds them by name (a map
// per type, as the fake Envoy keeps its state, so that the benchmark's own lookups cost what
// the fleet's do), everything it accepted in effect.
type mbClient struct {
	info probe.ClientInfo
	seq  uint64
	eds  map[string]proto.Message
}

func (c *mbClient) Resource(typeURL, name string) proto.Message {
	if typeURL != resource.EndpointType {
		return nil
	}
	return c.eds[name]
}
func (c *mbClient) Effective(typeURL, name string) proto.Message { return c.Resource(typeURL, name) }
func (c *mbClient) Subscribed(typeURL, _ string) bool            { return typeURL == resource.EndpointType }
func (c *mbClient) Synced(string) bool                           { return true }
