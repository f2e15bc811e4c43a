package machine

import (
	"fmt"
	"slices"
	"sort"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslab/xdslab/fakeenvoy/validate"
)

// Decoding resources: the typed decode with its validation and what a resource references,
// and the raw protobuf readers that take a resource's name without decoding it.

// message is d's decoded message; nil for a nil d.
func (d *decoded) message() proto.Message {
	if d == nil {
		return nil
	}
	return d.msg
}

// decodeErr is an error Envoy finds as it decodes a resource (its bytes, its own PGV
// constraints): the whole response is rejected and nothing of it applied, since GrpcMuxImpl's
// onDiscoveryResponse (SotW) and WatchMap::onConfigUpdate (Delta) decode every resource before
// any callback sees one. Other errors are found while building one resource (what its Anys
// pack, build-time checks): CdsApiHelper and LdsApiImpl still apply the others.
type decodeErr struct{ error }

func (e decodeErr) Unwrap() error { return e.error }

// decode unmarshals a resource of type t, validates it as mode says, and extracts what it
// references (for gRPC clients, also a route configuration's clusters, and an assignment as
// grpc-go uses it). An error found decoding is a decodeErr.
func decode(t rtype, raw []byte, mode checkMode) (proto.Message, []string, error) {
	realistic := mode == checkEnvoy
	var msg proto.Message
	switch t {
	case tCDS:
		msg = &clusterv3.Cluster{}
	case tEDS:
		msg = &endpointv3.ClusterLoadAssignment{}
	case tLDS:
		msg = &listenerv3.Listener{}
	case tRDS:
		msg = &routev3.RouteConfiguration{}
	case tSDS:
		msg = &tlsv3.Secret{}
	}
	if err := proto.Unmarshal(raw, msg); err != nil {
		return nil, nil, decodeErr{err}
	}
	if realistic {
		if err := validate.Top(msg); err != nil {
			return nil, nil, decodeErr{err}
		}
		if err := validate.Anys(msg); err != nil {
			return nil, nil, err
		}
		if err := buildErr(msg); err != nil {
			return nil, nil, err
		}
	}
	if mode == checkGRPC {
		if err := validate.GRPC(t.kind(), msg); err != nil {
			return nil, nil, err
		}
		switch v := msg.(type) {
		case *routev3.RouteConfiguration:
			return v, validate.RouteClusters(v), nil
		case *endpointv3.ClusterLoadAssignment:
			return validate.GRPCInUse(v), nil, nil
		}
	}
	var refs []string
	switch v := msg.(type) {
	case *clusterv3.Cluster:
		if v.GetType() == clusterv3.Cluster_EDS {
			n := v.GetEdsClusterConfig().GetServiceName()
			if n == "" {
				n = v.GetName()
			}
			refs = []string{n}
		}
	case *listenerv3.Listener:
		var err error
		refs, _, err = routeNames(v)
		if realistic && err == nil {
			err = validate.DuplicateFilterChain(v)
		}
		if err != nil && realistic {
			return nil, nil, err
		}
	}
	return msg, refs, nil
}

// buildErr is what Envoy rejects as it builds msg, past its PGV constraints (package
// validate's Cluster, Listener and RouteConfig): one resource's error, not the response's.
func buildErr(msg proto.Message) error {
	switch v := msg.(type) {
	case *clusterv3.Cluster:
		return validate.Cluster(v)
	case *listenerv3.Listener:
		return validate.Listener(v)
	case *routev3.RouteConfiguration:
		return validate.RouteConfig(v)
	}
	return nil
}

// routeNames lists the RDS route config names of every HTTP connection manager of l: in all
// filter chains, the default chain and the api_listener.
func routeNames(l *listenerv3.Listener) ([]string, []*corev3.ConfigSource, error) {
	var names []string
	var sources []*corev3.ConfigSource
	var firstErr error
	add := func(a *anypb.Any) {
		if a.GetTypeUrl() != validate.HCMType {
			return
		}
		hcm := &hcmv3.HttpConnectionManager{}
		if err := a.UnmarshalTo(hcm); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("http connection manager: %w", err)
			}
			return
		}
		if n := hcm.GetRds().GetRouteConfigName(); n != "" {
			names = append(names, n)
			sources = append(sources, hcm.GetRds().GetConfigSource())
		}
	}
	chains := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(slices.Clip(chains), d)
	}
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			add(f.GetTypedConfig())
		}
	}
	add(l.GetApiListener().GetApiListener())
	sort.Strings(names)
	return slices.Compact(names), sources, firstErr
}

// fetchTimeoutOf returns the initial_fetch_timeout of the config source through which msg
// gets what it references: a cluster's eds_config, a listener's RDS config_source (the
// largest of its connection managers', as the listener waits for all of them; 0 wins: wait
// forever). ok is false when no config source sets one.
func fetchTimeoutOf(msg proto.Message) (d time.Duration, ok bool) {
	switch v := msg.(type) {
	case *clusterv3.Cluster:
		if ift := v.GetEdsClusterConfig().GetEdsConfig().GetInitialFetchTimeout(); ift != nil {
			return ift.AsDuration(), true
		}
	case *listenerv3.Listener:
		_, sources, _ := routeNames(v)
		for _, cs := range sources {
			ift := cs.GetInitialFetchTimeout()
			if ift == nil {
				continue
			}
			td := ift.AsDuration()
			switch {
			case !ok:
				d, ok = td, true
			case d > 0 && (td <= 0 || td > d):
				d = td
			}
		}
	}
	return d, ok
}

// readName reads field 1 (the name of a Cluster, Listener and RouteConfiguration, the
// cluster_name of a ClusterLoadAssignment) without decoding the rest.
func readName(b []byte) (string, bool) {
	name, ok := readNameBytes(b)
	return string(name), ok
}

// readNameBytes is readName without the copy: the name's bytes inside b.
func readNameBytes(b []byte) ([]byte, bool) {
	var name []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, false
			}
			name = v // the last occurrence wins, as in proto decoding
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	return name, true
}

// diffSorted returns what is in b and not a (subscribe) and in a and not b (unsubscribe).
func diffSorted(a, b []string) (added, removed []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			removed = append(removed, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			added = append(added, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return added, removed
}

// removedSorted is diffSorted's removed alone: what sorted a holds that sorted b lacks (nil
// when a is empty or b is the same list), without building what b adds (a SotW client's new
// subscription of a thousand names adds them all).
func removedSorted(a, b []string) (removed []string) {
	if len(a) == 0 || (len(a) == len(b) && &a[0] == &b[0]) {
		return nil
	}
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j >= len(b) || b[j] != x {
			removed = append(removed, x)
		}
	}
	return removed
}
