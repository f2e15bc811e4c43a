package validate

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	// Extensions a control plane commonly wraps in typed_config, linked so that realistic
	// validation can unpack and check them (Istio's and go-control-plane's usual output).
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_dynamic_forward_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// Deep runs PGV ValidateAll on m and, recursively, on every message packed in an Any
// inside it — which ValidateAll alone does not do. An Any whose bytes do not decode is an
// error; an Any naming a type this binary does not link is skipped (real Envoy may know it).
// It is Top, then Anys.
func Deep(m proto.Message) error {
	return validateMsg(m.ProtoReflect(), 0)
}

// Top runs PGV ValidateAll on m alone (its nested messages, not what its Anys pack): what
// Envoy checks as it decodes a resource (OpaqueResourceDecoderImpl::decodeResource), before
// anything of the response is applied.
func Top(m proto.Message) error {
	if v, ok := m.(validatorAll); ok {
		return v.ValidateAll()
	}
	return nil
}

// Anys validates, recursively, every message packed in an Any inside m (as Deep, without m's
// own ValidateAll): what Envoy checks as it builds the resource (a typed_config unpacked when
// its factory makes the filter or transport socket), one resource at a time.
func Anys(m proto.Message) error {
	return walkOnly(m.ProtoReflect(), 0)
}

type validatorAll interface{ ValidateAll() error }

const maxAnyDepth = 16

func validateMsg(m protoreflect.Message, depth int) error {
	if depth > maxAnyDepth {
		return errors.New("Any nesting deeper than 16")
	}
	if v, ok := m.Interface().(validatorAll); ok {
		if err := v.ValidateAll(); err != nil {
			return err
		}
	}
	return walkOnly(m, depth)
}

// validateChild walks a nested message; ValidateAll of the parent already covered plain
// nested messages, so only Anys need more than the walk.
func validateChild(m protoreflect.Message, depth int) error {
	if m.Descriptor().FullName() != "google.protobuf.Any" {
		return walkOnly(m, depth)
	}
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return nil
	}
	inner, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{})
	if err != nil {
		if errors.Is(err, protoregistry.NotFound) {
			return nil
		}
		return fmt.Errorf("typed_config %s: %w", ShortType(a.GetTypeUrl()), err)
	}
	if err := validateMsg(inner.ProtoReflect(), depth+1); err != nil {
		return fmt.Errorf("%s: %w", ShortType(a.GetTypeUrl()), err)
	}
	return nil
}

// walkOnly descends into a nested message looking for Anys without re-running ValidateAll
// (the enclosing message's ValidateAll covered it). Fields whose type can hold no Any at any
// depth (an address, a Struct of metadata: most of an assignment) are not walked.
func walkOnly(m protoreflect.Message, depth int) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if md := valueMessage(fd); md == nil || !mayHoldAny(md) {
			return true
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = validateChild(l.Get(i).Message(), depth)
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				err = validateChild(mv.Message(), depth)
				return err == nil
			})
		default:
			err = validateChild(v.Message(), depth)
		}
		return err == nil
	})
	return err
}

// valueMessage is the message type of fd's values (a map's values; a list's elements), nil
// when they are not messages.
func valueMessage(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		fd = fd.MapValue()
	}
	return fd.Message()
}

// holdsAny caches mayHoldAny's answers by message type.
var holdsAny sync.Map // protoreflect.FullName → bool

const anyName protoreflect.FullName = "google.protobuf.Any"

// mayHoldAny reports whether a message of type md can hold an Any at any depth of its fields
// (one that allows extensions may: they are not in its descriptor). It is worked out once per
// type, for every type reachable from md together (types refer to each other in cycles).
func mayHoldAny(md protoreflect.MessageDescriptor) bool {
	if v, ok := holdsAny.Load(md.FullName()); ok {
		return v.(bool)
	}
	var reach []protoreflect.MessageDescriptor
	seen := map[protoreflect.FullName]bool{}
	var visit func(m protoreflect.MessageDescriptor)
	visit = func(m protoreflect.MessageDescriptor) {
		if seen[m.FullName()] {
			return
		}
		seen[m.FullName()] = true
		reach = append(reach, m)
		for f := range fieldMessages(m) {
			visit(f)
		}
	}
	visit(md)
	holds := map[protoreflect.FullName]bool{}
	for _, m := range reach {
		if m.FullName() == anyName || m.ExtensionRanges().Len() > 0 {
			holds[m.FullName()] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, m := range reach {
			if holds[m.FullName()] {
				continue
			}
			for f := range fieldMessages(m) {
				if holds[f.FullName()] {
					holds[m.FullName()], changed = true, true
					break
				}
			}
		}
	}
	for _, m := range reach {
		holdsAny.Store(m.FullName(), holds[m.FullName()])
	}
	return holds[md.FullName()]
}

// fieldMessages yields the message types of m's fields (a map's values).
func fieldMessages(m protoreflect.MessageDescriptor) func(yield func(protoreflect.MessageDescriptor) bool) {
	return func(yield func(protoreflect.MessageDescriptor) bool) {
		fields := m.Fields()
		for i := range fields.Len() {
			if md := valueMessage(fields.Get(i)); md != nil && !yield(md) {
				return
			}
		}
	}
}

// ShortType is the last segment of a type URL (the message name).
func ShortType(url string) string {
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		return url[i+1:]
	}
	return url
}
