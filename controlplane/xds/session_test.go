package xds

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslab/xdslab/controlplane/cache"
	"github.com/xdslab/xdslab/controlplane/gen"
	"github.com/xdslab/xdslab/controlplane/model"
	"github.com/xdslab/xdslab/controlplane/push"
	"github.com/xdslab/xdslab/controlplane/xds/sotw"
	"github.com/xdslab/xdslab/internal/transcript"
	"github.com/xdslab/xdslab/istioconfig"
)

var update = flag.Bool("update", false, "rewrite the expected effects in testdata/session/*.txt")

// Session transcripts (testdata/session/*.txt) script a stream's session input by input and
// list the effects each input must have, exactly and in order. The sessions take the Server's
// path: a case's streams intern their subscriptions in one table and get a whole subscription's
// answer from the source's shared answer (pushState.sharedAnswer), as the Server's streams do.
// A file holds cases:
//
//	=== NAME [delta] [flow=off] [ackTimeout=DUR] [built=show]   a new case: a fresh stream a (SotW, flow on)
//	# ...                                          a comment
//	stream NAME                                    inputs go to stream NAME from now on (new: a fresh session)
//	res TYPE [NAME=CONTENT ...]                    the source's resources of TYPE from now on
//	snap VERSION                                   publish a snapshot (none before the first): a new push state
//	                                               (a shared answer lasts its push state: change res before snap)
//	> TYPE [n=NONCE] [names=A,B] [nack=MSG]         a SotW request (names= empty: no names)
//	> TYPE [n=NONCE] [sub=A,B] [unsub=C] [init=A:HEX|A:=CONTENT] [nack=MSG]   a Delta request
//	> TYPE node=bad | > type=                       a first request without node / type URL
//	push full [KIND/NAME,...] | push eds HOST,...   the stream's push turn (a full push may name what changed; an endpoint push names hosts)
//	wait DUR | tick DUR                             advance the clock (tick: then Tick)
//	status                                          the /debug/syncz state of every type
//
// Effects, after the input that caused them:
//
//	< TYPE v=VERSION n=NONCE NAME... [-REMOVED...]  a response (names in the order sent)
//	! register | ! expired TYPE | ! acked TYPE wait=DUR | ! error CODE
//	! built TYPE NAME...                           built=show: the source built a shared answer
//	! nack TYPE n=NONCE v=VERSION code=CODE MSG | ! generror TYPE MSG
//	! timer DUR | ! timer off                      the flow-control timer moved (DUR from now)
//	= TYPE subscribed=N wildcard=B sent=V acked=V nacked=V nacks=N responses=N pending=B held=B err=MSG
//
// A resource whose CONTENT is !MSG fails to generate (the source returns an error naming it).
//
// TYPE is CDS, EDS, LDS, RDS or any other word (an unserved type). A name @h is the cluster
// outbound|80||h. Responses are written at once (written is called at the input's time).
// go test -run TestSessionTranscripts -update rewrites the effect lines from what the session
// does; review the diff like code.
func TestSessionTranscripts(t *testing.T) {
	transcript.RunDir(t, "testdata/session/*.txt", transcript.Format{
		Effects: []string{"< ", "! ", "= "},
		New:     func(t testing.TB, header string) transcript.Case { return newSessionCase(t, header) },
	}, *update)
}

var typeAbbrev = map[string]string{"CDS": gen.ClusterType, "EDS": gen.EndpointType, "LDS": gen.ListenerType, "RDS": gen.RouteType}

func typeOf(abbrev string) string {
	if u, ok := typeAbbrev[abbrev]; ok {
		return u
	}
	return "type.googleapis.com/xdslab.test." + abbrev
}

func abbrevOf(typeURL string) string {
	for a, u := range typeAbbrev {
		if u == typeURL {
			return a
		}
	}
	return strings.TrimPrefix(typeURL, "type.googleapis.com/xdslab.test.")
}

func expandName(n string) string {
	if h, ok := strings.CutPrefix(n, "@"); ok {
		return gen.ClusterName(gen.Outbound, 80, "", h)
	}
	return n
}

func shortName(n string) string {
	if h, ok := strings.CutPrefix(n, gen.Outbound+"|80||"); ok {
		return "@" + h
	}
	return n
}

// fakeSource serves scripted resources: per type, name → content (the bytes hashed).
type fakeSource struct {
	st  *pushState
	res map[string]map[string]string
	// built, when not nil, is told of each shared answer built (subscribed).
	built func(typeURL string, res []*cache.Resource)
}

func (f *fakeSource) current() *pushState { return f.st }

// subscribed answers whole SotW subscriptions as the Server does: once per push state per set
// for every stream (pushState.sharedAnswer; all proxies are of one class).
func (f *fakeSource) subscribed(p *model.Proxy, st *pushState, typeURL string, set *sotw.NameSet) ([]*cache.Resource, error) {
	res, built, err := st.sharedAnswer(setKey{typeURL: typeURL, set: set.ID()}, func() ([]*cache.Resource, error) {
		return f.resources(p, st, typeURL, set.Sorted(), false)
	})
	if built && f.built != nil {
		f.built(typeURL, res)
	}
	return res, err
}

func (f *fakeSource) resources(_ *model.Proxy, _ *pushState, typeURL string, names []string, wildcard bool) ([]*cache.Resource, error) {
	m := f.res[typeURL]
	if wildcard {
		names = slices.Sorted(func(yield func(string) bool) {
			for n := range m {
				if !yield(n) {
					return
				}
			}
		})
	}
	var out []*cache.Resource
	var errs []error
	for _, n := range names {
		c, ok := m[n]
		switch {
		case ok && strings.HasPrefix(c, "!"):
			errs = append(errs, fmt.Errorf("%s: %s", shortName(n), c[1:]))
		case ok:
			out = append(out, cache.NewResource(n, typeURL, []byte(c)))
		}
	}
	return out, errors.Join(errs...)
}

// sessionCase is one transcript case: a source, its streams and the clock.
type sessionCase struct {
	t   testing.TB
	src *fakeSource
	now time.Time
	// The case's streams, by name, and the one inputs go to: every stream of a case is served
	// by its source and interns its subscriptions in its table, as the Server's streams are.
	streams map[string]*stream
	*stream
	newSession func() *session
	// showBuilt: render the shared answers the source builds (! built); built collects them.
	showBuilt bool
	built     []string
}

// stream is one stream of a transcript's case.
type stream struct {
	sess  *session
	armed time.Time
	node  bool // the node was sent
}

// use makes name the stream inputs go to, starting it if it is new.
func (x *sessionCase) use(name string) {
	st, ok := x.streams[name]
	if !ok {
		st = &stream{sess: x.newSession()}
		x.streams[name] = st
	}
	x.stream = st
}

func newSessionCase(t testing.TB, header string) *sessionCase {
	opts := push.FlowOptions{Enabled: true}
	delta, showBuilt := false, false
	for _, w := range strings.Fields(header)[1:] {
		switch {
		case w == "delta":
			delta = true
		case w == "built=show":
			showBuilt = true
		case w == "flow=off":
			opts.Enabled = false
		case strings.HasPrefix(w, "ackTimeout="):
			d, err := time.ParseDuration(strings.TrimPrefix(w, "ackTimeout="))
			if err != nil {
				t.Fatalf("%s: %v", header, err)
			}
			opts.AckTimeout = d
		}
	}
	src := &fakeSource{res: map[string]map[string]string{}}
	sets := sotw.NewNameSets()
	x := &sessionCase{t: t, src: src, now: time.Unix(1_000_000, 0), streams: map[string]*stream{}, showBuilt: showBuilt,
		newSession: func() *session { return newSession(src, sets, delta, opts) }}
	src.built = func(typeURL string, res []*cache.Resource) {
		l := "! built " + abbrevOf(typeURL)
		for _, r := range res {
			l += " " + shortName(r.Name)
		}
		x.built = append(x.built, l)
	}
	x.use("a")
	return x
}

// kv splits a request line's words into key=value pairs (a word without '=' has key "").
func kv(words []string) map[string]string {
	m := map[string]string{}
	for _, w := range words {
		k, v, _ := strings.Cut(w, "=")
		m[k] = v
	}
	return m
}

func names(list string) []string {
	if list == "" {
		return nil
	}
	out := strings.Split(list, ",")
	for i, n := range out {
		out[i] = expandName(n)
	}
	return out
}

var testNode = &corev3.Node{Id: "sidecar~10.0.0.1~pod.ns~ns.svc.cluster.local"}

// input feeds one input line to the session and renders its effects; ok is false for a line
// that is not an input.
// Input runs one input line (transcript.Case).
func (x *sessionCase) Input(line string) ([]string, error) {
	effs, ok := x.input(line)
	if !ok {
		return nil, fmt.Errorf("%q is not an input, an effect or a case", line)
	}
	return effs, nil
}

func (x *sessionCase) input(line string) (effects []string, ok bool) {
	x.t.Helper()
	w := strings.Fields(line)
	switch w[0] {
	case "res":
		m := map[string]string{}
		for _, p := range w[2:] {
			n, c, _ := strings.Cut(p, "=")
			m[expandName(n)] = c
		}
		x.src.res[typeOf(w[1])] = m
		return nil, true
	case "snap":
		seq, err := strconv.ParseUint(w[1], 10, 64)
		if err != nil {
			x.t.Fatalf("%q: %v", line, err)
		}
		x.src.st = &pushState{snap: model.NewSnapshot(seq, model.SnapshotInput{})}
		return nil, true
	case "wait", "tick":
		d, err := time.ParseDuration(w[1])
		if err != nil {
			x.t.Fatalf("%q: %v", line, err)
		}
		x.now = x.now.Add(d)
		if w[0] == "wait" {
			return nil, true
		}
		return x.render(x.sess.Tick(x.now)), true
	case "push":
		req := &model.PushRequest{Full: w[1] == "full"}
		if req.Full && len(w) > 2 {
			req.ConfigsUpdated = map[istioconfig.Key]struct{}{}
			for _, k := range strings.Split(w[2], ",") {
				kind, name, _ := strings.Cut(k, "/")
				req.ConfigsUpdated[istioconfig.Key{Kind: istioconfig.Kind(kind), Name: name}] = struct{}{}
			}
		}
		if !req.Full {
			req.ConfigsUpdated = map[istioconfig.Key]struct{}{}
			for _, h := range strings.Split(w[2], ",") {
				req.ConfigsUpdated[istioconfig.Key{Kind: model.KindEndpoint, Name: h}] = struct{}{}
			}
		}
		return x.render(x.sess.Push(req, x.now)), true
	case ">":
		return x.render(x.request(w[1], kv(w[2:]))), true
	case "stream":
		x.use(w[1])
		return nil, true
	case "status":
		var out []string
		for _, ts := range x.sess.typeStatuses(nil) {
			out = append(out, fmt.Sprintf("= %s subscribed=%d wildcard=%t sent=%s acked=%s nacked=%s nacks=%d responses=%d pending=%t held=%t err=%s",
				abbrevOf(ts.TypeURL), ts.Subscribed, ts.Wildcard, ts.Sent, ts.Acked, ts.Nacked, ts.Nacks, ts.Responses, ts.Pending, ts.Held, ts.LastError))
		}
		return out, true
	}
	return nil, false
}

func (x *sessionCase) request(typ string, a map[string]string) *effects {
	x.t.Helper()
	node := testNode
	if a["node"] == "bad" {
		node = nil
	} else if x.node {
		node = nil // Envoy sends the node on the first request only
	}
	x.node = x.node || node != nil
	typeURL := typeOf(typ)
	if typ == "type=" {
		typeURL = ""
	}
	var nack *rpcstatus.Status
	if msg, ok := a["nack"]; ok {
		nack = &rpcstatus.Status{Code: 3, Message: msg}
	}
	if x.sess.delta {
		req := &discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typeURL, ResponseNonce: a["n"],
			ResourceNamesSubscribe: names(a["sub"]), ResourceNamesUnsubscribe: names(a["unsub"]), ErrorDetail: nack}
		if init := a["init"]; init != "" {
			req.InitialResourceVersions = map[string]string{}
			for _, p := range strings.Split(init, ",") {
				n, v, _ := strings.Cut(p, ":")
				if c, ok := strings.CutPrefix(v, "="); ok {
					v = hashOf(c) // :=CONTENT is the version of those bytes
				}
				req.InitialResourceVersions[expandName(n)] = v
			}
		}
		return x.sess.DeltaRequest(req, x.now)
	}
	pb := &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typeURL, ResponseNonce: a["n"], VersionInfo: a["v"],
		ResourceNames: names(a["names"]), ErrorDetail: nack}
	b, err := proto.Marshal(pb)
	if err != nil {
		x.t.Fatal(err)
	}
	req := &sotw.Request{}
	if err := req.Decode(b, true); err != nil {
		x.t.Fatal(err)
	}
	return x.sess.Request(req, x.now)
}

// hashOf is the Delta version of content, for init= (as the session reads them: hex FNV).
func hashOf(content string) string {
	return strconv.FormatUint(cache.NewResource("x", "t", []byte(content)).Hash, 16)
}

func (x *sessionCase) render(e *effects) []string {
	var out []string
	if e.register {
		out = append(out, "! register")
	}
	if x.showBuilt {
		out = append(out, x.built...)
	}
	x.built = x.built[:0]
	for i := range e.out {
		r := &e.out[i]
		x.sess.written(r.typeURL, r.nonce, x.now)
		l := fmt.Sprintf("< %s v=%s n=%s", abbrevOf(r.typeURL), r.version, r.nonce)
		for _, res := range r.resources {
			l += " " + shortName(res.Name)
		}
		for _, n := range r.removed {
			l += " -" + shortName(n)
		}
		out = append(out, l)
	}
	for _, n := range e.notes {
		switch n.kind {
		case noteExpiredNonce:
			out = append(out, "! expired "+abbrevOf(n.typeURL))
		case noteAcked:
			out = append(out, fmt.Sprintf("! acked %s wait=%v", abbrevOf(n.typeURL), n.wait))
		case noteRejected:
			out = append(out, fmt.Sprintf("! nack %s n=%s v=%s code=%s %s", abbrevOf(n.typeURL), n.nonce, n.version, n.code, n.msg))
		case noteGenError:
			out = append(out, fmt.Sprintf("! generror %s %s", abbrevOf(n.typeURL), n.msg))
		}
	}
	if !e.deadline.Equal(x.armed) {
		x.armed = e.deadline
		if e.deadline.IsZero() {
			out = append(out, "! timer off")
		} else {
			out = append(out, fmt.Sprintf("! timer %v", e.deadline.Sub(x.now)))
		}
	}
	if e.err != nil {
		out = append(out, "! error "+status.Code(e.err).String())
	}
	return out
}
