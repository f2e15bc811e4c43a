package transcript

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Case is one case's machine: it runs an input line and returns the effect lines it caused.
type Case interface {
	Input(line string) (effects []string, err error)
}

// Format is what a kind of transcript is made of.
type Format struct {
	// Effects are the prefixes of effect lines (e.g. "> ", "! ", "= ").
	Effects []string
	// New starts a case from its header line ("=== NAME [OPTIONS]").
	New func(t testing.TB, header string) Case
}

// RunDir runs every file matching pattern (a filepath.Glob) as a subtest named after the file.
func RunDir(t *testing.T, pattern string, f Format, update bool) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts match %s: %v", pattern, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), func(t *testing.T) { RunFile(t, file, f, update) })
	}
}

// RunFile runs one transcript file: every case, every input, comparing the effects each input
// had with the effect lines that follow it. With update, it rewrites the file's effect lines
// instead of comparing.
func RunFile(t testing.TB, file string, f Format, update bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}

	var rewritten []string
	var c Case
	var want, got []string
	var inputLine string
	var inputNo int
	flush := func() {
		rewritten = append(rewritten, got...)
		if !slices.Equal(want, got) && !update {
			t.Errorf("%s:%d: %s\n  want effects:\n    %s\n  got:\n    %s", file, inputNo, inputLine,
				strings.Join(want, "\n    "), strings.Join(got, "\n    "))
		}
		want, got = nil, nil
	}
	isEffect := func(line string) bool {
		return slices.ContainsFunc(f.Effects, func(p string) bool { return strings.HasPrefix(line, p) })
	}
	cases := 0
	for i, line := range lines {
		trim := strings.TrimSpace(line)
		switch {
		case isEffect(trim):
			if c == nil {
				t.Fatalf("%s:%d: an effect before any case", file, i+1)
			}
			want = append(want, trim)
			continue
		case trim == "" || strings.HasPrefix(trim, "#"):
			flush()
			rewritten = append(rewritten, line)
			continue
		case strings.HasPrefix(trim, "=== "):
			flush()
			c = f.New(t, trim)
			cases++
			rewritten = append(rewritten, line)
			continue
		}
		flush()
		if c == nil {
			t.Fatalf("%s:%d: an input before any case (=== NAME)", file, i+1)
		}
		effs, err := c.Input(trim)
		if err != nil {
			t.Fatalf("%s:%d: %v", file, i+1, err)
		}
		rewritten = append(rewritten, line)
		got, inputLine, inputNo = effs, trim, i+1
	}
	flush()
	if cases == 0 {
		t.Fatalf("%s: no cases", file)
	}
	if update {
		if err := os.WriteFile(file, []byte(strings.Join(rewritten, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
