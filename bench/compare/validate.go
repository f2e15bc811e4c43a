package compare

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/xdslab/xdslab/internal/suggest"
	"github.com/xdslab/xdslab/internal/summary"
)

// catalog is what one side measured: its metric names and, per name, its entries. Trends
// that observed nothing in every run (NoData) are not measurements: they are listed apart.
type catalog struct {
	names   []string
	entries map[string][]summary.Metric
	// noData are the names whose every entry observed nothing.
	noData []string
}

func catalogOf(s *Side) catalog {
	c := catalog{entries: map[string][]summary.Metric{}}
	seen := map[string]bool{}
	empty := map[string]bool{}
	for _, run := range s.Runs {
		for _, m := range run.Results.Metrics {
			if m.NoData() {
				empty[m.Name] = true
				continue
			}
			if seen[m.Key()] {
				continue
			}
			seen[m.Key()] = true
			if _, ok := c.entries[m.Name]; !ok {
				c.names = append(c.names, m.Name)
			}
			c.entries[m.Name] = append(c.entries[m.Name], m)
		}
	}
	slices.Sort(c.names)
	for n := range empty {
		if _, ok := c.entries[n]; !ok {
			c.noData = append(c.noData, n)
		}
	}
	slices.Sort(c.noData)
	return c
}

// unmeasured says which names of c.noData match: base has them, but observed nothing in them
// ("" when none matches).
func (c catalog) unmeasured(match func(string) bool) string {
	var ns []string
	for _, n := range c.noData {
		if match(n) {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return ""
	}
	return fmt.Sprintf(" (base has %s, but observed nothing in it: no data, which is not a measurement)", strings.Join(ns, ", "))
}

// gateable lists the names of base whose direction says which way is worse: the metrics that
// can fail a comparison.
func (c catalog) gateable(opts Options) []string {
	var out []string
	for _, n := range c.names {
		if directionOf(c.entries[n][0], opts) != Neutral {
			out = append(out, n)
		}
	}
	return out
}

// checkInputs refuses a comparison that could not detect the regression it is asked about, and
// options that name what base does not hold: a --gate that selects no metric (a typo would
// otherwise show every row "not gated" and pass), a --metric-threshold or --worse naming an
// unknown metric, tag or stat (silently ignored, the default would apply), a base run that
// measured nothing (nothing measured is not zero). The errors name the problem and the fix.
func checkInputs(base *Side, opts Options) error {
	for i, run := range base.Runs {
		if len(run.Results.Metrics) == 0 {
			return fmt.Errorf("compare: base %s holds no metrics: that run measured nothing (it crashed or stopped before measuring?), and nothing measured is not zero; rerun the base, or leave that summary out",
				base.file(i))
		}
	}
	c := catalogOf(base)
	gateable := c.gateable(opts)
	if opts.Gate != nil {
		var selected, neutral []string
		for _, n := range c.names {
			if opts.Gate.MatchString(n) {
				selected = append(selected, n)
			}
		}
		for _, alt := range topAlternatives(opts.Gate.String()) {
			if !slices.ContainsFunc(c.names, func(n string) bool { return alt.MatchString(n) }) {
				return fmt.Errorf("compare: --gate %q: its alternative %q selects no metric of base (%s)%s, so a regression there would pass unseen%s; the metrics that can gate: %s",
					opts.Gate.String(), alt.String(), base.Path, c.unmeasured(alt.MatchString), didYouMean(alt.String(), gateable), strings.Join(gateable, ", "))
			}
		}
		if len(selected) == 0 {
			return fmt.Errorf("compare: --gate %q selects no metric of base (%s)%s, so no regression could fail the comparison%s; the metrics that can gate: %s",
				opts.Gate.String(), base.Path, c.unmeasured(opts.Gate.MatchString), didYouMean(opts.Gate.String(), gateable), strings.Join(gateable, ", "))
		}
		for _, n := range selected {
			if !slices.Contains(gateable, n) {
				neutral = append(neutral, n)
			}
		}
		if len(neutral) == len(selected) {
			return fmt.Errorf("compare: --gate %q selects only metrics that never gate (%s: inputs or figures with no worse side, see --worse), so no regression could fail the comparison; the metrics that can gate: %s",
				opts.Gate.String(), strings.Join(neutral, ", "), strings.Join(gateable, ", "))
		}
	} else if len(c.names) == 0 {
		return fmt.Errorf("compare: base (%s) measured nothing: every metric it holds observed nothing (%s: no data, which is not a measurement of zero), so no regression could be found; rerun the base",
			base.Path, strings.Join(c.noData, ", "))
	} else if len(gateable) == 0 {
		return fmt.Errorf("compare: base (%s) holds no metric that can regress (only %s, which never gate%s): nothing could fail the comparison; compare runs that measured push latency, or set a direction with --worse NAME=up",
			base.Path, strings.Join(c.names, ", "), c.unmeasured(func(string) bool { return true }))
	}
	for _, mt := range opts.MetricThresholds {
		if err := c.checkThreshold(mt, base.Path); err != nil {
			return err
		}
	}
	for _, d := range opts.Directions {
		if _, ok := c.entries[d.Name]; !ok {
			return fmt.Errorf("compare: --worse %s=%s: base (%s) has no metric %s%s; its metrics: %s",
				d.Name, d.Dir, base.Path, d.Name, didYouMean(d.Name, c.names), strings.Join(c.names, ", "))
		}
	}
	return nil
}

// checkThreshold refuses a --metric-threshold that no row would use.
func (c catalog) checkThreshold(mt MetricThreshold, path string) error {
	flag := "--metric-threshold " + mt.String()
	entries, ok := c.entries[mt.Name]
	if !ok {
		return fmt.Errorf("compare: %s: base (%s) has no metric %s%s, so this threshold would apply to nothing%s; its metrics: %s",
			flag, path, mt.Name, c.unmeasured(func(n string) bool { return n == mt.Name }), didYouMean(mt.Name, c.names), strings.Join(c.names, ", "))
	}
	if mt.Tags != nil {
		want := summary.TagString(mt.Tags)
		var have []string
		var match []summary.Metric
		for _, m := range entries {
			have = append(have, flagTags(m.Tags))
			if summary.TagString(m.Tags) == want {
				match = append(match, m)
			}
		}
		if len(match) == 0 {
			return fmt.Errorf("compare: %s: base (%s) has no entry %s%s, so this threshold would apply to nothing%s; its entries: %s",
				flag, path, mt.Name, flagTags(mt.Tags), didYouMean(flagTags(mt.Tags), have), strings.Join(have, ", "))
		}
		entries = match
	}
	if mt.Stat == "" {
		return nil
	}
	var stats []string
	for _, m := range entries {
		for _, s := range statsOf(m.Type) {
			if sameStat(mt.Stat, s) {
				return nil
			}
			if !slices.Contains(stats, s) {
				stats = append(stats, s)
			}
		}
	}
	return fmt.Errorf("compare: %s: compare never computes %s of %s (a %s): it compares %s; write one of those, or leave :STAT out for every stat",
		flag, mt.Stat, mt.Name, entries[0].Type, strings.Join(stats, ", "))
}

// String writes the override as the flag takes it: NAME[{tag:value}][:STAT]=PCT.
func (mt MetricThreshold) String() string {
	s := mt.Name
	if mt.Tags != nil {
		s += flagTags(mt.Tags)
	}
	if mt.Stat != "" {
		s += ":" + mt.Stat
	}
	return s + "=" + pctText(mt.Fraction)
}

// flagTags writes tags as --metric-threshold takes them, {k:v,…}; "(untagged)" for none.
func flagTags(tags map[string]string) string {
	if len(tags) == 0 {
		return "(untagged)"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, k+":"+tags[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// topAlternatives splits a --gate pattern at its top-level '|' (outside groups and classes),
// so each alternative can be checked on its own: one typo among several must not hide behind
// the others. A pattern without alternatives, or an alternative that does not compile alone,
// gives nothing.
func topAlternatives(pattern string) []*regexp.Regexp {
	var parts []string
	depth, class, start := 0, false, 0
	for i := 0; i < len(pattern); i++ {
		switch ch := pattern[i]; {
		case ch == '\\':
			i++
		case class:
			class = ch != ']'
		case ch == '[':
			class = true
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				i++ // "[]abc]": the first ] is a member
			}
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == '|' && depth == 0:
			parts = append(parts, pattern[start:i])
			start = i + 1
		}
	}
	if len(parts) == 0 {
		return nil
	}
	parts = append(parts, pattern[start:])
	// Leading flags, (?i)a|b, apply to every alternative.
	if m := leadingFlags.FindString(pattern); m != "" {
		for i := 1; i < len(parts); i++ {
			parts[i] = m + parts[i]
		}
	}
	var out []*regexp.Regexp
	for _, p := range parts {
		if a, err := regexp.Compile(p); err == nil {
			out = append(out, a)
		}
	}
	return out
}

var leadingFlags = regexp.MustCompile(`^\(\?[imsU-]+\)`)

// didYouMean is "; did you mean X?" for the candidate nearest to s (ignoring regexp anchors), or
// "" when none is near.
func didYouMean(s string, candidates []string) string {
	if n := suggest.Nearest(strings.Trim(s, "^$"), candidates); n != "" {
		return fmt.Sprintf("; did you mean %s?", n)
	}
	return ""
}
