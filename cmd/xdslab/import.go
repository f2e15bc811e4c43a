package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdslab/xdslab/internal/kubedump"
	"github.com/xdslab/xdslab/scenarios"
)

// importOptions are the flags of 'xdslab import'.
type importOptions struct {
	out       string
	name      string
	anonymize bool
	salt      string
}

func newImportCmd() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import DUMP...",
		Short: "Write a scenario whose topology reproduces a cluster dump",
		Long: `import reads a cluster dump, the output of

  kubectl get svc,endpointslices,pods,serviceentries,workloadentries,virtualservices,destinationrules,gateways,sidecars,peerauthentications,authorizationpolicies -A -o yaml

(one kind: List document or several documents; files, or directories read recursively for
*.yaml, *.yml and *.json, and for the cluster files of an extracted istioctl bug-report:
k8s-resources, k8s-cluster-resources, crs), and writes a scenario (to --out, else stdout) whose topology.mesh
holds every Service with its ports, protocols and ready endpoints counted per locality and
label set, and the Istio objects the lab writes, verbatim. Churn is sized from the dump's
workloads with placeholder rates to replace; the fleet has one sidecar per pod with an
istio-proxy container. Kinds the lab does not model are counted, listed on stderr and in a
comment of the scenario. A malformed dump is an error naming FILE:LINE and the fix (exit 2).

--anonymize rewrites names, hosts, label values, localities and addresses with keyed hashes,
consistently (references still resolve) and deterministically; --salt keys them (keep it
private to stop anyone hashing guessed names). See docs/import.md.`,
		Example: `  xdslab import examples/import/dump --out imported.yaml
  xdslab import examples/import/dump --anonymize --name shared-cluster`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "write the scenario to this file (default: stdout)")
	f.StringVar(&o.name, "name", kubedump.DefaultName, "the scenario's name (lower-case letters, digits and '-')")
	f.BoolVar(&o.anonymize, "anonymize", false, "hash names, hosts, label values, localities and addresses (stable, same shape)")
	f.StringVar(&o.salt, "salt", "", "key of the --anonymize hashes (default: a fixed key; same salt, same output)")
	return cmd
}

func runImport(stdout, stderr io.Writer, args []string, o importOptions) error {
	if o.salt != "" && !o.anonymize {
		return usageErr(errors.New("import: --salt needs --anonymize"))
	}
	files, err := readDump(args)
	if err != nil {
		return usageErr(err)
	}
	d, err := kubedump.Parse(files)
	if err != nil {
		return usageErr(fmt.Errorf("import: the dump has problems:\n%w", err))
	}
	res, err := kubedump.Convert(d)
	if err != nil {
		return usageErr(fmt.Errorf("import: the dump has problems:\n%w", err))
	}
	for _, line := range res.Summary() {
		fmt.Fprintln(stderr, "import:", line)
	}
	if o.anonymize {
		if err := kubedump.NewAnonymizer(o.salt).Result(res); err != nil {
			return fmt.Errorf("import: anonymize: %w", err)
		}
	}
	out, err := res.Scenario(o.name)
	if err != nil {
		return usageErr(fmt.Errorf("import: %w", err))
	}
	// What import writes must load: a failure here is a dump beyond the scenario limits (about
	// 30,000 services) or a bug in import, not bad input.
	if _, err := scenarios.LoadBytes(cmp.Or(o.out, "imported scenario"), out); err != nil {
		return fmt.Errorf("import: the written scenario does not load (a dump beyond the scenario file limits, or a bug in import: please report it with the dump's shape): %w", err)
	}
	if o.out == "" {
		_, err := stdout.Write(out)
		return err
	}
	if err := os.WriteFile(o.out, out, 0o644); err != nil {
		return usageErr(fmt.Errorf("import: %w", err))
	}
	fmt.Fprintf(stderr, "import: wrote %s (xdslab validate %s; xdslab run %s)\n", o.out, o.out, o.out)
	return nil
}

// bugReportFiles are the YAML files of an extracted istioctl bug-report archive (its
// bug-report/cluster directory) that hold cluster objects: kubectl get all,endpointslices,...,
// the cluster-scoped objects (nodes among them) and the custom resources (Istio's config).
// The names come from istioctl's source (tools/bug-report/pkg/content); Istio does not
// document the layout.
var bugReportFiles = []string{"k8s-resources", "k8s-cluster-resources", "crs"}

// readDump reads the files and directories given (directories recursively, their *.yaml, *.yml
// and *.json files, and the bugReportFiles, in lexical order).
func readDump(args []string) ([]kubedump.File, error) {
	var files []kubedump.File
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		if !st.IsDir() {
			data, err := os.ReadFile(arg)
			if err != nil {
				return nil, fmt.Errorf("import: %w", err)
			}
			files = append(files, kubedump.File{Name: arg, Data: data})
			continue
		}
		n := len(files)
		err = filepath.WalkDir(arg, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := strings.ToLower(filepath.Ext(p))
			if de.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json" && !slices.Contains(bugReportFiles, de.Name())) {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files = append(files, kubedump.File{Name: p, Data: data})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		if len(files) == n {
			return nil, fmt.Errorf("import: %s holds no *.yaml, *.yml or *.json file (nor a bug-report's k8s-resources)", arg)
		}
	}
	return files, nil
}
