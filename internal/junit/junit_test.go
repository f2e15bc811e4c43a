package junit

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

func TestWriteCountsAndShape(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, Suite{Name: "s & <t>", Time: "1.500", Cases: []Case{
		{Name: "ok", Classname: "c"},
		{Name: "bad", Classname: "c", Failure: &Message{Message: "x < y", Type: "threshold", Body: "value 3"}},
		{Name: "skip", Classname: "c", Skipped: &Message{Message: "neutral"}},
		{Name: "bad2", Classname: "c", Failure: &Message{Message: "m"}, SystemOut: "out"},
	}}, Suite{Name: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, xml.Header) || !strings.HasSuffix(out, "</testsuites>\n") {
		t.Fatalf("no header or trailing newline:\n%s", out)
	}
	var got struct {
		Suites []struct {
			Name     string  `xml:"name,attr"`
			Tests    int     `xml:"tests,attr"`
			Failures int     `xml:"failures,attr"`
			Skipped  int     `xml:"skipped,attr"`
			Time     *string `xml:"time,attr"`
			Cases    []Case  `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out)
	}
	if len(got.Suites) != 2 {
		t.Fatalf("suites = %d, want 2", len(got.Suites))
	}
	s := got.Suites[0]
	if s.Name != "s & <t>" || s.Tests != 4 || s.Failures != 2 || s.Skipped != 1 || s.Time == nil || *s.Time != "1.500" {
		t.Errorf("suite = %+v", s)
	}
	if f := s.Cases[1].Failure; f == nil || f.Message != "x < y" || f.Type != "threshold" || f.Body != "value 3" {
		t.Errorf("failure = %+v", f)
	}
	if e := got.Suites[1]; e.Tests != 0 || e.Time != nil {
		t.Errorf("empty suite = %+v (an empty Time must be left out)", e)
	}
	if strings.Contains(out, `type=""`) {
		t.Errorf("an empty type must be left out:\n%s", out)
	}
}
