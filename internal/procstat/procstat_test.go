package procstat

import (
	"testing"
	"time"
)

func TestCPUAdvancesWithWork(t *testing.T) {
	cpu0, rss, ok := Read()
	if !ok {
		t.Skip("no resource usage on this platform")
	}
	if rss <= 0 {
		t.Errorf("peak RSS = %d, want > 0", rss)
	}
	x := 0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	if d := CPU() - cpu0; d <= 0 {
		t.Errorf("50 ms of spinning (%d rounds) added %v of CPU time", x, d)
	}
}
