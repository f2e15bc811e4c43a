package simulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/probe"
)

// The event log / trace format: one JSON object per line.
//
//	{"id":1,"kind":"endpoint-flap","phase":"remove","scheduled":"1.25s","t0":"2026-…Z",
//	 "upserts":[{"kind":"ServiceEntry","name":"svc-3","namespace":"ns-1","labels":{…},"spec":{…}}],
//	 "deletes":[{"kind":"WorkloadEntry","name":"svc-3-10-0-0-7","namespace":"ns-1"}],
//	 "expectation":{"id":1,"kind":"endpoint-flap","scheduled":"…","t0":"…","all":[…]}}
//
// scheduled is the offset from the start of churn (a Go duration); spec is the istio.io/api
// object in protojson (camelCase) form. late and lateness are present for late events.

type traceRecord struct {
	ID          uint64            `json:"id"`
	Kind        string            `json:"kind"`
	Phase       string            `json:"phase,omitempty"`
	Scheduled   string            `json:"scheduled"`
	T0          time.Time         `json:"t0"`
	Late        bool              `json:"late,omitempty"`
	Lateness    string            `json:"lateness,omitempty"`
	Upserts     []objectRecord    `json:"upserts,omitempty"`
	Deletes     []keyRecord       `json:"deletes,omitempty"`
	Expectation probe.Expectation `json:"expectation"`
}

type objectRecord struct {
	Kind      string            `json:"kind"`
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels,omitempty"`
	Spec      json.RawMessage   `json:"spec"`
}

type keyRecord struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// TraceEvent is one event read back from a trace.
type TraceEvent struct {
	ID          uint64
	Kind        ChurnKind
	Phase       string
	Scheduled   time.Duration
	T0          time.Time
	Upserts     []istioconfig.Config
	Deletes     []istioconfig.Key
	Expectation probe.Expectation
}

// EncodeEvent renders ev as one trace line (without the newline): the line ParseTrace reads back
// and sinks.EventLog writes.
func EncodeEvent(ev Event) ([]byte, error) {
	rec := traceRecord{
		ID: ev.ID, Kind: string(ev.Kind), Phase: ev.Phase, Scheduled: ev.Scheduled.String(),
		T0: ev.T0, Late: ev.Late, Expectation: ev.Expectation,
	}
	if ev.Late {
		rec.Lateness = ev.Lateness.String()
	}
	for _, c := range ev.Upserts {
		spec, err := istioconfig.MarshalSpec(c.Spec)
		if err != nil {
			return nil, fmt.Errorf("event %d: %s: %w", ev.ID, c.Key(), err)
		}
		rec.Upserts = append(rec.Upserts, objectRecord{Kind: string(c.Kind), Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Spec: spec})
	}
	for _, k := range ev.Deletes {
		rec.Deletes = append(rec.Deletes, keyRecord{Kind: string(k.Kind), Name: k.Name, Namespace: k.Namespace})
	}
	return json.Marshal(rec)
}

// ParseTrace reads a JSON-lines trace (the EventLog format). name is used in errors, which give
// name:line and what is wrong. Blank lines are skipped; events are returned in scheduled order
// (stable for equal offsets).
func ParseTrace(r io.Reader, name string) ([]TraceEvent, error) {
	br := bufio.NewReader(r)
	var out []TraceEvent
	for line := 1; ; line++ {
		data, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			te, perr := parseTraceLine(data)
			if perr != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, perr)
			}
			out = append(out, te)
		}
		if err != nil {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b TraceEvent) int {
		switch {
		case a.Scheduled < b.Scheduled:
			return -1
		case a.Scheduled > b.Scheduled:
			return 1
		}
		return 0
	})
	return out, nil
}

func parseTraceLine(data []byte) (TraceEvent, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rec traceRecord
	if err := dec.Decode(&rec); err != nil {
		return TraceEvent{}, fmt.Errorf("not a trace record (one JSON object per line, fields id, kind, scheduled, t0, upserts, deletes, expectation): %w", err)
	}
	if dec.More() {
		return TraceEvent{}, errors.New("more than one JSON value on the line: put one event per line")
	}
	kind := ChurnKind(rec.Kind)
	if !slices.Contains(churnKinds, kind) || kind == Replay {
		return TraceEvent{}, fmt.Errorf("kind %q: use one of %v (not replay)", rec.Kind, churnKinds[:len(churnKinds)-1])
	}
	sched, err := time.ParseDuration(rec.Scheduled)
	if err != nil || sched < 0 {
		return TraceEvent{}, fmt.Errorf("scheduled %q: want a non-negative Go duration such as \"1.5s\"", rec.Scheduled)
	}
	te := TraceEvent{ID: rec.ID, Kind: kind, Phase: rec.Phase, Scheduled: sched, T0: rec.T0, Expectation: rec.Expectation}
	for i, o := range rec.Upserts {
		if o.Name == "" || o.Namespace == "" {
			return TraceEvent{}, fmt.Errorf("upserts[%d]: name and namespace are required", i)
		}
		spec, err := istioconfig.UnmarshalSpec(istioconfig.Kind(o.Kind), o.Spec)
		if err != nil {
			return TraceEvent{}, fmt.Errorf("upserts[%d] (%s %s/%s): spec: %w", i, o.Kind, o.Namespace, o.Name, err)
		}
		te.Upserts = append(te.Upserts, istioconfig.Config{
			Meta: istioconfig.Meta{Kind: istioconfig.Kind(o.Kind), Name: o.Name, Namespace: o.Namespace, Labels: o.Labels},
			Spec: spec,
		})
	}
	for i, k := range rec.Deletes {
		if _, known := istioconfig.NewSpec(istioconfig.Kind(k.Kind)); !known {
			return TraceEvent{}, fmt.Errorf("deletes[%d]: unknown kind %q: use one of %v", i, k.Kind, istioconfig.Kinds())
		}
		if k.Name == "" || k.Namespace == "" {
			return TraceEvent{}, fmt.Errorf("deletes[%d]: name and namespace are required", i)
		}
		te.Deletes = append(te.Deletes, istioconfig.Key{Kind: istioconfig.Kind(k.Kind), Name: k.Name, Namespace: k.Namespace})
	}
	if err := rec.Expectation.Validate(); err != nil {
		return TraceEvent{}, fmt.Errorf("expectation: %w", err)
	}
	return te, nil
}
