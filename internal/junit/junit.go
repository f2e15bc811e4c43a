package junit

import (
	"encoding/xml"
	"io"
)

// Suite is one test suite. Its tests, failures and skipped counts are taken from its cases
// when it is written.
type Suite struct {
	Name string
	// Time is the suite's duration in seconds as text ("12.345"); empty leaves it out.
	Time  string
	Cases []Case
}

// Case is one test case: passed unless it has a Failure or is Skipped.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Failure   *Message `xml:"failure,omitempty"`
	Skipped   *Message `xml:"skipped,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Message is a failure's or a skip's account: a one-line message, an optional type and a body.
type Message struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

type suites struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []suite  `xml:"testsuite"`
}

type suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr,omitempty"`
	Cases    []Case `xml:"testcase"`
}

// Write writes the suites as one indented JUnit XML document with its header.
func Write(w io.Writer, ss ...Suite) error {
	doc := suites{Suites: make([]suite, 0, len(ss))}
	for _, s := range ss {
		out := suite{Name: s.Name, Tests: len(s.Cases), Time: s.Time, Cases: s.Cases}
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil:
				out.Failures++
			case c.Skipped != nil:
				out.Skipped++
			}
		}
		doc.Suites = append(doc.Suites, out)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
