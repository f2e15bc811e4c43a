package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslab/xdslab/internal/summary"
)

// TestRunInterrupted: the first interrupt ends 'xdslab run' early with exit 130 and the
// results of what was measured written, marked interrupted (issue 30: exit 2, nothing written).
func TestRunInterrupted(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "long.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(tinyScenario, "duration: 1s", "duration: 10m", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(2*time.Second, cancel)
	defer stop.Stop()
	out := filepath.Join(dir, "out")
	done := make(chan int)
	go func() { done <- runCLI(ctx, []string{"run", p, "--out", out, "--progress", "off"}) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the interrupted run did not end within a minute of a 10-minute scenario")
	}
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d", code, exitInterrupted)
	}
	s, err := summary.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if why := s.Metadata.Labels["note.interrupted"]; !strings.Contains(why, "interrupted in the") {
		t.Errorf("note.interrupted = %q", why)
	}
	for _, f := range []string{"report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestInterruptible: the first signal cancels the context and says how to exit at once; the
// second calls exit.
func TestInterruptible(t *testing.T) {
	defer goleak.VerifyNone(t)
	sigs := make(chan os.Signal, 2)
	var stderr bytes.Buffer
	exited := make(chan struct{})
	ctx, stop := interruptible(context.Background(), sigs, &stderr, stopNote([]string{"run", "quickstart"}), func() { close(exited) })
	sigs <- syscall.SIGINT
	<-ctx.Done()
	sigs <- syscall.SIGINT
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not exit")
	}
	stop()
	for _, want := range []string{"stopping and writing what was measured", "press Ctrl-C again", "exiting at once"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}

	// Without a signal, stop releases the watcher (goleak checks) and exit is never called.
	_, stop2 := interruptible(context.Background(), make(chan os.Signal), &stderr, "", func() { t.Error("exit called") })
	stop2()

	if got := stopNote([]string{"controlplane", "--config-dir", "d"}); !strings.Contains(got, "draining") {
		t.Errorf("controlplane's note %q does not say it drains", got)
	}
}

// TestFleetInterrupted: an interrupt before --duration has passed writes the summary, marked,
// and exits 130 (it exited 0, or 99, as if the run had been whole); without --duration Ctrl-C
// is how a fleet ends, not an interruption.
func TestFleetInterrupted(t *testing.T) {
	for _, tc := range []struct {
		duration string
		want     int
		note     bool
	}{
		{"10m", exitInterrupted, true},
		{"0", exitThreshold, false}, // ended by Ctrl-C as documented; no client configured: 99
	} {
		file := filepath.Join(t.TempDir(), "fleet.json")
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(500*time.Millisecond, cancel)
		done := make(chan int)
		go func() {
			done <- runCLI(ctx, []string{"fleet", "--target", "127.0.0.1:1", "--clients", "1", "--duration", tc.duration,
				"--progress", "off", "--summary", file})
		}()
		var code int
		select {
		case code = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("--duration %s: the interrupted fleet did not end within a minute", tc.duration)
		}
		stop.Stop()
		cancel()
		if code != tc.want {
			t.Errorf("--duration %s: exit %d, want %d", tc.duration, code, tc.want)
		}
		s, err := summary.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if why := s.Metadata.Labels["note.interrupted"]; (why != "") != tc.note {
			t.Errorf("--duration %s: note.interrupted = %q, want one: %v", tc.duration, why, tc.note)
		}
	}
}
