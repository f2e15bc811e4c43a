package pprofcpu

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// ByLabel sums a (gzipped) pprof CPU profile's cpu/nanoseconds samples by the value of the
// label key; samples without it count under "runtime".
func ByLabel(data []byte, key string) (map[string]time.Duration, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	type label struct{ key, str int64 }
	type smp struct {
		values []int64
		labels []label
	}
	var (
		strs        []string
		sampleTypes []int64 // string index of each value's type
		samples     []smp
	)
	parseInts := func(b []byte, typ protowire.Type, out *[]int64) error {
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			for len(v) > 0 {
				x, m := protowire.ConsumeVarint(v)
				if m < 0 {
					return protowire.ParseError(m)
				}
				*out = append(*out, int64(x))
				v = v[m:]
			}
			return nil
		}
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		*out = append(*out, int64(x))
		return nil
	}
	// each walks the fields of message b.
	each := func(b []byte, f func(num protowire.Number, typ protowire.Type, field []byte) error) error {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := f(num, typ, b[:m]); err != nil {
				return err
			}
			b = b[m:]
		}
		return nil
	}
	err := each(data, func(num protowire.Number, typ protowire.Type, field []byte) error {
		switch num {
		case 1: // sample_type
			v, _ := protowire.ConsumeBytes(field)
			return each(v, func(num protowire.Number, typ protowire.Type, f []byte) error {
				if num == 1 {
					x, _ := protowire.ConsumeVarint(f)
					sampleTypes = append(sampleTypes, int64(x))
				}
				return nil
			})
		case 2: // sample
			v, _ := protowire.ConsumeBytes(field)
			var s smp
			err := each(v, func(num protowire.Number, typ protowire.Type, f []byte) error {
				switch num {
				case 2:
					return parseInts(f, typ, &s.values)
				case 3:
					lv, _ := protowire.ConsumeBytes(f)
					var l label
					err := each(lv, func(num protowire.Number, typ protowire.Type, g []byte) error {
						x, _ := protowire.ConsumeVarint(g)
						switch num {
						case 1:
							l.key = int64(x)
						case 2:
							l.str = int64(x)
						}
						return nil
					})
					s.labels = append(s.labels, l)
					return err
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 6: // string_table
			v, _ := protowire.ConsumeBytes(field)
			strs = append(strs, string(v))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	str := func(i int64) string {
		if i >= 0 && int(i) < len(strs) {
			return strs[i]
		}
		return ""
	}
	cpuIdx := -1
	for i, t := range sampleTypes {
		if str(t) == "cpu" {
			cpuIdx = i
		}
	}
	if cpuIdx < 0 {
		return nil, errors.New("cpu profile: no cpu sample type")
	}
	out := map[string]time.Duration{}
	for _, s := range samples {
		if cpuIdx >= len(s.values) {
			continue
		}
		side := "runtime"
		for _, l := range s.labels {
			if str(l.key) == key {
				side = str(l.str)
			}
		}
		out[side] += time.Duration(s.values[cpuIdx])
	}
	return out, nil
}
