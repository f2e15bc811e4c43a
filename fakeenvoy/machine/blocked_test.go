package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/xdslab/xdslab/fakeenvoy/internal/fetest"
	"github.com/xdslab/xdslab/fakeenvoy/policy"
)

// TestBlockerPastInitialFetch: a client whose CDS and LDS phases ended at their initial fetch
// timeouts says whether CDS never came on the stream or came and was NACKed (a control plane
// that never answers is not one whose config is rejected).
func TestBlockerPastInitialFetch(t *testing.T) {
	const ift = 15 * time.Second
	for _, tc := range []struct {
		name string
		cds  bool // a CDS response, NACKed, before the timeouts
		want string
	}{
		{"nothing received", false, "no CDS response received (its initial fetch timed out)"},
		{"CDS NACKed", true, "no CDS response accepted (NACKed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(t, Config{InitialFetchTimeout: ift, Nack: policy.Nack{Realistic: true}})
			m.Start(t0)
			if tc.cds {
				s := m.OnSotw(sotwResp(t, C, "1", "n1", fetest.BadTLSCluster(t, "bad")), t0)
				if !s.Info.Nacked {
					t.Fatal("the bad cluster was not NACKed")
				}
			}
			m.OnTimer(t0.Add(ift))     // CDS's initial fetch ends
			m.OnTimer(t0.Add(2 * ift)) // then LDS's
			b, ok := m.Blocked()
			if !ok || !strings.Contains(b.Reason, tc.want) {
				t.Fatalf("blocker %+v (blocked %v), want %q", b, ok, tc.want)
			}
		})
	}
}
