package scenarios

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xdslab/xdslab/internal/suggest"
)

//go:embed library/*.yaml
var library embed.FS

// DefaultName is the built-in scenario run when none is named.
const DefaultName = "quickstart"

// BuiltinNames returns the names of the built-in scenarios, sorted.
func BuiltinNames() []string {
	entries, err := fs.ReadDir(library, "library")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// BuiltinSource returns the YAML text of a built-in scenario.
func BuiltinSource(name string) ([]byte, error) {
	data, err := library.ReadFile("library/" + name + ".yaml")
	if err != nil {
		return nil, Errors{unknownBuiltin(name)}
	}
	return data, nil
}

func unknownBuiltin(name string) *Error {
	names := BuiltinNames()
	fix := "use one of: " + strings.Join(names, ", ") + "; or give the path of a scenario file"
	if n := suggest.Nearest(name, names); n != "" {
		fix = "did you mean " + strconv.Quote(n) + "? (built-ins: " + strings.Join(names, ", ") + "; or give a file path)"
	}
	return &Error{File: name, Msg: fmt.Sprintf("no built-in scenario or file named %q", name), Fix: fix}
}

// Builtin loads a built-in scenario by name.
func Builtin(name string) (*Scenario, error) {
	data, err := BuiltinSource(name)
	if err != nil {
		return nil, err
	}
	return LoadBytes("builtin:"+name, data)
}

// Load reads, decodes, completes and validates the scenario file at path. A relative replay
// file is resolved against the file's directory and must exist; a relative sink.kubeconfig is
// resolved against it too.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: "cannot read scenario: " + errorText(err),
			Fix: "check the path, or name a built-in: " + strings.Join(BuiltinNames(), ", ")}}
	}
	return load(path, filepath.Dir(path), data)
}

// LoadBytes decodes, completes and validates a scenario; name is used in error messages (a
// file name, or "builtin:NAME"). Relative replay files and sink.kubeconfig stay relative to
// the working directory.
// Any error is an Errors list holding every problem found.
func LoadBytes(name string, data []byte) (*Scenario, error) {
	return load(name, "", data)
}

// Resolve loads a scenario by built-in name or file path: an argument naming an existing file,
// or containing a path separator or a .yaml/.yml/.json suffix, is a file; anything else must
// be a built-in name. An empty argument is the default built-in (quickstart).
func Resolve(nameOrPath string) (*Scenario, error) {
	if nameOrPath == "" {
		nameOrPath = DefaultName
	}
	if looksLikePath(nameOrPath) {
		return Load(nameOrPath)
	}
	if _, err := BuiltinSource(nameOrPath); err != nil {
		return nil, err
	}
	return Builtin(nameOrPath)
}

func looksLikePath(s string) bool {
	if st, err := os.Stat(s); err == nil && !st.IsDir() {
		return true
	}
	if strings.ContainsRune(s, filepath.Separator) || strings.ContainsRune(s, '/') {
		return true
	}
	ext := strings.ToLower(filepath.Ext(s))
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}

// errorText strips Go's "open PATH: " prefix, which repeats the file name.
func errorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

var yamlLineRE = regexp.MustCompile(`line (\d+)(?:: column (\d+))?`)

// YAMLReaderError reports whether a yaml.v3 error message is one of its reader's (bad
// UTF-8 or UTF-16, control characters, a read failure): those name no line even when it is not
// the first, unlike its scanner's and parser's, which leave out only line 1.
func YAMLReaderError(msg string) bool {
	for _, s := range []string{"UTF-8", "UTF-16", "surrogate", "Unicode character", "control characters", "input error"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// parseError turns a yaml.v3 syntax error into an *Error with its line.
func parseError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: file, Fix: "check indentation, colons and quoting at this line"}
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		e.Line, _ = strconv.Atoi(msg[m[2]:m[3]])
		if m[4] >= 0 {
			e.Col, _ = strconv.Atoi(msg[m[4]:m[5]])
		}
		msg = strings.TrimLeft(msg[m[1]:], ": ")
	} else if strings.HasPrefix(err.Error(), "yaml: ") && !YAMLReaderError(msg) {
		e.Line = 1 // the parser leaves the line out when it is the first
	}
	e.Msg = "YAML syntax: " + msg
	if strings.Contains(msg, "found character that cannot start any token") {
		e.Fix = "YAML does not allow tabs for indentation; indent with spaces"
	}
	return e
}

// parse reads exactly one YAML document. yaml.v3 is not trusted never to panic on hostile
// input, so a panic becomes an error.
func parse(file string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, Errors{{File: file, Msg: fmt.Sprintf("YAML parser failed: %v", r), Fix: "check the file is valid YAML"}}
		}
	}()
	if len(data) > maxBytes {
		return nil, Errors{{File: file, Msg: fmt.Sprintf("file is %d bytes; the limit is %d", len(data), maxBytes), Fix: "use a smaller scenario (replay traces go in a separate file)"}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{File: file, Msg: "the scenario is empty", Fix: "start from `xdslab validate quickstart --print`"}}
		}
		return nil, Errors{parseError(file, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Errors{{File: file, Line: extra.Line, Col: extra.Column, Msg: "a second YAML document (---) follows the scenario", Fix: "put one scenario per file"}}
	} else if !errors.Is(err, io.EOF) {
		return nil, Errors{parseError(file, err)}
	}
	n := &doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, Errors{{File: file, Msg: "the scenario is empty", Fix: "start from `xdslab validate quickstart --print`"}}
		}
		n = n.Content[0]
	}
	return n, nil
}

func load(file, dir string, data []byte) (*Scenario, error) {
	root, err := parse(file, data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(file)
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, Errors{{File: file, Line: root.Line, Col: root.Column, Msg: "the scenario is empty", Fix: "start from `xdslab validate quickstart --print`"}}
	}
	s := Defaults()
	d.decode(root, reflect.ValueOf(s).Elem(), "", 0)
	s.src = &source{file: file, at: d.at}
	s.src.zero = s.writtenZeros()
	s.applyBootstraps()
	s.Complete()
	// Validation runs even after decoding errors so that one pass lists every problem; its
	// errors about fields that failed to decode are dropped (they only echo the default).
	errs := d.errs
	if err := s.validate(true); err != nil {
		for _, e := range err.(Errors) {
			if !d.related(e.Path) {
				errs = append(errs, e)
			}
		}
	}
	if dir != "" {
		// A kubeconfig is not checked here: the scenario stays valid on a machine without the
		// cluster, and the run reports an unreadable file when it builds the client.
		if k := s.Sink.Kubeconfig; k != "" && !filepath.IsAbs(k) {
			s.Sink.Kubeconfig = filepath.Join(dir, k)
		}
		for i := range s.Churn {
			c := &s.Churn[i]
			if c.Kind != KindReplay || c.File == "" {
				continue
			}
			if !filepath.IsAbs(c.File) {
				c.File = filepath.Join(dir, c.File)
			}
			if _, statErr := os.Stat(c.File); statErr != nil {
				p := "churn[" + itoa(i) + "].file"
				at := s.src.lookup(p)
				errs = append(errs, &Error{File: file, Line: at.line, Col: at.col, Path: p,
					Msg: "cannot read replay trace: " + errorText(statErr), Fix: "give a path relative to the scenario file"})
			}
		}
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return s, nil
}
