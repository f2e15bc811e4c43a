package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkOutFile makes sure a file a command writes only when it ends (a summary) can be
// written there, before anything runs: its directory is created if missing, and a trial file
// is created and removed in it. A run of minutes must not end in "cannot write" with what it
// measured lost. An empty path is not checked.
func checkOutFile(flag, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s is a directory: give a file, e.g. %s", flag, path, filepath.Join(path, "summary.json"))
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s %s: cannot create its directory: %w", flag, path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write there: %w", flag, path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}
