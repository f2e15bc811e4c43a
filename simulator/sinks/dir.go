package sinks

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xdslab/xdslab/internal/atomicfile"
	"github.com/xdslab/xdslab/istioconfig"
	"github.com/xdslab/xdslab/simulator"
)

// DirOptions configures a Dir sink.
type DirOptions struct {
	// Dir is created if missing.
	Dir string
	// APIVersion of the written objects (default networking.istio.io/v1alpha3; v1 and v1beta1
	// take the same specs).
	APIVersion string
	// GroupRouting puts a service's VirtualService and DestinationRule into its file beside the
	// ServiceEntry and WorkloadEntries; by default each gets its own file.
	GroupRouting bool
	// Clean removes the YAML files already in Dir at Init; without it Init refuses a directory
	// that holds YAML files (a control plane watching it would load them).
	Clean bool
}

// Dir writes Istio YAML into a directory that a control plane watches: one multi-document
// file per service (<namespace>.<service>.yaml: its ServiceEntry and WorkloadEntries, and with
// GroupRouting its VirtualService and DestinationRule), one file per other object
// (<namespace>.<kind>.<name>.yaml). Files are written atomically (a temporary file in the same
// directory, renamed over the old one); a file whose last object is deleted is removed. The
// output is what `kubectl apply -f` accepts.
type Dir struct {
	opts DirOptions
	objs map[istioconfig.Key]dirDoc
	// files maps a file name to the keys it holds.
	files map[string]map[istioconfig.Key]struct{}
	// unsynced holds the files whose last write or removal failed (the directory vanished
	// for a moment): every later Apply retries them, so the directory catches up once it is
	// back.
	unsynced map[string]bool
	// Writes and Removes count file operations (for benchmarks and progress).
	Writes, Removes int
}

type dirDoc struct {
	file string
	yaml []byte
}

// NewDir returns a sink writing into opts.Dir.
func NewDir(opts DirOptions) (*Dir, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("dir sink: no directory given (--sink-dir)")
	}
	if opts.APIVersion == "" {
		opts.APIVersion = istioconfig.DefaultAPIVersion
	}
	return &Dir{opts: opts, objs: map[istioconfig.Key]dirDoc{}, files: map[string]map[istioconfig.Key]struct{}{}, unsynced: map[string]bool{}}, nil
}

func isYAMLName(n string) bool { return strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") }

// Init creates the directory, checks (or cleans) it and writes every initial object.
func (d *Dir) Init(ctx context.Context, initial []istioconfig.Config) error {
	if err := os.MkdirAll(d.opts.Dir, 0o755); err != nil {
		return fmt.Errorf("dir sink: %w", err)
	}
	ents, err := os.ReadDir(d.opts.Dir)
	if err != nil {
		return fmt.Errorf("dir sink: %w", err)
	}
	var stale []string
	for _, e := range ents {
		if e.Type().IsRegular() && (isYAMLName(e.Name()) || strings.Contains(e.Name(), ".tmp-")) {
			stale = append(stale, e.Name())
		}
	}
	if len(stale) > 0 && !d.opts.Clean {
		return fmt.Errorf("dir sink: %s already holds %d YAML files (%s, …): choose an empty directory or pass --clean to remove them", d.opts.Dir, len(stale), stale[0])
	}
	for _, n := range stale {
		if err := os.Remove(filepath.Join(d.opts.Dir, n)); err != nil {
			return fmt.Errorf("dir sink: clean: %w", err)
		}
	}
	return d.apply(ctx, initial, nil)
}

// Apply rewrites the files the event touches, and the files an earlier Apply failed to write.
// On an error the files not written are retried by the next Apply.
func (d *Dir) Apply(ctx context.Context, ev simulator.Event) error {
	if err := d.apply(ctx, ev.Upserts, ev.Deletes); err != nil {
		return fmt.Errorf("dir sink: event %d: %w", ev.ID, err)
	}
	return nil
}

// Close does nothing: every Apply leaves the directory complete.
func (d *Dir) Close() error { return nil }

func (d *Dir) fileFor(c istioconfig.Config) string {
	svc := c.Labels[simulator.ServiceLabel]
	grouped := svc != "" && (c.Kind == istioconfig.KindServiceEntry || c.Kind == istioconfig.KindWorkloadEntry ||
		(d.opts.GroupRouting && (c.Kind == istioconfig.KindVirtualService || c.Kind == istioconfig.KindDestinationRule)))
	if grouped {
		return fmt.Sprintf("%s.%s.yaml", c.Namespace, svc)
	}
	return fmt.Sprintf("%s.%s.%s.yaml", c.Namespace, strings.ToLower(string(c.Kind)), c.Name)
}

func (d *Dir) apply(ctx context.Context, upserts []istioconfig.Config, deletes []istioconfig.Key) error {
	dirty := map[string]bool{}
	drop := func(k istioconfig.Key) {
		if doc, ok := d.objs[k]; ok {
			delete(d.objs, k)
			delete(d.files[doc.file], k)
			dirty[doc.file] = true
		}
	}
	for _, k := range deletes {
		drop(k)
	}
	for _, c := range upserts {
		y, err := istioconfig.RenderYAML(c, d.opts.APIVersion)
		if err != nil {
			return err
		}
		drop(c.Key())
		f := d.fileFor(c)
		d.objs[c.Key()] = dirDoc{file: f, yaml: y}
		if d.files[f] == nil {
			d.files[f] = map[istioconfig.Key]struct{}{}
		}
		d.files[f][c.Key()] = struct{}{}
		dirty[f] = true
	}
	for f := range d.unsynced {
		dirty[f] = true
	}
	names := make([]string, 0, len(dirty))
	for f := range dirty {
		names = append(names, f)
	}
	slices.Sort(names)
	for i, f := range names {
		err := ctx.Err()
		if err == nil {
			err = d.sync(f)
		}
		if err != nil {
			for _, rest := range names[i:] {
				d.unsynced[rest] = true
			}
			return err
		}
		delete(d.unsynced, f)
	}
	return nil
}

// sync writes file f as the objects say, or removes it when it holds none.
func (d *Dir) sync(f string) error {
	if len(d.files[f]) == 0 {
		if err := os.Remove(filepath.Join(d.opts.Dir, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
		delete(d.files, f)
		d.Removes++
		return nil
	}
	if err := atomicfile.WriteBytes(filepath.Join(d.opts.Dir, f), d.render(f)); err != nil {
		return err
	}
	d.Writes++
	return nil
}

var kindOrder = map[istioconfig.Kind]int{
	istioconfig.KindServiceEntry: 0, istioconfig.KindWorkloadEntry: 1, istioconfig.KindVirtualService: 2,
	istioconfig.KindDestinationRule: 3, istioconfig.KindSidecar: 4, istioconfig.KindGateway: 5,
}

func (d *Dir) render(f string) []byte {
	keys := make([]istioconfig.Key, 0, len(d.files[f]))
	for k := range d.files[f] {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b istioconfig.Key) int {
		return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var buf bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(d.objs[k].yaml)
	}
	return buf.Bytes()
}
