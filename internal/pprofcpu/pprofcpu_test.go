package pprofcpu

import (
	"bytes"
	"compress/gzip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

const side = "side"

// profileBytes builds a pprof profile with the given samples (cpu nanoseconds, side label).
func profileBytes(samples []struct {
	ns   int64
	side string
}) []byte {
	strs := []string{"", "samples", "count", "cpu", "nanoseconds", side}
	idx := func(s string) uint64 {
		for i, x := range strs {
			if x == s {
				return uint64(i)
			}
		}
		strs = append(strs, s)
		return uint64(len(strs) - 1)
	}
	valueType := func(typ, unit uint64) []byte {
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, typ)
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		return protowire.AppendVarint(b, unit)
	}
	var p []byte
	p = protowire.AppendTag(p, 1, protowire.BytesType)
	p = protowire.AppendBytes(p, valueType(1, 2))
	p = protowire.AppendTag(p, 1, protowire.BytesType)
	p = protowire.AppendBytes(p, valueType(3, 4))
	for _, s := range samples {
		var packed []byte
		packed = protowire.AppendVarint(packed, 1)
		packed = protowire.AppendVarint(packed, uint64(s.ns))
		var sm []byte
		sm = protowire.AppendTag(sm, 2, protowire.BytesType)
		sm = protowire.AppendBytes(sm, packed)
		if s.side != "" {
			var l []byte
			l = protowire.AppendTag(l, 1, protowire.VarintType)
			l = protowire.AppendVarint(l, idx(side))
			l = protowire.AppendTag(l, 2, protowire.VarintType)
			l = protowire.AppendVarint(l, idx(s.side))
			sm = protowire.AppendTag(sm, 3, protowire.BytesType)
			sm = protowire.AppendBytes(sm, l)
		}
		p = protowire.AppendTag(p, 2, protowire.BytesType)
		p = protowire.AppendBytes(p, sm)
	}
	for _, s := range strs {
		p = protowire.AppendTag(p, 6, protowire.BytesType)
		p = protowire.AppendString(p, s)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(p)
	_ = w.Close()
	return gz.Bytes()
}

func TestByLabel(t *testing.T) {
	data := profileBytes([]struct {
		ns   int64
		side string
	}{{10e6, "controlplane"}, {20e6, "harness"}, {30e6, "controlplane"}, {5e6, ""}})
	got, err := ByLabel(data, side)
	require.NoError(t, err)
	require.Equal(t, map[string]time.Duration{"controlplane": 40 * time.Millisecond, "harness": 20 * time.Millisecond, "runtime": 5 * time.Millisecond}, got)

	_, err = ByLabel([]byte{0x1f, 0x8b, 1, 2}, side)
	require.Error(t, err, "corrupt gzip")
	_, err = ByLabel(nil, side)
	require.ErrorContains(t, err, "no cpu sample type")
}

func FuzzByLabel(f *testing.F) {
	f.Add(profileBytes([]struct {
		ns   int64
		side string
	}{{1, "harness"}}))
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := ByLabel(data, side)
		if err == nil && out == nil {
			t.Fatal("nil map without an error")
		}
	})
}
