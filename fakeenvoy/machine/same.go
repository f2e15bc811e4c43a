package machine

import (
	"bytes"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// sameMemo is sameAs's answer for a new copy against the held copy whose bytes hash to held.
type sameMemo struct {
	held  uint64
	equal bool
}

// sameAs reports whether d, a copy of a resource whose bytes differ from those of held (the
// copy the client holds), is the same message as Envoy compares them (MessageUtil::hash: map
// entries in any order, an Any by what it packs). A control plane that marshals maps in a
// random order (Go's default Marshal: Struct metadata, typed_filter_metadata) resends
// identical resources in other bytes, which Envoy neither re-warms nor applies. Callers
// compare only copies of one size: reordering map entries does not change it. The answer is
// kept in d for held, so that the clients of a fleet receiving d (shared through the
// Interner) while they hold the same copy compare the pair once.
func sameAs(d, held *decoded) bool {
	if m := d.same.Load(); m != nil && m.held == held.hash {
		return m.equal
	}
	eq := equalMsg(d.msg.ProtoReflect(), held.msg.ProtoReflect())
	d.same.Store(&sameMemo{held: held.hash, equal: eq})
	return eq
}

// equalMsg is proto.Equal that also compares what Anys pack, decoded, when their bytes differ.
func equalMsg(a, b protoreflect.Message) bool {
	if a.Descriptor() != b.Descriptor() {
		return false
	}
	if a.Descriptor().FullName() == "google.protobuf.Any" {
		return equalAny(a, b)
	}
	na, eq := 0, true
	a.Range(func(fd protoreflect.FieldDescriptor, va protoreflect.Value) bool {
		na++
		eq = b.Has(fd) && equalField(fd, va, b.Get(fd))
		return eq
	})
	if !eq {
		return false
	}
	nb := 0
	b.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { nb++; return true })
	return na == nb && bytes.Equal(a.GetUnknown(), b.GetUnknown())
}

func equalField(fd protoreflect.FieldDescriptor, x, y protoreflect.Value) bool {
	switch {
	case fd.IsList():
		lx, ly := x.List(), y.List()
		if lx.Len() != ly.Len() {
			return false
		}
		for i := range lx.Len() {
			if !equalValue(fd, lx.Get(i), ly.Get(i)) {
				return false
			}
		}
		return true
	case fd.IsMap():
		mx, my := x.Map(), y.Map()
		if mx.Len() != my.Len() {
			return false
		}
		vd := fd.MapValue()
		eq := true
		mx.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			eq = my.Has(k) && equalValue(vd, v, my.Get(k))
			return eq
		})
		return eq
	}
	return equalValue(fd, x, y)
}

func equalValue(fd protoreflect.FieldDescriptor, x, y protoreflect.Value) bool {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return equalMsg(x.Message(), y.Message())
	case protoreflect.BytesKind:
		return bytes.Equal(x.Bytes(), y.Bytes())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return x.Float() == y.Float()
	}
	return x.Interface() == y.Interface()
}

// equalAny compares two Anys by type and, when their bytes differ in order only (same size),
// by what they pack; an Any this binary cannot decode is compared by its bytes.
func equalAny(a, b protoreflect.Message) bool {
	x, okx := a.Interface().(*anypb.Any)
	y, oky := b.Interface().(*anypb.Any)
	if !okx || !oky {
		return proto.Equal(a.Interface(), b.Interface())
	}
	if x.GetTypeUrl() != y.GetTypeUrl() {
		return false
	}
	if bytes.Equal(x.GetValue(), y.GetValue()) {
		return true
	}
	if len(x.GetValue()) != len(y.GetValue()) {
		return false
	}
	ux, errx := x.UnmarshalNew()
	uy, erry := y.UnmarshalNew()
	if errx != nil || erry != nil {
		return false
	}
	return equalMsg(ux.ProtoReflect(), uy.ProtoReflect())
}
