package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/scenarios"
)

// validateOptions are the flags of 'xdslab validate'.
type validateOptions struct {
	print  bool
	asJSON bool
	list   bool
	schema bool
}

func newValidateCmd() *cobra.Command {
	var o validateOptions
	cmd := &cobra.Command{
		Use:   "validate SCENARIO|NAME...",
		Short: "Check scenario files (or built-ins) and print the resolved scenario",
		Long: `validate loads each scenario (a file path or a built-in name), fills every default and
checks it. A valid scenario is summarised (or printed in full with --print / --json); every
problem is listed as FILE:LINE:COL: field: what is wrong; the fix, and the exit code is 2.

Built-in scenarios: ` + strings.Join(scenarios.BuiltinNames(), ", ") + `.
The field reference is docs/scenarios.md.`,
		Example: `  xdslab validate quickstart
  xdslab validate my.yaml --print
  xdslab validate --list`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.print, "print", false, "print the fully resolved scenario as YAML (loadable, every default filled)")
	f.BoolVar(&o.asJSON, "json", false, "print the fully resolved scenario as JSON (as embedded in summary.json)")
	f.BoolVar(&o.list, "list", false, "list the built-in scenarios")
	f.BoolVar(&o.schema, "schema", false, "print the JSON Schema of scenario files")
	return cmd
}

func runValidate(stdout, stderr io.Writer, args []string, o validateOptions) error {
	switch {
	case o.print && o.asJSON:
		return usageErr(errors.New("validate: --print and --json are exclusive"))
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
		b, err := scenarios.JSONSchema()
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	case len(args) == 0:
		return usageErr(errors.New("validate: name a scenario file or a built-in (" +
			strings.Join(scenarios.BuiltinNames(), ", ") + ")"))
	}
	failed := 0
	for i, arg := range args {
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
	}
	if failed > 0 {
		return usageErr(fmt.Errorf("validate: %d of %d scenario(s) invalid", failed, len(args)))
	}
	return nil
}
