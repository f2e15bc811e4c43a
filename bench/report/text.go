package report

import (
	"bytes"
	"maps"
	"slices"
	"strings"

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

// noteLead is how the console introduces a note it knows; another note.KEY is "KEY: ".
var noteLead = map[string]string{
	"incomplete": "without a full config at the end of the connect phase: ",
	"sink":       "failed events: ",
}

// consoleSkips are the notes the console leaves to summary.json and report.html: HarnessLines
// prints the harness's, and the others say where a control-plane figure comes from.
var consoleSkips = map[string]bool{"harness": true, "saturated": true, "cpu": true, "debounce": true, "cache": true, "responses": true}

// NoteLines returns the console's lines for a summary's other notes (note.* labels but the
// harness's, which HarnessLines prints, and those saying where a control-plane figure comes
// from), in key order: what a run or a merge wants its reader to know (clients without a full
// config, failed sink writes, admission, events no client was in reach of, what a merge could
// not include, shards that were interrupted).
func NoteLines(s *summary.Summary) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.Metadata.Labels)) {
		key, ok := strings.CutPrefix(k, "note.")
		if !ok || consoleSkips[key] || s.Metadata.Labels[k] == "" {
			continue
		}
		lead, known := noteLead[key]
		if !known {
			lead = key + ": "
		}
		out = append(out, lead+s.Metadata.Labels[k])
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
