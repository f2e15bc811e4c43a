package schema

import (
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xdslab/xdslab/scenarios"
)

const docsFile = "../../docs/scenarios.md"

var generatedBlock = regexp.MustCompile(`(?s)(<!-- generated:(\w+) -->\n).*?(<!-- end generated:(\w+) -->)`)

// renderDocs replaces every generated block of doc with the current table.
func renderDocs(t *testing.T, doc string) string {
	tables := DocTables()
	seen := map[string]bool{}
	out := generatedBlock.ReplaceAllStringFunc(doc, func(block string) string {
		m := generatedBlock.FindStringSubmatch(block)
		if m[2] != m[4] {
			t.Errorf("generated block %q closed as %q", m[2], m[4])
			return block
		}
		table, ok := tables[m[2]]
		if !ok {
			t.Errorf("docs name an unknown table %q", m[2])
			return block
		}
		seen[m[2]] = true
		return m[1] + table + m[3]
	})
	var missing []string
	for name := range tables {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs lack the generated tables %v (add <!-- generated:NAME --> ... <!-- end generated:NAME -->)", missing)
	}
	return out
}

// The field tables in docs/scenarios.md are generated from the types; regenerate with
// go test ./scenarios/schema -run TestDocsUpToDate -update
func TestDocsUpToDate(t *testing.T) {
	raw, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	got := renderDocs(t, string(raw))
	if *update && got != string(raw) {
		if err := os.WriteFile(docsFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != string(raw) {
		t.Fatalf("%s tables are stale: run go test ./scenarios/schema -run TestDocsUpToDate -update", docsFile)
	}
	// Every churn kind, distribution and built-in is documented.
	for _, want := range append(append(scenarios.ChurnKinds(), scenarios.BuiltinNames()...), "lognormal", "pareto", "zipf", "p(99)") {
		if !strings.Contains(got, "`"+want) {
			t.Errorf("docs do not mention `%s`", want)
		}
	}
}

// The YAML examples in the docs load: whole scenarios as they are, fragments (a section) with
// a name added.
func TestDocsExamplesLoad(t *testing.T) {
	raw, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(raw), -1)
	loaded := 0
	for i, b := range blocks {
		src := b[1]
		switch {
		case strings.HasPrefix(src, "name:"):
		case strings.HasPrefix(src, "thresholds:"):
			// A latency threshold needs churn to time (a scenario without any is an error).
			src = "name: fragment\nchurn: [{kind: endpoint-flap, rate: 2/s}]\n" + src
		default:
			continue // a one-line editor directive
		}
		if _, err := scenarios.LoadBytes("docs-example-"+strconv.Itoa(i)+".yaml", []byte(src)); err != nil {
			t.Errorf("docs example %d does not load:\n%v\n%s", i, err, src)
		}
		loaded++
	}
	if loaded < 2 {
		t.Errorf("found %d loadable examples in the docs, want at least 2", loaded)
	}
}
