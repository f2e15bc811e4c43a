package fakeenvoy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestObserverCounts(t *testing.T) {
	o := NewObserver(ObserverConfig{Shards: 3})
	cds, eds := resource.ClusterType, resource.EndpointType
	o.Started(0, at(0), at(0))
	o.Started(1, at(0), at(0))
	o.connected1(0, at(10))
	o.connected1(1, at(20))
	o.response1(0, ResponseInfo{TypeURL: cds, Version: "1", Bytes: 100, Resources: 2, Changed: 2, Recv: at(30)})
	o.ackSent1(0, ResponseInfo{TypeURL: cds, Recv: at(30)}, at(32))
	o.response1(0, ResponseInfo{TypeURL: eds, Version: "1", Bytes: 50, Resources: 2, Changed: 2, Recv: at(40)})
	o.response1(1, ResponseInfo{TypeURL: eds, Version: "1", Bytes: 50, Resources: 2, NoOp: true, Recv: at(41)})
	o.response1(1, ResponseInfo{TypeURL: eds, Version: "2", Bytes: 60, Resources: 2, Removed: 1, Nacked: true, Recv: at(42)})
	o.ackSent1(1, ResponseInfo{TypeURL: eds, Recv: at(42)}, at(52))
	o.firstFullConfig1(0, "a", at(100))
	o.firstFullConfig1(0, "a", at(200)) // once per client
	o.warmingTimeout1(1, cds)
	o.connectFailed1(2, status.Error(codes.ResourceExhausted, "too many streams"))
	o.connectFailed1(2, status.Error(codes.ResourceExhausted, "too many streams"))
	o.connectFailed1(3, fmt.Errorf("dial: %w", errors.New("refused")))
	o.disconnected1(1)

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
	seen := map[string]bool{}
	p := Progress{FailureText: s.ConnectFailureText}
	wantLines := []string{
		"first connect failure with code ResourceExhausted: rpc error: code = ResourceExhausted desc = too many streams",
		"first connect failure with code Unknown: dial: refused",
	}
	if got := p.NewFailures(seen); !slices.Equal(got, wantLines) {
		t.Errorf("NewFailures = %q, want %q", got, wantLines)
	}
	if got := p.NewFailures(seen); len(got) != 0 {
		t.Errorf("NewFailures repeated %q; each code is reported once", got)
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
	resp := func(version string, bytes int, nacked bool) ResponseInfo {
		return ResponseInfo{TypeURL: lds, Version: version, Bytes: bytes, Resources: 1, Nacked: nacked}
	}
	tests := []struct {
		name           string
		seq            []ResponseInfo
		resends, loops uint64
	}{
		{"accepted", []ResponseInfo{resp("1", 10, false), resp("1", 10, false), resp("1", 10, false)}, 0, 0},
		{"fixed after nack", []ResponseInfo{resp("1", 10, true), resp("2", 12, false)}, 0, 0},
		{"one resend", []ResponseInfo{resp("1", 10, true), resp("1", 10, true), resp("2", 12, false)}, 1, 0},
		{"loop", []ResponseInfo{resp("1", 10, true), resp("1", 10, true), resp("1", 10, true), resp("1", 10, true), resp("1", 10, true)}, 4, 1},
		{"two loops", []ResponseInfo{resp("1", 10, true), resp("1", 10, true), resp("1", 10, true), resp("1", 10, true),
			resp("2", 10, true), resp("2", 10, true), resp("2", 10, true), resp("2", 10, true)}, 6, 2},
		{"resend accepted at last", []ResponseInfo{resp("1", 10, true), resp("1", 10, false), resp("1", 10, true)}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver(ObserverConfig{ResendLoopAfter: 3})
			o.connected1(0, at(0))
			for _, r := range tc.seq {
				o.response1(0, r)
			}
			got := o.Stats().Types["LDS"]
			if got.ResendsAfterNack != tc.resends || got.ResendLoops != tc.loops {
				t.Errorf("resends/loops = %d/%d, want %d/%d", got.ResendsAfterNack, got.ResendLoops, tc.resends, tc.loops)
			}
		})
	}
	// A reconnect forgets the last response: the server restating it is no resend.
	o := NewObserver(ObserverConfig{})
	o.connected1(0, at(0))
	o.response1(0, resp("1", 10, true))
	o.disconnected1(0)
	o.connected1(0, at(1))
	o.response1(0, resp("1", 10, true))
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
			o.connected1(i, at(0))
			for j := range responses {
				o.response1(i, ResponseInfo{TypeURL: resource.EndpointType, Version: fmt.Sprint(j), Bytes: 3})
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

func TestPromHistogramFromHDR(t *testing.T) {
	h := NewLatencyHistogram()
	for _, us := range []int64{400, 2000, 2000, 70_000_000} {
		if err := h.RecordValue(us); err != nil {
			t.Fatal(err)
		}
	}
	var m dto.Metric
	if err := promHistogram(descTTFC, h, "sidecars").Write(&m); err != nil {
		t.Fatal(err)
	}
	want := map[float64]uint64{.0005: 1, .001: 1, .0025: 3, .005: 3, 60: 3, 300: 4}
	for _, b := range m.GetHistogram().GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if got := m.GetHistogram().GetSampleCount(); got != 4 {
		t.Errorf("count = %d, want 4", got)
	}
	if sum := m.GetHistogram().GetSampleSum(); sum < 70.004 || sum > 70.004*1.001 {
		t.Errorf("sum = %g s, want 70.0044 within HDR precision", sum)
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
			o.connected1(7, at(tc.at+10))
			o.firstFullConfig1(7, "g", at(tc.full))
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
				o.firstFullConfig1(f.index, f.group, at(10))
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

// TestFleetGroupSizes: a fleet counts its clients by group, a shard only its own.
func TestFleetGroupSizes(t *testing.T) {
	groups := []Group{{Name: "a", Count: 3}, {Name: "b", Count: 4}}
	tests := []struct {
		seg  Segment
		want map[string]int
	}{
		{Segment{}, map[string]int{"a": 3, "b": 4}},
		{Segment{Index: 0, Count: 2}, map[string]int{"a": 2, "b": 2}}, // clients 0, 2 | 4, 6
		{Segment{Index: 1, Count: 2}, map[string]int{"a": 1, "b": 2}}, // client 1 | 3, 5
		{Segment{Index: 2, Count: 7}, map[string]int{"a": 1}},         // client 2
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d of %d", tc.seg.Index, tc.seg.Count), func(t *testing.T) {
			f, err := NewFleet(FleetConfig{Target: "127.0.0.1:1", Groups: groups, Segment: tc.seg})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Stop()
			if got := f.GroupSizes(); !maps.Equal(got, tc.want) {
				t.Errorf("GroupSizes = %v, want %v", got, tc.want)
			}
		})
	}
}
