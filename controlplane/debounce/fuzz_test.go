package debounce

import (
	"testing"
	"time"
)

// FuzzSimulate feeds arbitrary event streams and options through Simulate and checks the
// debouncer's invariants: every event is pushed exactly once, pushes never overlap, none
// waits longer than MaxDelay beyond the time it was blocked by the push in flight, and none
// starts before its trigger allowed.
func FuzzSimulate(f *testing.F) {
	f.Add([]byte{0, 10, 10, 10, 200}, uint16(100), uint16(1000), uint16(50), true)
	f.Add([]byte{0, 1, 0x81, 0x90, 5}, uint16(0), uint16(0), uint16(0), false)
	f.Add([]byte{50, 50, 50, 50, 50, 50, 50, 50, 50, 50}, uint16(100), uint16(300), uint16(400), false)
	f.Fuzz(func(t *testing.T, gaps []byte, minQuiet, maxDelay, pushDur uint16, debounceEDS bool) {
		opts := Options{
			MinQuiet:    time.Duration(minQuiet) * time.Millisecond,
			MaxDelay:    time.Duration(max(minQuiet, maxDelay)) * time.Millisecond,
			DebounceEDS: debounceEDS,
		}
		// Each byte is an event: the low 7 bits the gap since the previous event in ms, the
		// high bit "endpoint-only".
		events := make([]SimEvent, len(gaps))
		var at time.Duration
		for i, g := range gaps {
			at += time.Duration(g&0x7f) * time.Millisecond
			events[i] = SimEvent{At: at, EndpointOnly: g&0x80 != 0}
		}
		dur := time.Duration(pushDur) * time.Millisecond
		pushes, err := Simulate(opts, events, dur)
		if err != nil {
			t.Fatalf("Simulate(%+v): %v", opts, err)
		}
		total := 0
		for i, p := range pushes {
			st := p.Stats
			total += st.Events
			if st.Events < 1 {
				t.Fatalf("push %d carries %d events", i, st.Events)
			}
			if i > 0 && p.At < pushes[i-1].At+dur {
				t.Fatalf("push %d at %v overlaps push %d ending at %v", i, p.At, i-1, pushes[i-1].At+dur)
			}
			if st.Delay-st.Blocked > opts.MaxDelay {
				t.Fatalf("push %d: delay %v minus blocked %v exceeds maxDelay %v", i, st.Delay, st.Blocked, opts.MaxDelay)
			}
			if st.Blocked < 0 || st.Blocked > st.Delay {
				t.Fatalf("push %d: blocked %v outside [0, delay %v]", i, st.Blocked, st.Delay)
			}
			if st.Trigger == TriggerImmediate && debounceEDS {
				t.Fatalf("push %d: immediate trigger with endpoint debouncing on", i)
			}
			if st.Trigger == TriggerQuiet && st.Delay-st.Blocked < opts.MinQuiet {
				t.Fatalf("push %d: quiet trigger after %v, less than minQuiet %v", i, st.Delay-st.Blocked, opts.MinQuiet)
			}
		}
		if total != len(events) {
			t.Fatalf("pushes carry %d events, want %d", total, len(events))
		}
	})
}
