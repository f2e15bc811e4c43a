package scenarios

import (
	"strconv"
	"strings"
)

// Error is one problem in a scenario: where it is (File, Line, Col; Line 0 when the field was
// not written, e.g. a missing required field), which field (Path, like "clients[0].ackDelay"),
// what is wrong (Msg) and what to do (Fix).
type Error struct {
	File string
	Line int
	Col  int
	Path string
	Msg  string
	Fix  string
}

// Error formats the error as "file:line:col: path: msg; fix".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Col > 0 {
				b.WriteString(":" + strconv.Itoa(e.Col))
			}
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString("; " + e.Fix)
	}
	return b.String()
}

// Errors is every problem found in one scenario, in file order.
type Errors []*Error

// Error joins the errors, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each *Error to errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// maxErrors bounds how many errors one load reports (a garbage file is not listed in full).
const maxErrors = 50

// pos is a position in the source.
// block marks a block scalar (| or >), whose content starts on the line after line; null an
// empty value (which keeps the default).
type pos struct {
	line, col int
	block     bool
	null      bool
}

// source records where a scenario came from and where each path was written.
type source struct {
	file string
	at   map[string]pos
	// zero holds the paths of churn fields written as 0 that Complete replaced by their
	// default (Scenario.writtenZeros).
	zero map[string]bool
}

// lookup returns the position of path or of its nearest written ancestor.
func (s *source) lookup(path string) pos {
	if s == nil {
		return pos{}
	}
	for p := path; p != ""; p = parentPath(p) {
		if at, ok := s.at[p]; ok {
			return at
		}
	}
	return pos{}
}

// parentPath strips the last element of a path: "a.b[2]" → "a.b", "a.b" → "a".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

func itoa(i int) string { return strconv.Itoa(i) }
