package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xdslab/xdslab/internal/summary"
)

// The report's banner and the console's lines come from the summary's notes.
func TestHarnessMarkerShown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		lines  []string
	}{
		{"marked", map[string]string{"note.harness": "harness 2s CPU", "note.saturated": "the harness used 2× x"},
			[]string{"harness: harness 2s CPU", "HARNESS SATURATED: the harness used 2× x"}},
		{"not marked", map[string]string{"note.harness": "harness 0.1s CPU"}, []string{"harness: harness 0.1s CPU"}},
		{"silent", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &summary.Summary{Metadata: summary.Metadata{Labels: tc.labels}}
			require.Equal(t, tc.lines, HarnessLines(s))
			var buf bytes.Buffer
			require.NoError(t, reportTmpl.Execute(&buf, reportData{Name: "n", Harness: tc.labels["note.harness"], Saturated: tc.labels["note.saturated"]}))
			html := buf.String()
			banner := strings.Index(html, `id="harness-saturated"`)
			require.Equal(t, tc.labels["note.saturated"] != "", banner >= 0)
			if banner >= 0 {
				require.Less(t, banner, strings.Index(html, "<h1>"), "the banner opens the page")
			}
			require.Equal(t, tc.labels["note.harness"] != "", strings.Contains(html, "<p>Harness: "))
		})
	}
}

// Every note but the harness's reaches the console, known ones with their lead.
func TestNoteLines(t *testing.T) {
	s := &summary.Summary{Metadata: summary.Metadata{Labels: map[string]string{
		"note.harness": "h", "note.saturated": "s", "note.sink": "2 of 9", "note.merge": "shard 1 lacks x",
		"note.interrupted": "shard 0 stopped", "note.empty": "", "shards": "2", "note.cpu": "one process",
	}}}
	require.Equal(t, []string{"interrupted: shard 0 stopped", "merge: shard 1 lacks x", "failed events: 2 of 9"}, NoteLines(s))
}
