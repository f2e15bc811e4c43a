package clock

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestRealTimer checks the semantics Timer promises, on the real clock in a synctest bubble
// (virtual time): it fires after d, Reset re-arms it, and after Stop nothing is received.
func TestRealTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := Real()
		start := c.Now()
		tm := c.NewTimer(time.Second)
		if got := (<-tm.C()).Sub(start); got != time.Second {
			t.Fatalf("fired after %v, want 1s", got)
		}
		tm.Reset(2 * time.Second)
		time.Sleep(time.Second)
		tm.Reset(2 * time.Second) // re-armed before it fired: fires 2s from now, once
		at := <-tm.C()
		if got := at.Sub(start); got != 4*time.Second {
			t.Fatalf("re-armed timer fired at +%v, want +4s", got)
		}
		tm.Reset(time.Second)
		tm.Stop()
		time.Sleep(2 * time.Second)
		select {
		case <-tm.C():
			t.Fatal("a stopped timer fired")
		default:
		}
	})
}
