package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/xdslab/xdslab/internal/atomicfile"
	"github.com/xdslab/xdslab/internal/summary"
)

// Write writes a run's outputs into dir (created if missing): summary.json, junit.xml, every
// trend's .hgrm, cpu.pprof when the run took a CPU profile, and report.html.
func Write(dir string, r Run) error {
	return WriteBeside(filepath.Join(dir, "summary.json"), r)
}

// WriteBeside writes a run's summary to the file summaryPath and its other outputs (those of
// Write) into that file's directory (created if missing).
func WriteBeside(summaryPath string, r Run) error {
	dir := filepath.Dir(summaryPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	s := r.Summary
	if err := summary.WriteFile(summaryPath, s); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "junit.xml"), func(w io.Writer) error { return WriteJUnit(w, s) }); err != nil {
		return err
	}
	if err := WriteHgrms(dir, s); err != nil {
		return err
	}
	if len(r.CPUProfile) > 0 {
		// go tool pprof -tagfocus xdslab_side=harness cpu.pprof: where each side spent its CPU.
		if err := atomicfile.Write(filepath.Join(dir, "cpu.pprof"), func(w io.Writer) error {
			_, err := w.Write(r.CPUProfile)
			return err
		}); err != nil {
			return err
		}
	}
	return atomicfile.Write(filepath.Join(dir, "report.html"), func(w io.Writer) error { return WriteHTML(w, r) })
}
