package push

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const (
	cds = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	eds = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// fstep is one call on a Flow at ms and its expected outcome:
//
//	push TYPE ID    → "send [IDS]" | "held"
//	sent TYPE NONCE → ""
//	ack TYPE NONCE  → "wait Xms release [IDS]" | "wait Xms" | "stale"
//	expire          → "TYPE [IDS] ..." | ""
//	deadline        → "Xms" | "-"
type fstep struct {
	ms   int
	op   string
	typ  string
	arg  string
	want string
}

func runFlow(t *testing.T, opts FlowOptions, steps []fstep) *Flow {
	t.Helper()
	f := NewFlow(opts)
	short := func(typ string) string { return typ[strings.LastIndex(typ, ".")+1:] }
	for i, s := range steps {
		now := at(s.ms)
		var got string
		switch s.op {
		case "push":
			var id uint64
			fmt.Sscan(s.arg, &id)
			if out := f.Push(s.typ, req(id), now); out != nil {
				got = fmt.Sprintf("send %v", ids(out))
			} else {
				got = "held"
			}
		case "sent":
			f.Sent(s.typ, s.arg, now)
		case "ack":
			res := f.Ack(s.typ, s.arg, now)
			switch {
			case !res.Matched:
				got = "stale"
				if res.Release != nil || res.Wait != 0 {
					t.Errorf("step %d: unmatched ack returned %+v", i, res)
				}
			case res.Release != nil:
				got = fmt.Sprintf("wait %dms release %v", res.Wait.Milliseconds(), ids(res.Release))
			default:
				got = fmt.Sprintf("wait %dms", res.Wait.Milliseconds())
			}
		case "expire":
			var parts []string
			for _, r := range f.Expire(now) {
				parts = append(parts, fmt.Sprintf("%s %v", short(r.TypeURL), ids(r.Req)))
			}
			got = strings.Join(parts, " ")
		case "deadline":
			got = "-"
			if d := f.Deadline(); !d.IsZero() {
				got = fmt.Sprintf("%dms", d.Sub(t0).Milliseconds())
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if got != s.want {
			t.Errorf("step %d (%dms %s %s %s): got %q, want %q", i, s.ms, s.op, short(s.typ+"."), s.arg, got, s.want)
		}
	}
	return f
}

func TestFlow(t *testing.T) {
	on := FlowOptions{Enabled: true, AckTimeout: time.Second}
	tests := []struct {
		name  string
		opts  FlowOptions
		steps []fstep
		stats FlowStats
	}{
		{
			name: "pushes pass while nothing is outstanding",
			opts: on,
			steps: []fstep{
				{0, "push", cds, "1", "send [1]"},
				{1, "push", cds, "2", "send [2]"}, // not sent (e.g. no change): still idle
				{2, "deadline", "", "", "-"},
			},
		},
		{
			name: "held while unanswered, merged, released by the ACK",
			opts: on,
			steps: []fstep{
				{0, "push", cds, "1", "send [1]"},
				{0, "sent", cds, "n1", ""},
				{10, "push", cds, "2", "held"},
				{20, "push", cds, "3", "held"},
				{20, "deadline", "", "", "1000ms"},
				{30, "push", eds, "4", "send [4]"}, // other types are independent
				{50, "ack", cds, "n1", "wait 50ms release [2 3]"},
				{50, "deadline", "", "", "-"},
				{60, "push", cds, "5", "send [5]"},
			},
			stats: FlowStats{Held: 2, Released: 1},
		},
		{
			name: "a NACK ends the wait like an ACK; an answer with nothing held releases nothing",
			opts: on,
			steps: []fstep{
				{0, "push", eds, "1", "send [1]"},
				{0, "sent", eds, "n1", ""},
				{5, "ack", eds, "n1", "wait 5ms"},
				{6, "push", eds, "2", "send [2]"},
			},
		},
		{
			name: "stale and unknown nonces change nothing",
			opts: on,
			steps: []fstep{
				{0, "ack", cds, "n0", "stale"},
				{0, "sent", cds, "n1", ""},
				{10, "sent", cds, "n2", ""}, // a newer response supersedes n1
				{20, "push", cds, "1", "held"},
				{30, "ack", cds, "n1", "stale"},
				{40, "push", cds, "2", "held"},
				{50, "ack", cds, "n2", "wait 40ms release [1 2]"},
				{60, "ack", cds, "n2", "stale"}, // duplicate
			},
			stats: FlowStats{Held: 2, Released: 1, StaleAcks: 3},
		},
		{
			name: "timeout releases held requests through Expire, sorted by type",
			opts: on,
			steps: []fstep{
				{0, "sent", eds, "e1", ""},
				{100, "sent", cds, "c1", ""},
				{200, "push", eds, "1", "held"},
				{300, "push", cds, "2", "held"},
				{300, "deadline", "", "", "1000ms"},
				{999, "expire", "", "", ""},
				{1000, "expire", "", "", "ClusterLoadAssignment [1]"},
				{1000, "deadline", "", "", "1100ms"},
				{1100, "expire", "", "", "Cluster [2]"},
				{1100, "deadline", "", "", "-"},
				{1200, "ack", cds, "c1", "stale"}, // the late answer is ignored
				{1300, "push", cds, "3", "send [3]"},
			},
			stats: FlowStats{Held: 2, Released: 2, Timeouts: 2, StaleAcks: 1},
		},
		{
			name: "Expire releases both types due at once in type order",
			opts: on,
			steps: []fstep{
				{0, "sent", eds, "e1", ""},
				{0, "sent", cds, "c1", ""},
				{1, "push", eds, "1", "held"},
				{2, "push", cds, "2", "held"},
				{5000, "expire", "", "", "Cluster [2] ClusterLoadAssignment [1]"},
			},
			stats: FlowStats{Held: 2, Released: 2, Timeouts: 2},
		},
		{
			name: "a push after the timeout passes without Expire, with what was held",
			opts: on,
			steps: []fstep{
				{0, "sent", cds, "c1", ""},
				{10, "push", cds, "1", "held"},
				{2000, "push", cds, "2", "send [1 2]"},
				{2000, "expire", "", "", ""},
			},
			stats: FlowStats{Held: 1, Released: 1, Timeouts: 1},
		},
		{
			name: "an unanswered wait with nothing held needs no timer and times out lazily",
			opts: on,
			steps: []fstep{
				{0, "sent", cds, "c1", ""},
				{0, "deadline", "", "", "-"},
				{1500, "push", cds, "1", "send [1]"},
			},
			stats: FlowStats{Timeouts: 1},
		},
		{
			name: "no timeout: waits forever",
			opts: FlowOptions{Enabled: true},
			steps: []fstep{
				{0, "sent", cds, "c1", ""},
				{1, "push", cds, "1", "held"},
				{1, "deadline", "", "", "-"},
				{3600_000, "expire", "", "", ""},
				{3600_000, "push", cds, "2", "held"},
				{3600_001, "ack", cds, "c1", "wait 3600001ms release [1 2]"},
			},
			stats: FlowStats{Held: 2, Released: 1},
		},
		{
			name: "disabled: everything passes through, waits are still measured",
			opts: FlowOptions{Enabled: false, AckTimeout: time.Second},
			steps: []fstep{
				{0, "push", cds, "1", "send [1]"},
				{0, "sent", cds, "c1", ""},
				{1, "push", cds, "2", "send [2]"},
				{1, "deadline", "", "", "-"},
				{5000, "expire", "", "", ""},
				{5000, "ack", cds, "c1", "wait 5000ms"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runFlow(t, tt.opts, tt.steps)
			if got := f.Stats(); got != tt.stats {
				t.Errorf("stats %+v, want %+v", got, tt.stats)
			}
		})
	}
}

func TestFlowAccessors(t *testing.T) {
	f := NewFlow(DefaultFlowOptions())
	if f.Awaiting(cds) || f.Holding(cds) {
		t.Fatal("new flow awaits or holds")
	}
	f.Sent(cds, "n", at(0))
	f.Push(cds, req(1), at(1))
	if !f.Awaiting(cds) || !f.Holding(cds) || f.Awaiting(eds) {
		t.Fatalf("awaiting %v holding %v", f.Awaiting(cds), f.Holding(cds))
	}
	if d := f.Deadline(); !d.Equal(at(0).Add(DefaultAckTimeout)) {
		t.Fatalf("deadline %v", d)
	}
	if f.Push(cds, nil, at(2)) != nil {
		t.Fatal("nil push returned a request")
	}
}

func TestFlowOptionsValidate(t *testing.T) {
	if err := DefaultFlowOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (FlowOptions{}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := FlowOptions{Enabled: true, AckTimeout: -time.Second}.Validate()
	if err == nil || !strings.Contains(err.Error(), "ackTimeout is -1s") {
		t.Fatalf("Validate: %v", err)
	}
}
