package measure

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslab/xdslab/probe"
)

// ci is the ClientInfo of client index i, with no state (the observer reads none).
func ci(i int) probe.ClientInfo { return probe.ClientInfo{Index: i} }

func TestObserverCounts(t *testing.T) {
	o := NewObserver(ObserverConfig{Shards: 3})
	cds, eds := resource.ClusterType, resource.EndpointType
	o.Started(0, at(0), at(0))
	o.Started(1, at(0), at(0))
	o.Connected(ci(0), at(10), 1)
	o.Connected(ci(1), at(20), 1)
	o.Response(ci(0), probe.ResponseInfo{TypeURL: cds, Version: "1", Bytes: 100, Resources: 2, Changed: 2, Recv: at(30)})
	o.AckSent(ci(0), probe.ResponseInfo{TypeURL: cds, Recv: at(30)}, at(32))
	o.Response(ci(0), probe.ResponseInfo{TypeURL: eds, Version: "1", Bytes: 50, Resources: 2, Changed: 2, Recv: at(40)})
	o.Response(ci(1), probe.ResponseInfo{TypeURL: eds, Version: "1", Bytes: 50, Resources: 2, NoOp: true, Recv: at(41)})
	o.Response(ci(1), probe.ResponseInfo{TypeURL: eds, Version: "2", Bytes: 60, Resources: 2, Removed: 1, Nacked: true, Recv: at(42)})
	o.AckSent(ci(1), probe.ResponseInfo{TypeURL: eds, Recv: at(42)}, at(52))
	o.FirstFullConfig(probe.ClientInfo{Index: 0, Group: "a"}, at(100))
	o.FirstFullConfig(probe.ClientInfo{Index: 0, Group: "a"}, at(200)) // once per client
	o.WarmingTimeout(ci(1), cds, time.Time{})
	o.ConnectFailed(ci(2), time.Time{}, status.Error(codes.ResourceExhausted, "too many streams"))
	o.ConnectFailed(ci(2), time.Time{}, status.Error(codes.ResourceExhausted, "too many streams"))
	o.ConnectFailed(ci(3), time.Time{}, fmt.Errorf("dial: %w", errors.New("refused")))
	o.Disconnected(ci(1), time.Time{}, nil)

	s := o.Stats()
	if s.Clients != 4 || s.Connected != 1 || s.MaxConnected != 2 || s.Connects != 2 || s.Disconnects != 1 {
		t.Errorf("clients/connected/max/connects/disconnects = %d/%d/%d/%d/%d, want 4/1/2/2/1",
			s.Clients, s.Connected, s.MaxConnected, s.Connects, s.Disconnects)
	}
	wantTypes := map[string]TypeStats{
		"CDS": {Responses: 1, Resources: 2, Changed: 2, Bytes: 100, WarmingTimeouts: 1},
		"EDS": {Responses: 3, Resources: 6, Changed: 2, Removed: 1, Bytes: 160, NoOp: 1, Nacks: 1},
	}
	for name, want := range wantTypes {
		if got := s.Types[name]; got != want {
			t.Errorf("%s = %+v, want %+v", name, got, want)
		}
	}
	if s.Total.Responses != 4 || s.Total.Bytes != 260 || s.Total.Nacks != 1 {
		t.Errorf("total = %+v", s.Total)
	}
	if got := s.ConnectFailures; got["ResourceExhausted"] != 2 || got["Unknown"] != 1 || s.ConnectFailuresTotal() != 3 {
		t.Errorf("connect failures = %v", got)
	}
	wantText := map[string]string{"ResourceExhausted": "rpc error: code = ResourceExhausted desc = too many streams", "Unknown": "dial: refused"}
	if !maps.Equal(s.ConnectFailureText, wantText) {
		t.Errorf("connect failure texts = %q, want %q", s.ConnectFailureText, wantText)
	}
	if s.FullConfig != 1 || s.TimeToFirstConfig.TotalCount() != 1 || !s.TimeToFirstConfig.ValuesAreEquivalent(s.TimeToFirstConfig.Max(), 100000) {
		t.Errorf("time to first config: count %d max %dµs, want 1 and 100000µs (start at 0, full at 100ms)",
			s.TimeToFirstConfig.TotalCount(), s.TimeToFirstConfig.Max())
	}
	if s.AcksSent != 2 || s.AckDelay.Min() != 2000 || !s.AckDelay.ValuesAreEquivalent(s.AckDelay.Max(), 10000) {
		t.Errorf("ack delay: count %d min %d max %d, want 2, 2000µs, 10000µs", s.AcksSent, s.AckDelay.Min(), s.AckDelay.Max())
	}
	if got := s.Types["EDS"].ResponsesPerNack(); got != 3 {
		t.Errorf("responses per NACK = %g, want 3", got)
	}
}

func TestObserverResendLoop(t *testing.T) {
	lds := resource.ListenerType
	resp := func(version string, bytes int, nacked bool) probe.ResponseInfo {
		return probe.ResponseInfo{TypeURL: lds, Version: version, Bytes: bytes, Resources: 1, Nacked: nacked}
	}
	tests := []struct {
		name           string
		seq            []probe.ResponseInfo
		resends, loops uint64
	}{
		{"accepted", []probe.ResponseInfo{resp("1", 10, false), resp("1", 10, false), resp("1", 10, false)}, 0, 0},
		{"fixed after nack", []probe.ResponseInfo{resp("1", 10, true), resp("2", 12, false)}, 0, 0},
		{"one resend", []probe.ResponseInfo{resp("1", 10, true), resp("1", 10, true), resp("2", 12, false)}, 1, 0},
		{"loop", []probe.ResponseInfo{resp("1", 10, true), resp("1", 10, true), resp("1", 10, true), resp("1", 10, true), resp("1", 10, true)}, 4, 1},
		{"two loops", []probe.ResponseInfo{resp("1", 10, true), resp("1", 10, true), resp("1", 10, true), resp("1", 10, true),
			resp("2", 10, true), resp("2", 10, true), resp("2", 10, true), resp("2", 10, true)}, 6, 2},
		{"resend accepted at last", []probe.ResponseInfo{resp("1", 10, true), resp("1", 10, false), resp("1", 10, true)}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver(ObserverConfig{ResendLoopAfter: 3})
			o.Connected(ci(0), at(0), 1)
			for _, r := range tc.seq {
				o.Response(ci(0), r)
			}
			got := o.Stats().Types["LDS"]
			if got.ResendsAfterNack != tc.resends || got.ResendLoops != tc.loops {
				t.Errorf("resends/loops = %d/%d, want %d/%d", got.ResendsAfterNack, got.ResendLoops, tc.resends, tc.loops)
			}
		})
	}
	// A reconnect forgets the last response: the server restating it is no resend.
	o := NewObserver(ObserverConfig{})
	o.Connected(ci(0), at(0), 1)
	o.Response(ci(0), resp("1", 10, true))
	o.Disconnected(ci(0), time.Time{}, nil)
	o.Connected(ci(0), at(1), 1)
	o.Response(ci(0), resp("1", 10, true))
	if got := o.Stats().Types["LDS"].ResendsAfterNack; got != 0 {
		t.Errorf("resend counted across a reconnect: %d", got)
	}
}

func TestObserverConcurrentShards(t *testing.T) {
	o := NewObserver(ObserverConfig{Shards: 4})
	const clients, responses = 40, 200
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.Connected(ci(i), at(0), 1)
			for j := range responses {
				o.Response(ci(i), probe.ResponseInfo{TypeURL: resource.EndpointType, Version: fmt.Sprint(j), Bytes: 3})
			}
		}()
	}
	done := make(chan struct{})
	go func() { // readers run beside the writers
		defer close(done)
		for range 20 {
			_ = o.Stats()
		}
	}()
	wg.Wait()
	<-done
	s := o.Stats()
	if s.Connected != clients || s.Total.Responses != clients*responses || s.Total.Bytes != 3*clients*responses {
		t.Errorf("connected %d responses %d bytes %d", s.Connected, s.Total.Responses, s.Total.Bytes)
	}
}

func TestTypeName(t *testing.T) {
	for url, want := range map[string]string{
		resource.ClusterType:          "CDS",
		resource.EndpointType:         "EDS",
		resource.ListenerType:         "LDS",
		resource.RouteType:            "RDS",
		resource.SecretType:           "SDS",
		"type.googleapis.com/foo.Bar": "foo.Bar",
	} {
		if got := TypeName(url); got != want {
			t.Errorf("TypeName(%s) = %s, want %s", url, got, want)
		}
	}
}

// TestObserverTimeToFirstConfigFromSchedule: time to first config counts from the client's
// scheduled start, so a fleet that started it late (a loaded harness) cannot hide the lag;
// the lag itself is the start lateness.
func TestObserverTimeToFirstConfigFromSchedule(t *testing.T) {
	for _, tc := range []struct {
		name            string
		due, at, full   int // ms
		wantTTFC, wantL int64
	}{
		{"on time", 0, 0, 100, 100000, 1}, // 0 is recorded as the histograms' lowest, 1µs
		{"started 400ms late", 0, 400, 500, 500000, 400000},
		{"started early (a clock step)", 100, 50, 300, 200000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver(ObserverConfig{Shards: 2})
			o.Started(7, at(tc.due), at(tc.at))
			o.Started(7, at(tc.due+1000), at(tc.at+1000)) // a second start (churn) keeps the first
			o.Connected(ci(7), at(tc.at+10), 1)
			o.FirstFullConfig(probe.ClientInfo{Index: 7, Group: "g"}, at(tc.full))
			s := o.Stats()
			if s.TimeToFirstConfig.TotalCount() != 1 || !s.TimeToFirstConfig.ValuesAreEquivalent(s.TimeToFirstConfig.Max(), tc.wantTTFC) {
				t.Errorf("time to first config %dµs (count %d), want %dµs", s.TimeToFirstConfig.Max(), s.TimeToFirstConfig.TotalCount(), tc.wantTTFC)
			}
			if s.StartLateness.TotalCount() != 1 || !s.StartLateness.ValuesAreEquivalent(s.StartLateness.Max(), tc.wantL) {
				t.Errorf("start lateness %dµs (count %d), want %dµs", s.StartLateness.Max(), s.StartLateness.TotalCount(), tc.wantL)
			}
		})
	}
}

// TestObserverFullConfigByGroup: the first full config of each client counts once, in its
// group; FullConfigByGroup and Stats agree and sum to FullConfig.
func TestObserverFullConfigByGroup(t *testing.T) {
	type full struct {
		index int
		group string
	}
	tests := []struct {
		name string
		seq  []full
		want map[string]uint64
	}{
		{"none", nil, map[string]uint64{}},
		{"one group", []full{{0, "a"}, {1, "a"}}, map[string]uint64{"a": 2}},
		{"two groups", []full{{0, "a"}, {1, "b"}, {2, "b"}, {9, "b"}}, map[string]uint64{"a": 1, "b": 3}},
		{"repeats count once", []full{{0, "a"}, {0, "a"}, {3, "b"}, {3, "b"}}, map[string]uint64{"a": 1, "b": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver(ObserverConfig{Shards: 3})
			for _, f := range tc.seq {
				o.FirstFullConfig(probe.ClientInfo{Index: f.index, Group: f.group}, at(10))
			}
			if got := o.FullConfigByGroup(); !maps.Equal(got, tc.want) {
				t.Errorf("FullConfigByGroup = %v, want %v", got, tc.want)
			}
			st := o.Stats()
			if !maps.Equal(st.FullConfigByGroup, tc.want) {
				t.Errorf("Stats().FullConfigByGroup = %v, want %v", st.FullConfigByGroup, tc.want)
			}
			var sum uint64
			for _, n := range tc.want {
				sum += n
			}
			if st.FullConfig != sum {
				t.Errorf("FullConfig = %d, want the groups' sum %d", st.FullConfig, sum)
			}
		})
	}
}
