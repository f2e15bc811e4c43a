package main

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseSegment: --segment/--segments/JOB_COMPLETION_INDEX never panic; a shard parsed is
// one of its count, and an error names the flag or the variable at fault.
func FuzzParseSegment(f *testing.F) {
	for _, c := range []struct {
		seg      string
		segments int
		job      string
	}{{"0/4", 0, ""}, {"3/4", 4, ""}, {"4/4", 0, ""}, {"auto", 4, "2"}, {"", 4, "9"}, {"", 0, ""}, {"1/0", 0, ""}, {"-1/2", 0, ""}, {"a/b", 0, ""}, {"1/2/3", 0, ""}, {"", -1, ""}} {
		f.Add(c.seg, c.segments, c.job)
	}
	f.Fuzz(func(t *testing.T, seg string, segments int, job string) {
		s, err := parseSegment(seg, segments, job)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "--segment") && !strings.Contains(msg, "JOB_COMPLETION_INDEX") {
				t.Fatalf("parseSegment(%q, %d, %q): %v names neither flag", seg, segments, job, err)
			}
			return
		}
		if s.Count != 0 && (s.Index < 0 || s.Index >= s.Count) {
			t.Fatalf("parseSegment(%q, %d, %q) = %+v", seg, segments, job, s)
		}
	})
}

// FuzzParseDelay: --ack-delay never panics; a distribution parsed is valid.
func FuzzParseDelay(f *testing.F) {
	for _, s := range []string{"", "5ms", "-1ms", "constant:5ms", "exp:2ms", "uniform:1ms:5ms", "normal:5ms:1ms", "lognormal:5ms:0.5", "pareto:1ms:2",
		"zipf:1:2", "exp", "exp:", "uniform:5ms", "uniform:5ms:1ms:3ms", "lognormal:5ms:x", "5x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := parseDelay(s)
		if err != nil {
			if !strings.Contains(err.Error(), "\"") {
				t.Fatalf("parseDelay(%q): %v does not quote the value", s, err)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("parseDelay(%q) = %+v, which does not validate: %v", s, spec, err)
		}
	})
}

// FuzzParseStartAt: --start-at never panics; an error names the flag.
func FuzzParseStartAt(f *testing.F) {
	for _, s := range []string{"", "+30s", "+-1s", "+", "2026-12-03T16:30:00Z", "2026-12-03T16:30:00.5+01:00", "tomorrow", "+1h30"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		at, err := parseStartAt(s, "", now)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--start-at") {
				t.Fatalf("parseStartAt(%q): %v does not name the flag", s, err)
			}
			return
		}
		if strings.HasPrefix(s, "+") && at.Before(now) {
			t.Fatalf("parseStartAt(%q) = %v, before now", s, at)
		}
	})
}
