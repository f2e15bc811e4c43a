package report

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/xdslab/xdslab/internal/summary"
)

// JUnit XML for CI: one test suite per run, one test case per threshold expression, the
// implicit ones included (a failed threshold is a failed test case whose message gives the
// value it was evaluated on, or why there was none: an inconclusive bucket bound, a metric the
// run did not produce; an implicit one's text says what it checks).

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes s's threshold verdicts as JUnit XML.
func WriteJUnit(w io.Writer, s *summary.Summary) error {
	name := s.Metadata.Labels["scenario"]
	if name == "" {
		name = "xdslab"
	}
	suite := junitSuite{Name: "xdslab run " + name, Time: fmt.Sprintf("%.3f", s.Metadata.DurationSeconds)}
	for _, t := range s.Results.Thresholds {
		metric := t.Metric + summary.TagString(t.Tags)
		c := junitCase{Name: metric + " " + t.Expression, ClassName: "thresholds." + name}
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
			c.Failure = &junitFailure{Message: msg, Type: "threshold", Text: text}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	// A run stopped before its end is flagged as a failed case of its own: its thresholds were
	// judged on part of the scenario.
	for _, k := range []string{"interrupted", "ended"} {
		if why := s.Metadata.Labels["note."+k]; why != "" {
			suite.Cases = append(suite.Cases, junitCase{Name: "the run completed its phases", ClassName: "run." + name,
				Failure: &junitFailure{Message: k + ": " + why, Type: k, Text: why}})
			suite.Failures++
		}
	}
	suite.Tests = len(suite.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
