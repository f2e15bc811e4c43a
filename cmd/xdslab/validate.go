package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/bench/tune"
	"github.com/xdslab/xdslab/controlplane/config"
	"github.com/xdslab/xdslab/scenarios"
	"github.com/xdslab/xdslab/scenarios/schema"
)

// validateOptions are the flags of 'xdslab validate'.
type validateOptions struct {
	print  bool
	asJSON bool
	list   bool
	schema bool
	istio  bool
}

func newValidateCmd() *cobra.Command {
	var o validateOptions
	cmd := &cobra.Command{
		Use:   "validate SCENARIO|NAME|ISTIO-DIR...",
		Short: "Check scenario files (or built-ins), or Istio config, and print what was found",
		Long: `validate loads each scenario (a file path or a built-in name), fills every default and
checks it. A valid scenario is summarised (or printed in full with --print / --json); every
problem is listed as FILE:LINE:COL: field: what is wrong; the fix, and the exit code is 2.
A latency threshold below what the scenario's own debounce alone gives (its churn replayed
through the debouncer, pushes taking no time) is a warning: no control plane that debounces
so could pass it.

A directory, a file of Kubernetes objects (apiVersion/kind documents), or any argument with
--istio is Istio config, checked as 'xdslab controlplane --config-dir' loads it: strict
decoding and istiod's validation of ServiceEntry, WorkloadEntry, VirtualService,
DestinationRule, Sidecar and Gateway. Each rejected object is listed as FILE:LINE: Kind
namespace/name: field: what is wrong: the fix (exit code 2). Warnings (objects istiod admits
with a finding, VirtualService subsets no DestinationRule defines, Gateways a
VirtualService binds to that do not exist, and Gateways asking one router's port for two kinds
of listener, as istioctl analyze reports them) and skipped documents of other kinds are listed without failing.

Built-in scenarios: ` + strings.Join(scenarios.BuiltinNames(), ", ") + `.
The field reference is docs/scenarios.md.`,
		Example: `  xdslab validate quickstart
  xdslab validate my.yaml --print
  xdslab validate --list
  xdslab validate examples/mesh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.print, "print", false, "print the fully resolved scenario as YAML (loadable, every default filled)")
	f.BoolVar(&o.asJSON, "json", false, "print the fully resolved scenario as JSON (as embedded in summary.json)")
	f.BoolVar(&o.list, "list", false, "list the built-in scenarios")
	f.BoolVar(&o.schema, "schema", false, "print the JSON Schema of scenario files")
	f.BoolVar(&o.istio, "istio", false, "check the arguments as Istio config files or directories")
	return cmd
}

func runValidate(ctx context.Context, stdout, stderr io.Writer, args []string, o validateOptions) error {
	switch {
	case o.print && o.asJSON:
		return usageErr(errors.New("validate: --print and --json are exclusive"))
	case (o.list || o.schema) && len(args) > 0:
		flag := "--list"
		if !o.list {
			flag = "--schema"
		}
		return usageErr(fmt.Errorf("validate: %s takes no arguments (got %s): drop %s to check %s, or the arguments to %s",
			flag, strings.Join(args, " "), flag, strings.Join(args, " "), strings.TrimPrefix(flag, "--")))
	case o.list && o.schema:
		return usageErr(errors.New("validate: --list and --schema are exclusive"))
	case o.list:
		for _, name := range scenarios.BuiltinNames() {
			s, err := scenarios.Builtin(name)
			if err != nil {
				return fmt.Errorf("built-in %s: %w", name, err) // a broken build, not bad input
			}
			fmt.Fprintf(stdout, "%-16s %s\n", name, strings.TrimSpace(s.Description))
		}
		return nil
	case o.schema:
		b, err := schema.JSON()
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	case len(args) == 0:
		return usageErr(errors.New("validate: name a scenario file or a built-in (" +
			strings.Join(scenarios.BuiltinNames(), ", ") + ")"))
	}
	var istio, scens []string
	for _, arg := range args {
		if o.istio || isIstioConfig(arg) {
			istio = append(istio, arg)
		} else {
			scens = append(scens, arg)
		}
	}
	var istioErr error
	if len(istio) > 0 {
		istioErr = validateIstio(stdout, stderr, istio)
		if len(scens) == 0 {
			return istioErr
		}
		fmt.Fprintln(stdout)
	}
	failed := 0
	for i, arg := range scens {
		s, err := scenarios.Resolve(arg)
		if err != nil {
			failed++
			var es scenarios.Errors
			if errors.As(err, &es) {
				for _, e := range es {
					fmt.Fprintln(stderr, e)
				}
				fmt.Fprintf(stderr, "%s: %d problem(s)\n", arg, len(es))
			} else {
				fmt.Fprintf(stderr, "%s: %v\n", arg, err)
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		switch {
		case o.print:
			b, err := s.YAML()
			if err != nil {
				return err
			}
			if _, err := stdout.Write(b); err != nil {
				return err
			}
		case o.asJSON:
			b, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				return fmt.Errorf("encode %s: %w", arg, err)
			}
			fmt.Fprintln(stdout, string(b))
		default:
			fmt.Fprint(stdout, s.Summary())
			fmt.Fprintln(stdout, "ok")
		}
		for _, w := range floorWarnings(ctx, s) {
			fmt.Fprintf(stderr, "%s: warning: %s\n", arg, w)
		}
		if err := ctx.Err(); err != nil {
			return withCode(exitInterrupted, fmt.Errorf("validate: interrupted: %w", err))
		}
	}
	if failed > 0 {
		return usageErr(fmt.Errorf("validate: %d of %d scenario(s) invalid", failed, len(scens)))
	}
	return istioErr
}

// floorWarnings lists sc's latency thresholds that its own debounce alone would fail
// (tune.DebounceFloor): they warn, for the scenario is valid, but no control plane that
// debounces as it says could pass them.
func floorWarnings(ctx context.Context, sc *scenarios.Scenario) []string {
	f, err := tune.DebounceFloor(ctx, sc)
	if ctx.Err() != nil {
		return nil // interrupted: the caller says so
	}
	if err != nil {
		return []string{"the debounce floor of the latency thresholds was not computed: " + err.Error()}
	}
	var out []string
	for _, p := range f.Problems(sc) {
		out = append(out, f.Explain(p))
	}
	return out
}

// istioDocRE finds a top-level apiVersion or kind key: scenario files have neither.
var istioDocRE = regexp.MustCompile(`(?m)^(apiVersion|kind):|"apiVersion"\s*:`)

// isIstioConfig says whether arg names Istio config: a directory, or a file of Kubernetes
// objects.
func isIstioConfig(arg string) bool {
	fi, err := os.Stat(arg)
	if err != nil {
		return false // a built-in scenario name, or a missing file the scenario loader reports
	}
	if fi.IsDir() {
		return true
	}
	data, err := os.ReadFile(arg)
	return err == nil && istioDocRE.Match(data)
}

// validateIstio checks Istio config files and directories the way the control plane's file
// source loads them, and lists every problem.
func validateIstio(stdout, stderr io.Writer, paths []string) error {
	r := config.CheckPaths(paths, config.Decoder{})
	for _, e := range r.Errors {
		fmt.Fprintln(stderr, e)
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	for _, f := range r.Findings {
		fmt.Fprintln(stderr, "warning:", f)
	}
	for _, s := range r.Skipped {
		fmt.Fprintln(stderr, s)
	}
	fmt.Fprintf(stdout, "%d file(s), %d object(s) would load; %d error(s), %d warning(s), %d skipped\n",
		len(r.Files), len(r.Configs), len(r.Errors), len(r.Warnings)+len(r.Findings), len(r.Skipped))
	if len(r.Errors) > 0 {
		return usageErr(fmt.Errorf("validate: %d error(s) in Istio config %s", len(r.Errors), strings.Join(paths, " ")))
	}
	if len(r.Files) == 0 {
		return usageErr(fmt.Errorf("validate: no *.yaml, *.yml or *.json files in %s", strings.Join(paths, " ")))
	}
	return nil
}
