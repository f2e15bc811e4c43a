package machine

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
	"github.com/xdslab/xdslab/internal/transcript"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the expected effects in testdata/*.txt")

// Machine transcripts (testdata/*.txt) script one client's machine event by event —
// streams starting, responses arriving, time passing — and list what each event must make it do,
// exactly and in order. A file holds cases:
//
//	=== NAME [delta] [grpc=TARGET,...] [nack=POLICY] [ift=DUR] [srcift=DUR] [drain=DUR]   a new case: a fresh client (SotW Envoy);
//	                                            ift: the bootstrap CDS/LDS's (negative: none), srcift: a config
//	                                            source's that gives none (default: ift's)
//	# ...                                       a comment
//	start                                       a new stream
//	< TYPE [v=VERSION] [n=NONCE] RES... [-NAME...]   a response (Delta: -NAME is removed)
//	wait DUR                                    the clock advances; the machine's timer runs when
//	                                            anything waits (early, it must do nothing)
//	held                                        what the client holds and what warms
//
// Effects, after the event that caused them:
//
//	> TYPE [v=VERSION] [n=NONCE] [names=A,B] [sub=A,B] [unsub=C] [init=A:V,...] [nack=MESSAGE]
//	                                            a request sent (SotW names=: the list; Delta sub/unsub/init);
//	                                            the ACK of a response carries its nonce, a NACK nack= last
//	                                            (nack(CODE)= when its code is not Internal)
//	! applied changed=N [removed=N] | ! noop    the response changed N of the client's resources (Delta
//	                                            removed=: as on the wire) / changed nothing
//	! timeout TYPE                              initial_fetch_timeout expired for TYPE
//	! full                                      the client holds its first full (warmed) config
//	! resynced DUR                              a full config again, DUR after the stream started
//	= TYPE NAME...                              (held) the resources held of TYPE
//	= warming NAME...                           (held) the clusters and listeners warming
//
// TYPE is CDS, EDS, LDS, RDS or SDS. Resources are abbreviated NAME or NAME=SPEC, by type:
//
//	CDS  c1 (EDS, service name c1) | c1=static | c1=svc:S | c1=ift:DUR | c1=bad (fails PGV) |
//	     c1=badtls (fails PGV inside its transport socket's Any) | c1=noeds (no eds_config) |
//	     c1=t:N (connect timeout N s: another version) | c1=mtls (ADS secrets default, ROOTCA);
//	     several joined with +
//	EDS  c1 (one endpoint 10.0.0.1:80 in a weighted locality) | c1=IP
//	LDS  l1=PORT/R1,R2 (one filter chain per RDS route config) | l1=api/R (a gRPC API listener);
//	     PORT/R1+sds:S1,S2: each chain's DownstreamTlsContext names ADS secrets S1, S2 (a
//	     gateway's credentialName secrets)
//	RDS  r1=C1,C2 (one route per cluster)
//	SDS  s1 | s1=PEM (other contents: another version)
//
// RES@TYPE packs RES in an Any of another TYPE than the response's.
// go test -run TestMachineTranscripts -update rewrites the effect lines from what the machine
// does; review the diff like code.
func TestMachineTranscripts(t *testing.T) {
	transcript.RunDir(t, "testdata/*.txt", transcript.Format{
		Effects: []string{"> ", "! ", "= "},
		New:     func(t testing.TB, header string) transcript.Case { return newMachineScript(t, header) },
	}, *updateTranscripts)
}

// machineScript is one case's machine and clock.
type machineScript struct {
	t     testing.TB
	m     *Machine
	delta bool
	now   time.Time
}

var rtypeNames = map[string]rtype{"CDS": tCDS, "EDS": tEDS, "LDS": tLDS, "RDS": tRDS, "SDS": tSDS}

func newMachineScript(t testing.TB, header string) *machineScript {
	words := strings.Fields(strings.TrimPrefix(header, "=== "))
	var cfg Config
	for _, w := range words {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "delta":
			cfg.Delta = true
		case "grpc":
			cfg.GRPC, cfg.GRPCTargets = true, strings.Split(v, ",")
		case "nack":
			p, err := policy.ParseNack(v)
			if err != nil {
				t.Fatalf("%s: %v", header, err)
			}
			cfg.Nack = p
		case "ift":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: %v", header, err)
			}
			cfg.InitialFetchTimeout = d
		case "srcift":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: %v", header, err)
			}
			cfg.SourceFetchTimeout = d
		case "drain":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: %v", header, err)
			}
			cfg.ListenerDrain = d
		}
	}
	cfg = withShellDefaults(cfg)
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("%s: %v", header, err)
	}
	return &machineScript{t: t, m: m, delta: cfg.Delta, now: t0}
}

// Input runs one event and returns its effects.
func (x *machineScript) Input(line string) (effects []string, err error) {
	words := strings.Fields(line)
	switch words[0] {
	case "start":
		st := x.m.Start(x.now)
		return x.render(&st), nil
	case "wait":
		if len(words) != 2 {
			return nil, fmt.Errorf("want wait DUR")
		}
		d, err := time.ParseDuration(words[1])
		if err != nil {
			return nil, err
		}
		x.now = x.now.Add(d)
		if x.m.NextDeadline().IsZero() {
			return nil, nil
		}
		// The shell runs the timer only once a deadline passed; run early, it must do nothing.
		st := x.m.OnTimer(x.now)
		return x.render(&st), nil
	case "held":
		return x.held(), nil
	case "<":
		return x.response(words[1:])
	}
	return nil, fmt.Errorf("%q is not an event (start, < TYPE ..., wait DUR, held)", words[0])
}

func (x *machineScript) response(words []string) ([]string, error) {
	if len(words) == 0 {
		return nil, fmt.Errorf("want < TYPE ...")
	}
	t, ok := rtypeNames[words[0]]
	typeURL := "type.googleapis.com/unknown." + words[0]
	if ok {
		typeURL = t.url()
	}
	var version, nonce string
	var res []*anypb.Any
	var names []string
	var removed []string
	for _, w := range words[1:] {
		switch {
		case strings.HasPrefix(w, "v="):
			version = w[2:]
		case strings.HasPrefix(w, "n="):
			nonce = w[2:]
		case strings.HasPrefix(w, "-"):
			removed = append(removed, w[1:])
		default:
			w, as, _ := strings.Cut(w, "@")
			name, spec, _ := strings.Cut(w, "=")
			msg, err := x.resource(t, name, spec)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", w, err)
			}
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
			if err != nil {
				return nil, err
			}
			a := &anypb.Any{TypeUrl: typeURL, Value: b}
			if as != "" {
				at, ok := rtypeNames[as]
				if !ok {
					return nil, fmt.Errorf("%s: @%s is not a type", w, as)
				}
				a.TypeUrl = at.url()
			}
			res = append(res, a)
			names = append(names, name)
		}
	}
	var st Step
	if x.delta {
		r := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, Nonce: nonce, RemovedResources: removed}
		for i, a := range res {
			r.Resources = append(r.Resources, &discoveryv3.Resource{Name: names[i], Version: version, Resource: a})
		}
		st = x.m.OnDelta(r, x.now)
	} else {
		if len(removed) > 0 {
			return nil, fmt.Errorf("-NAME (removed) is Delta only")
		}
		st = x.m.OnSotw(&discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce, Resources: res}, x.now)
	}
	return x.render(&st), nil
}

// resource builds the abbreviated resource name=spec of type t.
func (x *machineScript) resource(t rtype, name, spec string) (proto.Message, error) {
	switch t {
	case tCDS:
		c := fetest.EDSCluster(name)
		for _, a := range strings.Split(spec, "+") {
			k, v, _ := strings.Cut(a, ":")
			switch k {
			case "":
			case "static":
				c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
				c.EdsClusterConfig = nil
			case "svc":
				c.EdsClusterConfig.ServiceName = v
			case "ift":
				d, err := time.ParseDuration(v)
				if err != nil {
					return nil, err
				}
				c.EdsClusterConfig.EdsConfig.InitialFetchTimeout = durationpb.New(d)
			case "bad":
				c.ConnectTimeout.Seconds = -1 // PGV: connect_timeout must be > 0
			case "badtls":
				c.TransportSocket = fetest.BadTLSCluster(x.t, name).TransportSocket // PGV, inside an Any
			case "noeds":
				c.EdsClusterConfig.EdsConfig = nil
			case "t":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, err
				}
				c.ConnectTimeout.Seconds = int64(n)
			case "mtls":
				c.TransportSocket = tlsSocket(x.t, &tlsv3.UpstreamTlsContext{CommonTlsContext: tlsCommon(nil)})
			default:
				return nil, fmt.Errorf("unknown cluster attribute %q (static, svc:S, ift:DUR, bad, badtls, noeds, t:N, mtls)", k)
			}
		}
		return c, nil
	case tEDS:
		addr := spec
		if addr == "" {
			addr = "10.0.0.1"
		}
		a := fetest.CLA(name, addr, 80)
		a.Endpoints[0].Locality = &corev3.Locality{Region: "r", Zone: "z"}
		a.Endpoints[0].LoadBalancingWeight = wrapperspb.UInt32(1)
		return a, nil
	case tLDS:
		spec, sds, hasSDS := strings.Cut(spec, "+sds:")
		port, routes, _ := strings.Cut(spec, "/")
		var rs []string
		if routes != "" {
			rs = strings.Split(routes, ",")
		}
		if port == "api" {
			if len(rs) != 1 {
				return nil, fmt.Errorf("an API listener names one route config")
			}
			l := apiListener(x.t, rs[0])
			l.Name = name
			return l, nil
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("listener spec %q: want PORT/ROUTES or api/ROUTE", spec)
		}
		l := fetest.RDSListener(x.t, name, uint32(p), rs...)
		if hasSDS {
			tc := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{}}
			for _, n := range strings.Split(sds, ",") {
				tc.CommonTlsContext.TlsCertificateSdsSecretConfigs = append(tc.CommonTlsContext.TlsCertificateSdsSecretConfigs, sdsRef(n, nil))
			}
			for _, fc := range l.FilterChains {
				fc.TransportSocket = tlsSocket(x.t, tc)
			}
		}
		return l, nil
	case tRDS:
		rc := &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{Name: "h", Domains: []string{"*"}}}}
		for _, c := range strings.Split(spec, ",") {
			if c == "" {
				continue
			}
			rc.VirtualHosts[0].Routes = append(rc.VirtualHosts[0].Routes, &routev3.Route{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/" + c}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: c}}},
			})
		}
		return rc, nil
	case tSDS:
		sec := secret(name)
		if spec != "" {
			sec.GetValidationContext().TrustedCa.Specifier = &corev3.DataSource_InlineString{InlineString: spec}
		}
		return sec, nil
	}
	return &endpointv3.ClusterLoadAssignment{ClusterName: name}, nil // an unknown type: any bytes
}

// render lists a step's effects in a fixed order: requests, then what the client reports.
func (x *machineScript) render(st *Step) []string {
	var out []string
	for _, r := range st.Sotw {
		out = append(out, renderSotw(r))
	}
	for _, r := range st.Delta {
		out = append(out, renderDelta(r))
	}
	for _, u := range st.Timeouts {
		t, _ := typeOf(u)
		out = append(out, "! timeout "+t.String())
	}
	if st.Response {
		switch {
		case st.Applied:
			a := fmt.Sprintf("! applied changed=%d", st.Info.Changed)
			if st.Info.Removed > 0 {
				a += fmt.Sprintf(" removed=%d", st.Info.Removed)
			}
			out = append(out, a)
		case st.Info.NoOp:
			out = append(out, "! noop")
		}
	}
	if st.FirstFull {
		out = append(out, "! full")
	}
	if st.Resynced {
		out = append(out, fmt.Sprintf("! resynced %v", st.Resync))
	}
	return out
}

func typeWord(url string) string {
	if t, ok := typeOf(url); ok {
		return t.String()
	}
	return strings.TrimPrefix(url, "type.googleapis.com/unknown.")
}

func renderSotw(r *discoveryv3.DiscoveryRequest) string {
	s := "> " + typeWord(r.GetTypeUrl())
	if r.GetVersionInfo() != "" {
		s += " v=" + r.GetVersionInfo()
	}
	if r.GetResponseNonce() != "" {
		s += " n=" + r.GetResponseNonce()
	}
	if t, ok := typeOf(r.GetTypeUrl()); ok && (!t.wildcard() || len(r.GetResourceNames()) > 0) {
		s += " names=" + strings.Join(r.GetResourceNames(), ",")
	}
	s += renderNack(r.GetErrorDetail())
	return s
}

func renderDelta(r *discoveryv3.DeltaDiscoveryRequest) string {
	s := "> " + typeWord(r.GetTypeUrl())
	if r.GetResponseNonce() != "" {
		s += " n=" + r.GetResponseNonce()
	}
	if len(r.GetResourceNamesSubscribe()) > 0 {
		s += " sub=" + strings.Join(r.GetResourceNamesSubscribe(), ",")
	}
	if len(r.GetResourceNamesUnsubscribe()) > 0 {
		s += " unsub=" + strings.Join(r.GetResourceNamesUnsubscribe(), ",")
	}
	if iv := r.GetInitialResourceVersions(); len(iv) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(iv)) {
			kv = append(kv, k+":"+iv[k])
		}
		s += " init=" + strings.Join(kv, ",")
	}
	s += renderNack(r.GetErrorDetail())
	return s
}

// held lists the resources held per type and the warming clusters and listeners.
func (x *machineScript) held() []string {
	var out []string
	for t := range numTypes {
		if res := x.m.types[t].res; len(res) > 0 {
			out = append(out, "= "+t.String()+" "+strings.Join(slices.Sorted(maps.Keys(res)), " "))
		}
	}
	var warming []string
	for _, t := range []rtype{tCDS, tLDS} {
		for name := range x.m.types[t].res {
			if x.m.warming(t, name) {
				warming = append(warming, name)
			}
		}
	}
	if len(warming) > 0 {
		slices.Sort(warming)
		out = append(out, "= warming "+strings.Join(warming, " "))
	}
	return out
}

// renderNack is a request's error_detail: " nack=MESSAGE" with code Internal (13), as Envoy
// sends it; any other code is shown, " nack(CODE)=MESSAGE".
func renderNack(e *status.Status) string {
	switch {
	case e == nil:
		return ""
	case codes.Code(e.GetCode()) == codes.Internal:
		return " nack=" + e.GetMessage()
	}
	return fmt.Sprintf(" nack(%v)=%s", codes.Code(e.GetCode()), e.GetMessage())
}
