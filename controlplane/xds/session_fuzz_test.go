package xds

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/push"
	"github.com/xdslab/xdslab/controlplane/xds/sotw"
	"github.com/xdslab/xdslab/istioconfig"
)

// FuzzSession drives a session (SotW or Delta, flow control on, no ACK timeout) with arbitrary
// sequences of requests, pushes and resource changes and checks the protocol's invariants on
// every step's effects:
//   - nonces count up by one across the stream's responses;
//   - a response is only of a type the client requested, and carries only resources that exist;
//   - a push never sends a type whose previous response is unanswered (flow control), and
//     sends no LDS/RDS while a CDS response is unanswered (make-before-break);
//   - a Delta response never both sends and removes a name;
//   - a push or a request never fails (only the first request's node and a type URL can).
func FuzzSession(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 3, 9, 2, 5, 4, 1, 1})
	f.Add([]byte{128, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0, 5, 1, 0, 2, 2, 3, 3, 4, 6, 7, 6, 8, 0, 1, 0})
	types := []string{gen.ClusterType, gen.EndpointType, gen.ListenerType, gen.RouteType}
	hosts := []string{"a", "b", "c"}
	nameOf := func(t string, i byte) string {
		h := hosts[int(i)%len(hosts)]
		if t == gen.ClusterType || t == gen.EndpointType {
			return gen.ClusterName(gen.Outbound, 80, "", h)
		}
		return h
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		delta := data[0]&128 != 0
		data = data[1:]
		// The Server's path: subscriptions interned, whole ones answered once per push state.
		src := &fakeSource{res: map[string]map[string]string{}}
		s := newSession(src, sotw.NewNameSets(), delta, push.FlowOptions{Enabled: true})
		now := time.Unix(1, 0)
		var nonce uint64
		requested := map[string]bool{}
		awaiting := map[string]bool{} // a response of the type is unanswered
		lastNonce := map[string]string{}
		seq := uint64(0)
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		first := true
		for len(data) > 0 {
			op := next()
			typ := types[int(op>>4)%len(types)]
			var e *effects
			kind := op & 15
			switch {
			case kind < 6: // a request: new subscription, ACK, NACK, stale nonce
				names := []string{}
				for i := range int(next() % 4) {
					names = append(names, nameOf(typ, next()+byte(i)))
				}
				n := ""
				switch kind % 3 {
				case 1:
					n = lastNonce[typ]
				case 2:
					n = strconv.FormatUint(uint64(next()), 36)
				}
				var nack *rpcstatus.Status
				if kind >= 3 {
					nack = &rpcstatus.Status{Code: 3, Message: "rejected"}
				}
				if n == lastNonce[typ] && n != "" {
					awaiting[typ] = false
				}
				requested[typ] = true
				if delta {
					req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typ, ResponseNonce: n, ErrorDetail: nack}
					if next()%2 == 0 {
						req.ResourceNamesSubscribe = names
					} else {
						req.ResourceNamesUnsubscribe = names
					}
					if first {
						req.Node = testNode
					}
					e = s.DeltaRequest(req, now)
				} else {
					pb := &discoveryv3.DiscoveryRequest{TypeUrl: typ, ResponseNonce: n, ResourceNames: names, ErrorDetail: nack}
					if first {
						pb.Node = testNode
					}
					b, err := proto.Marshal(pb)
					if err != nil {
						t.Fatal(err)
					}
					req := &sotw.Request{}
					if err := req.Decode(b, true); err != nil {
						t.Fatal(err)
					}
					e = s.Request(req, now)
				}
				first = false
			case kind < 10: // the resources of a type change
				m := map[string]string{}
				for i := range int(next() % 4) {
					m[nameOf(typ, next()+byte(i))] = fmt.Sprint(next() % 3)
				}
				src.res[typ] = m
				// Published as a new push state, as a snapshot is: the push reaches the stream later.
				seq++
				src.st = &pushState{snap: model.NewSnapshot(seq, model.SnapshotInput{})}
				continue
			default: // a push
				seq++
				src.st = &pushState{snap: model.NewSnapshot(seq, model.SnapshotInput{})}
				req := &model.PushRequest{Full: kind < 13}
				if !req.Full {
					req.ConfigsUpdated = map[istioconfig.Key]struct{}{{Kind: model.KindEndpoint, Name: hosts[int(next())%len(hosts)]}: {}}
				}
				heldBefore := maps.Clone(awaiting)
				if kind%2 == 0 {
					e = s.Push(req, now)
				} else {
					// The shell's split turn: the same responses in the same order.
					first := s.PushClusters(req, now)
					out := slices.Clone(first.out)
					e = s.PushRest(now)
					e.out = append(out, e.out...)
				}
				for _, r := range e.out {
					if heldBefore[r.typeURL] {
						t.Fatalf("push sent %s while its response %s was unanswered", r.typeURL, lastNonce[r.typeURL])
					}
					if heldBefore[gen.ClusterType] && (r.typeURL == gen.ListenerType || r.typeURL == gen.RouteType) {
						t.Fatalf("push sent %s while a CDS response was unanswered (make-before-break)", r.typeURL)
					}
				}
			}
			if e.err != nil {
				t.Fatalf("op %d: %v", op, e.err)
			}
			for _, r := range e.out {
				nonce++
				if r.nonce != strconv.FormatUint(nonce, 36) {
					t.Fatalf("nonce %s, want %s", r.nonce, strconv.FormatUint(nonce, 36))
				}
				if !requested[r.typeURL] {
					t.Fatalf("a %s response without a %s request", r.typeURL, r.typeURL)
				}
				for _, res := range r.resources {
					if _, ok := src.res[r.typeURL][res.Name]; !ok {
						t.Fatalf("%s response carries %s, which does not exist", r.typeURL, res.Name)
					}
					if slices.Contains(r.removed, res.Name) {
						t.Fatalf("%s response both sends and removes %s", r.typeURL, res.Name)
					}
				}
				awaiting[r.typeURL] = true
				lastNonce[r.typeURL] = r.nonce
				s.written(r.typeURL, r.nonce, now)
			}
			now = now.Add(time.Millisecond)
		}
	})
}
