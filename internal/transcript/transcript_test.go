package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// echo is a machine whose only effect is its input, upper-cased, after "> ".
type echo struct{}

func (echo) Input(line string) ([]string, error) { return []string{"> " + strings.ToUpper(line)}, nil }

var echoFormat = Format{Effects: []string{"> "}, New: func(testing.TB, string) Case { return echo{} }}

func TestRunFileRewritesAndCompares(t *testing.T) {
	file := filepath.Join(t.TempDir(), "echo.txt")
	in := "# a comment\n=== one\nhello\n> stale\n\nbye\n"
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	RunFile(t, file, echoFormat, true)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "# a comment\n=== one\nhello\n> HELLO\n\nbye\n> BYE\n"
	if string(b) != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", b, want)
	}
	RunFile(t, file, echoFormat, false) // what it wrote now passes
}

// recorder takes the errors RunFile reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestRunFileReportsADifference(t *testing.T) {
	file := filepath.Join(t.TempDir(), "echo.txt")
	if err := os.WriteFile(file, []byte("=== one\nhello\n> HELLO\nbye\n> HI\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	RunFile(r, file, echoFormat, false)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "echo.txt:4: bye") || !strings.Contains(r.errs[0], "> BYE") {
		t.Fatalf("errors %q, want one naming line 4 and its effect", r.errs)
	}
}
