package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionModules are the dependencies whose versions decide what the lab speaks and measures.
var versionModules = []string{
	"github.com/envoyproxy/go-control-plane",
	"github.com/envoyproxy/go-control-plane/envoy",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
	"istio.io/api",
	"k8s.io/client-go",
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print xdslab's version, VCS commit, Go version and the Envoy/gRPC/Istio module versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				return fmt.Errorf("version: this binary carries no build information")
			}
			writeVersion(cmd.OutOrStdout(), bi)
			return nil
		},
	}
}

// toolVersion is the short version that goes into summaries: the module version, or the VCS
// commit (with "+dirty" when the tree had changes) of a build from a checkout.
func toolVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return shortVersion(bi)
}

func shortVersion(bi *debug.BuildInfo) string {
	set := buildSettings(bi)
	v := bi.Main.Version
	if rev := set["vcs.revision"]; rev != "" && (v == "" || v == "(devel)") {
		v = rev[:min(len(rev), 12)]
		if set["vcs.modified"] == "true" {
			v += "+dirty"
		}
	}
	return v
}

func buildSettings(bi *debug.BuildInfo) map[string]string {
	m := map[string]string{}
	for _, s := range bi.Settings {
		m[s.Key] = s.Value
	}
	return m
}

// writeVersion writes the build information: xdslab's module version, the VCS commit, time and
// whether the tree was modified, the Go version and build tags, and the versions of the
// modules in versionModules this binary links.
func writeVersion(w io.Writer, bi *debug.BuildInfo) {
	set := buildSettings(bi)
	main := bi.Main.Version
	if main == "" {
		main = "(unknown)"
	}
	fmt.Fprintf(w, "xdslab %s\n", main)
	if rev := set["vcs.revision"]; rev != "" {
		line := "  commit   " + rev
		if t := set["vcs.time"]; t != "" {
			line += " (" + t + ")"
		}
		if set["vcs.modified"] == "true" {
			line += ", with uncommitted changes"
		}
		fmt.Fprintln(w, line)
	} else {
		fmt.Fprintln(w, "  commit   unknown (built outside a git checkout, or with -buildvcs=false)")
	}
	fmt.Fprintf(w, "  go       %s\n", bi.GoVersion)
	if tags := set["-tags"]; tags != "" {
		fmt.Fprintf(w, "  tags     %s\n", tags)
	}
	deps := map[string]string{}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v += " => " + strings.TrimSpace(d.Replace.Path+" "+d.Replace.Version)
		}
		deps[d.Path] = v
	}
	for _, m := range versionModules {
		if v, ok := deps[m]; ok {
			fmt.Fprintf(w, "  %s %s\n", m, v)
		}
	}
}
