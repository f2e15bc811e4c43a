package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/xdslab/xdslab/internal/summary"
)

// Write writes a run's outputs into dir (created if missing): summary.json, junit.xml, every
// trend's .hgrm, cpu.pprof when the run took a CPU profile, and report.html.
func Write(dir string, r Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	s := r.Summary
	if err := summary.WriteFile(filepath.Join(dir, "summary.json"), s); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "junit.xml"), func(w io.Writer) error { return WriteJUnit(w, s) }); err != nil {
		return err
	}
	if err := WriteHgrms(dir, s); err != nil {
		return err
	}
	if len(r.CPUProfile) > 0 {
		// go tool pprof -tagfocus xdslab_side=harness cpu.pprof: where each side spent its CPU.
		if err := writeFileAtomic(filepath.Join(dir, "cpu.pprof"), func(w io.Writer) error {
			_, err := w.Write(r.CPUProfile)
			return err
		}); err != nil {
			return err
		}
	}
	return writeFileAtomic(filepath.Join(dir, "report.html"), func(w io.Writer) error { return WriteHTML(w, r) })
}

// writeFileAtomic writes path through a temporary file renamed into place.
func writeFileAtomic(path string, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
