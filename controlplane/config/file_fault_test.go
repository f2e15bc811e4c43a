package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// Fault injection on the file source: directories that blink, are replaced or recreated,
// files written slowly in place, symlink loops.

func writeServices(t *testing.T, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("svc-%02d", i)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(seYAML(name, name+".example.com")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func moveAll(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

func waitCount(t *testing.T, c *countCounter, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.get() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: counted %d within 10s, want %d", what, c.get(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFileSourceBlinkingDirectory: a directory emptied for a moment (every file moved out and
// back, or rm -rf and restore) must not delete the mesh's objects: the mass deletion is held,
// the directory re-read, and nothing changes.
func TestFileSourceBlinkingDirectory(t *testing.T) {
	const files = 10
	for _, tc := range []struct {
		name  string
		blink func(t *testing.T, dir, aside string) (restore func())
	}{
		{"files moved out and back", func(t *testing.T, dir, aside string) func() {
			moveAll(t, dir, aside)
			return func() { moveAll(t, aside, dir) }
		}},
		{"rm -rf and restore", func(t *testing.T, dir, _ string) func() {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return func() { writeServices(t, dir, files) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir, aside := filepath.Join(root, "cfg"), filepath.Join(root, "aside")
			writeServices(t, dir, files)
			held := &countCounter{}
			h := startSource(t, dir, FileOptions{RescanInterval: 20 * time.Millisecond,
				DeleteGuard: DeleteGuard{Settle: time.Second, Held: held}})
			h.next(files)
			restore := tc.blink(t, dir, aside)
			waitCount(t, held, 1, "held mass deletions")
			restore()
			if got := h.events(); got != "" {
				t.Errorf("the blink changed the store: %s", got)
			}
			if n := h.store.Len(); n != files+1 { // and the sentinel
				t.Errorf("store holds %d objects, want %d", n, files+1)
			}
			if held.get() != 1 {
				t.Errorf("held %d mass deletions, want 1", held.get())
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "holding it, then re-reading the directory") || !strings.Contains(logs, "deletes=10") {
				t.Errorf("no warning naming the held deletions:\n%s", logs)
			}
		})
	}
}

// TestFileSourceMassDeleteApplied: a mass deletion that is real is applied after the settle
// period; with the guard off it is applied at once; a deletion below the share is not held.
func TestFileSourceMassDeleteApplied(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "cfg")
			writeServices(t, dir, 4)
			held := &countCounter{}
			h := startSource(t, dir, FileOptions{DeleteGuard: DeleteGuard{Off: off, Settle: 300 * time.Millisecond, Held: held}})
			h.next(4)
			// One of four: below the share, applied at once.
			start := time.Now()
			os.Remove(filepath.Join(dir, "svc-00.yaml"))
			if got := h.next(1); got != "delete ServiceEntry/default/svc-00" {
				t.Fatalf("got %s", got)
			}
			if held.get() != 0 {
				t.Errorf("a 25%% deletion was held")
			}
			// The other three: 100%.
			moveAll(t, dir, filepath.Join(root, "gone"))
			if got, want := h.next(3), "delete ServiceEntry/default/svc-01; delete ServiceEntry/default/svc-02; delete ServiceEntry/default/svc-03"; got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			wantHeld := 1
			if off {
				wantHeld = 0
			} else if el := time.Since(start); el < 300*time.Millisecond {
				t.Errorf("the mass deletion was applied after %v, before the settle period", el)
			}
			if held.get() != wantHeld {
				t.Errorf("held %d, want %d", held.get(), wantHeld)
			}
		})
	}
}

// TestFileSourceConfigMapSwap: a Kubernetes ConfigMap volume swaps a ..data symlink between
// timestamped directories; the new generation is read whole: only what changed is updated,
// a key dropped from the ConfigMap is deleted, nothing else is touched.
func TestFileSourceConfigMapSwap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cm")
	gen := func(name string, content map[string]string) {
		writeDir := filepath.Join(dir, name)
		if err := os.MkdirAll(writeDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, c := range content {
			if err := os.WriteFile(filepath.Join(writeDir, f), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := func(target, name string) {
		tmp := filepath.Join(dir, name+"_tmp")
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	gen("..2026_01_01_00_00_00.1", map[string]string{"a.yaml": seYAML("a", "a1"), "b.yaml": seYAML("b", "b1"), "c.yaml": seYAML("c", "c1")})
	link("..2026_01_01_00_00_00.1", "..data")
	for _, f := range []string{"a.yaml", "b.yaml", "c.yaml"} {
		link(filepath.Join("..data", f), f)
	}
	h := startSource(t, dir, FileOptions{})
	if got := h.next(3); got != "add ServiceEntry/default/a[a1]; add ServiceEntry/default/b[b1]; add ServiceEntry/default/c[c1]" {
		t.Fatalf("initial: %s", got)
	}
	// kubelet: write the new generation, swap ..data, drop the removed key's link, remove the
	// old generation.
	gen("..2026_01_01_00_01_00.2", map[string]string{"a.yaml": seYAML("a", "a1"), "b.yaml": seYAML("b", "b2")})
	link("..2026_01_01_00_01_00.2", "..data")
	os.Remove(filepath.Join(dir, "c.yaml"))
	os.RemoveAll(filepath.Join(dir, "..2026_01_01_00_00_00.1"))
	got := h.events()
	if got != "update ServiceEntry/default/b[b2]; delete ServiceEntry/default/c" {
		// fsnotify may split the swap and the link removal across two scans: still no
		// other change than these two.
		if got != "update ServiceEntry/default/b[b2]; delete ServiceEntry/default/c" && got != "delete ServiceEntry/default/c; update ServiceEntry/default/b[b2]" {
			t.Errorf("after the swap: %s", got)
		}
	}
}

// TestFileSourceDirectoryRecreated: with rescans off, a directory removed and created again
// (rm -rf and mkdir, or another directory renamed into its place) is watched again, and so is
// a subdirectory.
func TestFileSourceDirectoryRecreated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recreate func(t *testing.T, dir string)
	}{
		{"rm -rf and mkdir", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed into place", func(t *testing.T, dir string) {
			next := dir + ".next"
			if err := os.Mkdir(next, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(next, dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"subdirectory", func(t *testing.T, dir string) {
			sub := filepath.Join(dir, "sub")
			if err := os.RemoveAll(sub); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"parent removed and recreated", func(t *testing.T, dir string) {
			// Nothing above the parent is watched: the next rescan finds the directory back.
			parent := filepath.Dir(dir)
			if err := os.RemoveAll(parent); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "parent", "cfg")
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			rescan := time.Duration(-1)
			if strings.HasPrefix(tc.name, "parent") {
				rescan = 20 * time.Millisecond
			}
			h := startSource(t, dir, FileOptions{RescanInterval: rescan})
			tc.recreate(t, dir)
			// The recreated directory is found by an fs event, with no rescan: wait until its
			// watch is back (the log says so), then write into it.
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(h.logs.String(), "watching it again") {
				if time.Now().After(deadline) {
					t.Fatalf("the recreated directory was not watched again within 10s:\n%s", h.logs.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			rel := "x.yaml"
			if tc.name == "subdirectory" {
				rel = "sub/x.yaml"
			}
			h.write(rel, seYAML("x", "x1"))
			if got := h.next(1); got != "add ServiceEntry/default/x[x1]" {
				t.Errorf("got %s", got)
			}
		})
	}
}

// TestFileSourceSlowInPlaceWrite: a file written in place with pauses longer than the
// debounce is read once, whole, after its size and mtime settled: never parsed half-written.
func TestFileSourceSlowInPlaceWrite(t *testing.T) {
	dir := t.TempDir()
	h := startSource(t, dir, FileOptions{Debounce: 10 * time.Millisecond, WriteSettle: 2 * time.Second, RescanInterval: 30 * time.Millisecond})
	content := docs(seYAML("x", "x1"), seYAML("yy", "y1"))
	cut := strings.Index(content, "[y1") + 2 // an unterminated flow sequence: invalid YAML
	f, err := os.Create(filepath.Join(dir, "slow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []string{content[:cut], content[cut:]} {
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // > 10×Debounce and several rescans, < WriteSettle
	}
	f.Close()
	if got := h.next(2); got != "add ServiceEntry/default/x[x1]; add ServiceEntry/default/yy[y1]" {
		t.Errorf("got %s", got)
	}
	if st := h.src.Status(); st.Errors != 0 {
		t.Errorf("the half-written file was parsed: %d errors, %+v\n%s", st.Errors, st.Files, h.logs.String())
	}
}

// TestFileSourceRenamedFileReadAtOnce: a file renamed into place is complete, so it is read
// without waiting for anything: with a Debounce and a WriteSettle of an hour it still arrives,
// an update and a new file alike. (Only removals gather for Debounce; only files written in
// place settle.)
func TestFileSourceRenamedFileReadAtOnce(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(seYAML("x", "x1")), 0o644)
	h := startSource(t, dir, FileOptions{Debounce: time.Hour, WriteSettle: time.Hour, RescanInterval: -1})
	h.next(1)
	h.write("a.yaml", seYAML("x", "x2"))
	if got := h.next(1); got != "update ServiceEntry/default/x[x2]" {
		t.Errorf("renamed over: got %s", got)
	}
	h.write("b.yaml", seYAML("yy", "y1"))
	if got := h.next(1); got != "add ServiceEntry/default/yy[y1]" {
		t.Errorf("renamed into place: got %s", got)
	}

}

// TestReadLimited: the size limit is checked before reading, and a file that grows or shrinks
// while it is read is not returned for parsing.
func TestReadLimited(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		size    int64
		max     int64
		want    string
		wantErr string
	}{
		{"whole", "abcd", 4, 10, "abcd", ""},
		{"over the limit by stat", "abcd", 40, 10, "", "40 bytes is larger than the 10-byte limit: split the file"},
		{"grew past the limit while read", strings.Repeat("a", 100), 4, 10, "", errChanging.Error()},
		{"grew while read", "abcdef", 4, 10, "", errChanging.Error()},
		{"truncated while read", "ab", 4, 10, "", errChanging.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := readLimited("f.yaml", strings.NewReader(tc.content), tc.size, tc.max)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(data) != tc.want {
				t.Fatalf("got %q, %v", data, err)
			}
		})
	}
	if _, err := readLimited("f.yaml", iotest.ErrReader(errors.New("boom")), 4, 10); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("read error: %v", err)
	}
}

// TestFileSourceSymlinkLoop: an unreadable file (a symlink loop) is logged and counted once,
// not on every rescan, until it changes.
func TestFileSourceSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	h := startSource(t, dir, FileOptions{RescanInterval: 5 * time.Millisecond})
	if err := os.Symlink("b.yaml", filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.yaml", filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	h.waitError()
	h.waitError()
	// Twenty rescans later, still two errors.
	for range 20 {
		last := h.src.Status().LastScan
		deadline := time.Now().Add(10 * time.Second)
		for !h.src.Status().LastScan.After(last) {
			if time.Now().After(deadline) {
				t.Fatal("no rescan within 10s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if st := h.src.Status(); st.Errors != 2 {
		t.Errorf("errors = %d after 20 rescans, want 2 (one per file)", st.Errors)
	}
	if n := strings.Count(h.logs.String(), "config file rejected"); n != 2 {
		t.Errorf("logged %d times, want 2:\n%s", n, h.logs.String())
	}
	if fs := h.file("a.yaml"); !strings.Contains(fs.LastError, "too many levels of symbolic links") {
		t.Errorf("LastError = %q", fs.LastError)
	}
	// Changed: the link now points at a good file.
	os.WriteFile(filepath.Join(dir, "real.yml"), []byte(seYAML("r", "r1")), 0o644)
	h.next(1)
	os.Remove(filepath.Join(dir, "a.yaml"))
	if err := os.Symlink("real.yml", filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	// The same object from a second file: a conflict, which says the link was read. b.yaml,
	// dangling while a.yaml is replaced, may count an error first.
	for h.waitError(); h.file("a.yaml").LastError != ""; {
		h.waitError()
	}
	if fs := h.file("a.yaml"); fs.LastError != "" || len(fs.Conflicts) != 1 {
		t.Errorf("after the fix: %+v", fs)
	}
}
