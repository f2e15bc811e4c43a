package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/xdslab/xdslab/controlplane/config/validate"
	"github.com/xdslab/xdslab/istioconfig"
)

// CheckReport is what CheckPaths found: what a control plane watching those files would load,
// reject, skip and warn about.
type CheckReport struct {
	// Files are the config files read, sorted.
	Files []string
	// Configs are the objects of the files that would load.
	Configs []*istioconfig.Config
	// Errors reject a file (its objects do not load): read, parse and validation errors, an
	// object defined twice in a file, or one another file defined first.
	Errors []error
	// Warnings are objects that load with a finding (DecodeError.Msg says which).
	Warnings []*DecodeError
	// Skipped are documents of kinds the control plane does not read.
	Skipped []Skipped
	// Findings are problems between objects (validate.Analyze), over the objects that would load.
	Findings []validate.Finding
}

// CheckPaths reads each path (a file, or a directory read recursively with the FileSource's
// rules: *.yaml, *.yml and *.json, dot-files, dot-directories and editor files ignored) and
// applies the FileSource's rules to the files: a file with any error contributes nothing, and
// an object defined by two files belongs to the first in lexical order. It never stops at
// the first problem.
func CheckPaths(paths []string, d Decoder) CheckReport {
	var r CheckReport
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			r.Errors = append(r.Errors, fmt.Errorf("%w: pass an existing file or directory", err))
			continue
		}
		if !fi.IsDir() {
			r.Files = append(r.Files, p)
			continue
		}
		err = filepath.WalkDir(p, func(f string, e fs.DirEntry, err error) error {
			switch {
			case err != nil:
				r.Errors = append(r.Errors, err)
				return nil
			case e.IsDir() && f != p && ignoredName(e.Name()):
				return filepath.SkipDir
			case !e.IsDir() && isConfigFile(e.Name()):
				r.Files = append(r.Files, f)
			}
			return nil
		})
		if err != nil {
			r.Errors = append(r.Errors, err)
		}
	}
	slices.Sort(r.Files)
	r.Files = slices.Compact(r.Files)
	owner := map[istioconfig.Key]string{} // "file:line" of each object's first definition
	// Where each loaded object is written, by file and "Kind namespace/name" (a finding's
	// Source and Object), for the lines of the findings between objects.
	where := map[[2]string]objectAt{}
	for _, f := range r.Files {
		data, err := os.ReadFile(f)
		if err != nil {
			r.Errors = append(r.Errors, err)
			continue
		}
		res, err := d.DecodeAll(f, data)
		r.Skipped = append(r.Skipped, res.Skipped...)
		if err != nil {
			var joined interface{ Unwrap() []error }
			if errors.As(err, &joined) {
				r.Errors = append(r.Errors, joined.Unwrap()...)
			} else {
				r.Errors = append(r.Errors, err)
			}
			continue
		}
		r.Warnings = append(r.Warnings, res.Warnings...)
		for i, c := range res.Configs {
			at := fmt.Sprintf("%s:%d", f, res.line(i))
			if first, taken := owner[c.Key()]; taken {
				r.Errors = append(r.Errors, fmt.Errorf("%s: %s %s/%s is already defined in %s: this copy is ignored; remove one", at, c.Kind, c.Namespace, c.Name, first))
				continue
			}
			owner[c.Key()] = at
			if i < len(res.at) {
				where[[2]string{f, fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Name)}] = res.at[i]
			}
			r.Configs = append(r.Configs, c)
		}
	}
	r.Findings = validate.Analyze(r.Configs)
	for i := range r.Findings {
		r.Findings[i].Line = findingLine(r.Findings[i], where)
	}
	return r
}

// findingLine is the line of a finding's field in its file, found where the decoder recorded
// the object (its document, and its path there inside a List), as for a DecodeError: each
// document is parsed for lines at most once, whatever the number of findings. 0 when not
// found.
func findingLine(f validate.Finding, where map[[2]string]objectAt) int {
	at, ok := where[[2]string{f.Source, f.Object}]
	path, ok2 := validate.ParsePath(f.Path)
	if !ok || !ok2 {
		return 0
	}
	return at.loc.line(at.path.With(path...))
}
