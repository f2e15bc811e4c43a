package fakeenvoy

import (
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/clock"
	"github.com/xdslab/xdslab/measure"
	"github.com/xdslab/xdslab/probe"
)

// backlogRecorder keeps the backlogs a client reports.
type backlogRecorder struct {
	probe.NopHooks
	got []time.Duration
}

func (b *backlogRecorder) ReceiveBacklog(_ probe.ClientInfo, d time.Duration) {
	b.got = append(b.got, d)
}

// fixedClock is a clock that stays at one time; it has no timers.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }

func (fixedClock) NewTimer(time.Duration) clock.Timer { panic("fixedClock: no timers") }

// TestReportBacklog: a response's receive backlog runs from its receive stamp, or from the end
// of a scripted ACK delay it waited behind, to the moment the client is done with it.
func TestReportBacklog(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name         string
		recv, freeAt time.Time
		now          time.Time
		want         time.Duration
	}{
		{"read at once", ms(10), time.Time{}, ms(10), 0},
		{"waited behind earlier responses", ms(10), time.Time{}, ms(35), 25 * time.Millisecond},
		{"arrived during a scripted delay", ms(10), ms(40), ms(42), 2 * time.Millisecond},
		{"a delay that ended before it arrived", ms(50), ms(40), ms(53), 3 * time.Millisecond},
		{"a clock behind the stamp", ms(10), time.Time{}, ms(9), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := fixedClock{tc.now}
			rec := &backlogRecorder{}
			c := newTestClient(t, ClientConfig{Clock: clock}, rec)
			o := owner{c: c, freeAt: tc.freeAt}
			o.reportBacklog(tc.recv)
			if len(rec.got) != 1 || rec.got[0] != tc.want {
				t.Errorf("backlog %v, want [%v]", rec.got, tc.want)
			}
		})
	}
	// Hooks that do not take it: nothing is reported, nothing breaks.
	c := newTestClient(t, ClientConfig{Clock: fixedClock{t0}}, probe.NopHooks{})
	(&owner{c: c}).reportBacklog(t0)
}

// BenchmarkReportBacklog is what measuring the receive backlog adds per response in a fleet
// (one clock reading, the tee's type check, one histogram record under the observer's shard
// lock); compare it with the fleet's CPU per pushed response (BenchmarkFleetHeapPerClient).
func BenchmarkReportBacklog(b *testing.B) {
	o := measure.NewObserver(measure.ObserverConfig{})
	c, err := NewClient(ClientConfig{Node: IdentityTemplate{}.Node(0)}, Tee{o, measure.NewMatcher(measure.MatcherConfig{})})
	if err != nil {
		b.Fatal(err)
	}
	ow := owner{c: c}
	recv := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ow.reportBacklog(recv)
	}
}
