package config

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
)

const durationName protoreflect.FullName = "google.protobuf.Duration"

// normalizeDurations rewrites Go-style durations ("30ms", "1m30s", "1h"), which Istio's CRDs
// accept and its documentation uses, into the seconds form protojson requires ("0.030s"). It
// walks the spec JSON along the message descriptor; changed is false when nothing was
// rewritten (then out is nil).
func normalizeDurations(raw []byte, md protoreflect.MessageDescriptor) (out []byte, changed bool) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if !walkDurations(v, md) {
		return nil, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

func walkDurations(v any, md protoreflect.MessageDescriptor) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	changed := false
	for k, fv := range obj {
		fd := md.Fields().ByJSONName(k)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(k))
		}
		if fd == nil || fd.Message() == nil {
			continue
		}
		elem := fd.Message()
		if fd.IsMap() {
			if elem = fd.MapValue().Message(); elem == nil {
				continue
			}
			if m, ok := fv.(map[string]any); ok {
				for mk, mv := range m {
					if nv, ok := fixDuration(mv, elem); ok {
						m[mk], changed = nv, true
					} else if walkDurations(mv, elem) {
						changed = true
					}
				}
			}
			continue
		}
		if fd.IsList() {
			if l, ok := fv.([]any); ok {
				for i, lv := range l {
					if nv, ok := fixDuration(lv, elem); ok {
						l[i], changed = nv, true
					} else if walkDurations(lv, elem) {
						changed = true
					}
				}
			}
			continue
		}
		if nv, ok := fixDuration(fv, elem); ok {
			obj[k], changed = nv, true
		} else if walkDurations(fv, elem) {
			changed = true
		}
	}
	return changed
}

// fixDuration converts v when md is Duration and v a Go duration string protojson would reject.
func fixDuration(v any, md protoreflect.MessageDescriptor) (string, bool) {
	s, ok := v.(string)
	if !ok || md.FullName() != durationName {
		return "", false
	}
	if strings.HasSuffix(s, "s") {
		if _, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64); err == nil {
			return "", false // already protojson's form
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return "", false // left for protojson to report
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s", true
}
