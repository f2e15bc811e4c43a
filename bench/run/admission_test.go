package run

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdslab/xdslab/bench/collect"
	"github.com/xdslab/xdslab/internal/syncbuf"
	"github.com/xdslab/xdslab/scenarios"
)

// TestBuiltinsAdmitTheirRamp: every built-in scenario admits new ADS streams at least as fast
// as its client groups ramp together, with an explicit controlPlane.admissionRate (the default,
// the push throttle per second, is 25/s on 2 cores and varies with the machine). A built-in
// that ramps faster than its own control plane admits spends its connect phase on refusals and
// backoff (issue 30: ingress-churn took 33.8 s to connect with 1,723 ResourceExhausted).
func TestBuiltinsAdmitTheirRamp(t *testing.T) {
	for _, name := range scenarios.BuiltinNames() {
		sc, err := scenarios.Resolve(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ramp := 0.0
		for _, c := range sc.Clients {
			if c.Ramp.PerSecond() == 0 {
				ramp += float64(c.Count) // all at once: as many streams in the first second
			} else {
				ramp += c.Ramp.PerSecond()
			}
		}
		admit := sc.ControlPlane.AdmissionRate.PerSecond()
		if admit == 0 {
			t.Errorf("%s: no controlPlane.admissionRate: its clients ramp at %g/s in all; the default depends on the machine's cores", name, ramp)
			continue
		}
		if admit < ramp {
			t.Errorf("%s: controlPlane.admissionRate %g/s is below its clients' ramp of %g/s in all", name, admit, ramp)
		}
		if got := ControlPlaneOptions(sc).EffectiveAdmissionRate(); got != admit {
			t.Errorf("%s: the in-process control plane admits %g/s, the scenario says %g/s", name, got, admit)
		}
	}
}

func TestAdmissionNote(t *testing.T) {
	sc := loadScenario(t, smallScenario)
	if got := collect.AdmissionNote(0, 25, sc); got != "" {
		t.Errorf("no refusals: %q, want none", got)
	}
	in := collect.AdmissionNote(7, 2, sc)
	for _, want := range []string{"7 new ADS streams were refused with ResourceExhausted", "admits 2 new streams/s", "controlPlane.admissionRate", "at least 10/s"} {
		if !strings.Contains(in, want) {
			t.Errorf("in-process note %q lacks %q", in, want)
		}
	}
	ext := collect.AdmissionNote(7, 0, sc)
	if !strings.Contains(ext, "PILOT_MAX_REQUESTS_PER_SECOND") || !strings.Contains(ext, "--admission-rate") {
		t.Errorf("external note %q does not say how to raise the limit", ext)
	}
}

// TestRunExplainsAdmissionRefusals: a run whose clients are refused admission says so among its
// progress lines (not as a raw log record between them) and explains it in the summary.
func TestRunExplainsAdmissionRefusals(t *testing.T) {
	src := strings.Replace(smallScenario, "duration: 3s", "duration: 500ms", 1)
	src = strings.Replace(src, "seed: 7\n", "seed: 7\ncontrolPlane: {admissionRate: 5/s, pushThrottle: 1}\n", 1)
	sc := loadScenario(t, src)
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Run(ctx, sc, Options{Progress: &out, ProgressInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	require.Contains(t, s.Metadata.Labels["note.admission"], "refused with ResourceExhausted")
	require.Contains(t, out.String(), "first connect failure with code ResourceExhausted")
	require.NotContains(t, out.String(), "level=WARN")
}
