package report

import (
	"fmt"
	"io"

	"github.com/xdslab/xdslab/internal/junit"
	"github.com/xdslab/xdslab/internal/summary"
)

// JUnit XML for CI: one test suite per run, one test case per threshold expression, the
// implicit ones included (a failed threshold is a failed test case whose message gives the
// value it was evaluated on, or why there was none: an inconclusive bucket bound, a metric the
// run did not produce; an implicit one's text says what it checks).

// WriteJUnit writes s's threshold verdicts as JUnit XML.
func WriteJUnit(w io.Writer, s *summary.Summary) error {
	name := s.Metadata.Labels["scenario"]
	if name == "" {
		name = "xdslab"
	}
	suite := junit.Suite{Name: "xdslab run " + name, Time: fmt.Sprintf("%.3f", s.Metadata.DurationSeconds)}
	for _, t := range s.Results.Thresholds {
		metric := t.Metric + summary.TagString(t.Tags)
		c := junit.Case{Name: metric + " " + t.Expression, Classname: "thresholds." + name}
		if !t.Passed {
			msg := fmt.Sprintf("%s: %s failed", metric, t.Expression)
			text := "the run did not produce this metric (or this aggregation of it)"
			switch {
			case t.Inconclusive:
				msg = fmt.Sprintf("%s: %s inconclusive, counted as failed", metric, t.Expression)
				text = t.Reason
			case t.Value != nil:
				msg = fmt.Sprintf("%s: %s failed (value %g)", metric, t.Expression, *t.Value)
				text = fmt.Sprintf("value %g", *t.Value)
			case t.Reason != "":
				text = t.Reason
			}
			if t.Description != "" {
				text += "; " + t.Description
			}
			c.Failure = &junit.Message{Message: msg, Type: "threshold", Body: text}
		}
		suite.Cases = append(suite.Cases, c)
	}
	// A run stopped before its end is flagged as a failed case of its own: its thresholds were
	// judged on part of the scenario.
	for _, k := range []string{"interrupted", "ended"} {
		if why := s.Metadata.Labels["note."+k]; why != "" {
			suite.Cases = append(suite.Cases, junit.Case{Name: "the run completed its phases", Classname: "run." + name,
				Failure: &junit.Message{Message: k + ": " + why, Type: k, Body: why}})
		}
	}
	return junit.Write(w, suite)
}
