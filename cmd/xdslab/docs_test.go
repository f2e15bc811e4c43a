package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The commands in README.md and docs/*.md are checked so the docs cannot drift from the CLI
// (issue 30). The convention, also in README.md:
//
//   - Every xdslab command (xdslab, bin/xdslab or ./bin/xdslab) on a line of a ```sh, ```bash
//     or ```console block, or on a "$ " transcript line of any fenced block, is parsed by the
//     real command tree: the subcommand, every flag and the number of arguments must exist.
//     A line starting "xdslab " in a block without a language is parsed too, unless it is a
//     synopsis (an ALLCAPS placeholder such as DIR or HOST:PORT, "[", "|", "…"). Inline code
//     is not checked.
//   - The fast ones run as written from the repository root (--out into a temporary
//     directory) and must exit 0: validate, version, dashboards, import, and tune
//     --estimate-only.
//   - <!-- doc-test: parse-only --> before a fenced block keeps its commands from running (a
//     file the reader writes first, a cluster, a long run); <!-- doc-test: skip --> skips the
//     block altogether (a deliberately wrong command).
//   - `make TARGET` lines in those blocks name targets the Makefile has.

// docCommand is one command found in the docs.
type docCommand struct {
	where     string // file:line
	args      []string
	parseOnly bool
}

var (
	fenceRe = regexp.MustCompile("(?ms)^(<!-- doc-test: (parse-only|skip) -->\\n)?```(\\w*)\\n(.*?)^```")
	// A synopsis word: an ALLCAPS placeholder (DIR, HOST:PORT), an optional part, a choice.
	placeholder  = regexp.MustCompile(`(^|[\s=:/,])[A-Z][A-Z0-9_]+([\s:.,=]|$)|…|\.\.\.|\[|\||<|>`)
	makeTargetRe = regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):`)
)

// shellWords splits one shell command line into words: quotes removed, stopping at an
// unquoted comment, pipe, redirection or command separator.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	flush := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !in, c == '|', c == ';', c == '&', c == '>', c == '<':
			flush()
			return words
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words
}

// xdslabArgs returns the arguments of an xdslab command line, or nil when the line runs
// something else.
func xdslabArgs(line string) []string {
	line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
	w := shellWords(line)
	for len(w) > 0 && strings.Contains(w[0], "=") && !strings.HasPrefix(w[0], "-") {
		w = w[1:] // VAR=value before the command
	}
	if len(w) == 0 {
		return nil
	}
	switch w[0] {
	case "xdslab", "bin/xdslab", "./bin/xdslab":
		return w[1:]
	}
	return nil
}

// docCommands finds the commands of one markdown file, and the make targets its blocks use.
func docCommands(t *testing.T, path string) ([]docCommand, []string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	lineOf := func(off int) int { return strings.Count(doc[:off], "\n") + 1 }
	var cmds []docCommand
	var targets []string
	for _, m := range fenceRe.FindAllStringSubmatchIndex(doc, -1) {
		mark, lang := "", doc[m[6]:m[7]]
		if m[4] >= 0 {
			mark = doc[m[4]:m[5]]
		}
		if mark == "skip" {
			continue
		}
		shell := lang == "sh" || lang == "bash" || lang == "console" || lang == "shell"
		plain := lang == "" || lang == "text"
		body := strings.ReplaceAll(doc[m[8]:m[9]], "\\\n", " ")
		off := m[8]
		for _, line := range strings.Split(body, "\n") {
			l := strings.TrimSpace(line)
			transcript := strings.HasPrefix(l, "$ ")
			if plain && !transcript && strings.HasPrefix(l, "xdslab ") && !placeholder.MatchString(l[len("xdslab "):]) {
				// A command line in a plain block (an example, not a synopsis): parse it.
				if args := xdslabArgs(l); args != nil {
					cmds = append(cmds, docCommand{where: path + ":" + itoa(lineOf(off)), args: args, parseOnly: true})
				}
			}
			if shell || transcript {
				if args := xdslabArgs(l); args != nil {
					cmds = append(cmds, docCommand{where: path + ":" + itoa(lineOf(off)), args: args, parseOnly: mark == "parse-only"})
				}
				if w := shellWords(strings.TrimPrefix(l, "$ ")); len(w) > 1 && w[0] == "make" && !strings.HasPrefix(w[1], "-") && !strings.Contains(w[1], "=") {
					targets = append(targets, w[1])
				}
			}
			off += len(line) + 1
		}
	}
	return cmds, targets
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + formatInt(n)) }

func formatInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// parseCommand checks args against the real command tree: the subcommand, its flags and its
// number of arguments.
func parseCommand(args []string) error {
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// runnable reports whether a doc command is fast enough to run in the test.
func runnable(args []string) bool {
	switch args[0] {
	case "validate", "version", "dashboards", "import":
		return true
	case "tune":
		return slices.Contains(args, "--estimate-only")
	}
	return false
}

func TestDocCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makeTargets := map[string]bool{}
	for _, m := range makeTargetRe.FindAllStringSubmatch(string(mk), -1) {
		makeTargets[m[1]] = true
	}
	var all []docCommand
	for _, f := range files {
		cmds, targets := docCommands(t, f)
		all = append(all, cmds...)
		for _, tg := range targets {
			if !makeTargets[tg] {
				t.Errorf("%s: make %s: the Makefile has no such target", f, tg)
			}
		}
	}
	if len(all) < 10 {
		t.Fatalf("found only %d xdslab commands in the docs: the extraction is broken", len(all))
	}
	t.Chdir(root)
	ran := 0
	for _, c := range all {
		if err := parseCommand(c.args); err != nil {
			t.Errorf("%s: xdslab %s: %v", c.where, strings.Join(c.args, " "), err)
			continue
		}
		if c.parseOnly || !runnable(c.args) {
			continue
		}
		args := slices.Clone(c.args)
		for i := range args {
			if args[i] == "--out" && i+1 < len(args) {
				args[i+1] = filepath.Join(t.TempDir(), args[i+1])
			}
		}
		if code := runCLI(t.Context(), args); code != exitOK {
			t.Errorf("%s: xdslab %s: exit %d, want 0", c.where, strings.Join(c.args, " "), code)
		}
		ran++
	}
	t.Logf("%d xdslab commands in the docs parsed, %d run", len(all), ran)
}

func TestShellWords(t *testing.T) {
	got := shellWords(`xdslab compare a b --gate '^x|y$' --metric-threshold "n{t:v}=5%" # why | more`)
	want := []string{"xdslab", "compare", "a", "b", "--gate", "^x|y$", "--metric-threshold", "n{t:v}=5%"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := xdslabArgs("$ FOO=1 bin/xdslab run x --out y > log 2>&1 &"); !slices.Equal(got, []string{"run", "x", "--out", "y"}) {
		t.Errorf("xdslabArgs = %q", got)
	}
}
