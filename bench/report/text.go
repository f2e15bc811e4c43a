package report

import (
	"bytes"

	"github.com/xdslab/xdslab/internal/summary"
)

// HarnessLines returns what the console prints about the harness of a summary: its figures
// (note.harness) and, when the run was marked saturated, the marker; nil when the summary says
// nothing of its harness.
func HarnessLines(s *summary.Summary) []string {
	var out []string
	if n := s.Metadata.Labels["note.harness"]; n != "" {
		out = append(out, "harness: "+n)
	}
	if n := s.Metadata.Labels["note.saturated"]; n != "" {
		out = append(out, "HARNESS SATURATED: "+n)
	}
	return out
}

// TrimTrailingSpace removes the padding tabwriter leaves after each line's last cell.
func TrimTrailingSpace(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	return bytes.Join(lines, []byte("\n"))
}
