package config

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdslab/xdslab/internal/syncbuf"
	"github.com/xdslab/xdslab/istioconfig"
	networking "istio.io/api/networking/v1alpha3"
)

// chanCounter implements Counter by signalling a channel, so tests wait on error counts.
type chanCounter chan struct{}

func (c chanCounter) Inc() { c <- struct{}{} }

type harness struct {
	t      *testing.T
	dir    string
	store  *Memory
	src    *FileSource
	errs   chanCounter
	logs   *syncbuf.Buffer
	sentry int
}

func startSource(t *testing.T, dir string, opts FileOptions) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, store: NewMemory(MemoryOptions{}), errs: make(chanCounter, 100), logs: &syncbuf.Buffer{}}
	opts.Dir = dir
	opts.Errors = h.errs
	if opts.DeleteGuard.Settle == 0 {
		opts.DeleteGuard.Settle = 200 * time.Millisecond // the default 5s would slow tests that delete
	}
	opts.Logger = slog.New(slog.NewTextHandler(h.logs, nil))
	src, err := NewFileSource(h.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.src = src
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = h.store.Run(ctx) }()
	go func() {
		defer wg.Done()
		if err := src.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-src.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced within 10s")
	}
	return h
}

func seYAML(name string, hosts ...string) string {
	return fmt.Sprintf("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: %s\nspec:\n  hosts: [%s]\n", name, strings.Join(hosts, ", "))
}

func docs(ds ...string) string { return strings.Join(ds, "---\n") }

// write replaces a file the way atomic writers do: a temp file outside the watched tree,
// then a rename into it.
func (h *harness) write(rel, content string) {
	h.t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(h.dir), "tmp-*")
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := tmp.WriteString(content); err != nil {
		h.t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		h.t.Fatal(err)
	}
	p := filepath.Join(h.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		h.t.Fatal(err)
	}
}

// events returns the events up to a sentinel object written after everything before it: a
// test asserts that nothing else happened (no delete of a surviving object) without waiting
// for a time.
func (h *harness) events() string {
	h.t.Helper()
	h.sentry++
	name := fmt.Sprintf("zz-sentinel-%d", h.sentry)
	h.write(name+".yaml", seYAML(name, "sentinel"))
	var evs []Event
	for {
		ev := nextEvent(h.t, h.store.Events())
		if ev.Key().Name == name {
			return describe(evs)
		}
		evs = append(evs, ev)
	}
}

func (h *harness) next(n int) string {
	h.t.Helper()
	var evs []Event
	for range n {
		evs = append(evs, nextEvent(h.t, h.store.Events()))
	}
	return describe(evs)
}

func (h *harness) waitError() {
	h.t.Helper()
	select {
	case <-h.errs:
	case <-time.After(10 * time.Second):
		h.t.Fatal("no file error counted within 10s")
	}
}

func (h *harness) file(rel string) FileStatus {
	h.t.Helper()
	p := filepath.Join(h.dir, rel)
	for _, f := range h.src.Status().Files {
		if f.Path == p {
			return f
		}
	}
	h.t.Fatalf("no status for %s in %+v", p, h.src.Status())
	return FileStatus{}
}

func seKey(name string) istioconfig.Key { return key(istioconfig.KindServiceEntry, "default", name) }

func hostsOf(t *testing.T, st Store, name string) string {
	t.Helper()
	c, ok := st.Get(seKey(name))
	if !ok {
		return "<absent>"
	}
	return strings.Join(c.Spec.(*networking.ServiceEntry).Hosts, ",")
}

func TestFileSourceLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(docs(seYAML("x", "x1"), seYAML("yy", "y1"))), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "b.yml"), []byte(seYAML("z", "z1")), 0o644)
	h := startSource(t, dir, FileOptions{})

	// Initial load: both files, the subdirectory too.
	if got, want := h.next(3), "add ServiceEntry/default/x[x1]; add ServiceEntry/default/yy[y1]; add ServiceEntry/default/z[z1]"; got != want {
		t.Fatalf("initial events:\n got %s\nwant %s", got, want)
	}
	if st := h.src.Status(); !st.Synced || len(st.Files) != 2 || st.Objects != 3 || st.Errors != 0 {
		t.Fatalf("status after sync: %+v", st)
	}
	if c, _ := h.store.Get(seKey("z")); c.Source != filepath.Join(dir, "sub", "b.yml") {
		t.Errorf("Source = %q", c.Source)
	}

	// A malformed file keeps its objects and reports the line.
	h.write("a.yaml", "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: x\n   namespace: bad\n")
	h.waitError()
	if got := hostsOf(t, h.store, "x") + " " + hostsOf(t, h.store, "yy"); got != "x1 y1" {
		t.Errorf("after a bad write the objects are %q, want the previous ones", got)
	}
	fs := h.file("a.yaml")
	if want := filepath.Join(dir, "a.yaml") + ":5: invalid YAML"; !strings.HasPrefix(fs.LastError, want) {
		t.Errorf("LastError = %q, want prefix %q", fs.LastError, want)
	}
	if len(fs.Objects) != 2 || fs.LastErrorTime.IsZero() {
		t.Errorf("status of the bad file: %+v", fs)
	}
	if js, err := json.Marshal(h.src.Status()); err != nil || !strings.Contains(string(js), `"lastError":"`+filepath.Join(dir, "a.yaml")+`:5: invalid YAML`) {
		t.Errorf("status JSON for /debug/config: %s %v", js, err)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "line=5") || !strings.Contains(logs, "a.yaml") {
		t.Errorf("log lacks file and line:\n%s", logs)
	}
	if got := h.events(); got != "" {
		t.Errorf("a bad file changed the store: %s", got)
	}

	// Fixed again: only the object that changed is updated.
	h.write("a.yaml", docs(seYAML("x", "x2"), seYAML("yy", "y1")))
	if got, want := h.events(), "update ServiceEntry/default/x[x2]"; got != want {
		t.Errorf("after the fix:\n got %s\nwant %s", got, want)
	}
	if fs := h.file("a.yaml"); fs.LastError != "" || fs.LastLoad.IsZero() {
		t.Errorf("error not cleared: %+v", fs)
	}

	// A rename into the directory is one update: y changes, w is new, x is untouched (no
	// delete and re-add of x or y).
	h.write("a.yaml", docs(seYAML("x", "x2"), seYAML("yy", "y2"), seYAML("w", "w1")))
	if got, want := h.events(), "add ServiceEntry/default/w[w1]; update ServiceEntry/default/yy[y2]"; got != want {
		t.Errorf("after the rename:\n got %s\nwant %s", got, want)
	}

	// Deleting a file deletes its objects.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if got, want := h.events(), "delete ServiceEntry/default/w; delete ServiceEntry/default/x; delete ServiceEntry/default/yy"; got != want {
		t.Errorf("after the delete:\n got %s\nwant %s", got, want)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "a.yaml objects=3") {
		t.Errorf("the removal's log does not count the 3 objects it deleted:\n%s", logs)
	}
	for _, f := range h.src.Status().Files {
		if strings.HasSuffix(f.Path, "a.yaml") {
			t.Errorf("deleted file still in status: %+v", f)
		}
	}

	// A directory created later is watched too.
	h.write("new/deeper/c.json", `{"apiVersion":"networking.istio.io/v1","kind":"ServiceEntry","metadata":{"name":"c"},"spec":{"hosts":["c1"]}}`)
	if got, want := h.events(), "add ServiceEntry/default/c[c1]"; got != want {
		t.Errorf("file in a new directory:\n got %s\nwant %s", got, want)
	}
}

func TestFileSourceRenameWithinDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(docs(seYAML("x", "x1"), seYAML("yy", "y1"))), 0o644)
	h := startSource(t, dir, FileOptions{})
	h.next(2)
	// Moving the objects to another file within the tree only changes their Source.
	if err := os.Rename(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	got := h.events()
	// The remove of a.yaml and the create of b.yaml arrive together and are one batch, or, if
	// fsnotify splits them across debounce windows, a delete and an add: both are correct,
	// but the object must end up from b.yaml.
	if got != "update ServiceEntry/default/x[x1]; update ServiceEntry/default/yy[y1]" {
		t.Logf("rename across debounce windows: %s", got)
	}
	if c, _ := h.store.Get(seKey("x")); c == nil || c.Source != filepath.Join(dir, "b.yaml") {
		t.Errorf("x after the rename: %+v", c)
	}
}

func TestFileSourceConflict(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(seYAML("x", "from-b")), 0o644)
	h := startSource(t, dir, FileOptions{})
	h.next(1)

	// a.yaml sorts first but b.yaml defined x first: b wins, a is reported.
	h.write("a.yaml", docs(seYAML("x", "from-a"), seYAML("q", "q1")))
	h.waitError()
	if got, want := h.events(), "add ServiceEntry/default/q[q1]"; got != want {
		t.Errorf("conflict:\n got %s\nwant %s", got, want)
	}
	if hosts := hostsOf(t, h.store, "x"); hosts != "from-b" {
		t.Errorf("x = %s, want the first definition", hosts)
	}
	fs := h.file("a.yaml")
	if len(fs.Conflicts) != 1 || !strings.Contains(fs.Conflicts[0], "ServiceEntry default/x is already defined in "+filepath.Join(dir, "b.yaml")) {
		t.Errorf("conflicts = %q", fs.Conflicts)
	}
	if h.src.Status().Errors != 1 {
		t.Errorf("errors = %d", h.src.Status().Errors)
	}

	// The owner drops x: a's copy takes over.
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if got, want := h.events(), "update ServiceEntry/default/x[from-a]"; got != want {
		t.Errorf("takeover:\n got %s\nwant %s", got, want)
	}
	if fs := h.file("a.yaml"); len(fs.Conflicts) != 0 {
		t.Errorf("conflicts after takeover = %q", fs.Conflicts)
	}
}

func TestFileSourceStartupConflictLexicalOrder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(seYAML("x", "from-b")), 0o644)
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(seYAML("x", "from-a")), 0o644)
	h := startSource(t, dir, FileOptions{})
	h.waitError()
	if got := h.next(1); got != "add ServiceEntry/default/x[from-a]" {
		t.Errorf("got %s", got)
	}
	if fs := h.file("b.yaml"); len(fs.Conflicts) != 1 {
		t.Errorf("b conflicts = %q", fs.Conflicts)
	}
}

func TestFileSourceIgnoredAndRejected(t *testing.T) {
	dir := t.TempDir()
	h := startSource(t, dir, FileOptions{})
	for _, name := range []string{".hidden.yaml", "a.yaml~", "#a.yaml#", "notes.txt", ".git/x.yaml"} {
		h.write(name, seYAML("ignored", "i"))
	}
	if got := h.events(); got != "" {
		t.Errorf("ignored files produced events: %s", got)
	}
	// One object twice in one file: the file is rejected.
	h.write("dup.yaml", docs(seYAML("d", "one"), seYAML("d", "two")))
	h.waitError()
	if got := h.events(); got != "" {
		t.Errorf("a rejected file produced events: %s", got)
	}
	if fs := h.file("dup.yaml"); !strings.Contains(fs.LastError, "defined twice in this file") {
		t.Errorf("LastError = %q", fs.LastError)
	}
}

// TestFileSourceRescan runs without fsnotify: the periodic rescan alone must see changes.
func TestFileSourceRescan(t *testing.T) {
	dir := t.TempDir()
	h := startSource(t, dir, FileOptions{DisableWatch: true, RescanInterval: 5 * time.Millisecond})
	h.write("a.yaml", seYAML("x", "x1"))
	if got := h.next(1); got != "add ServiceEntry/default/x[x1]" {
		t.Fatalf("got %s", got)
	}
	h.write("a.yaml", seYAML("x", "x22"))
	if got := h.next(1); got != "update ServiceEntry/default/x[x22]" {
		t.Fatalf("got %s", got)
	}
	os.Remove(filepath.Join(dir, "a.yaml"))
	if got := h.next(1); got != "delete ServiceEntry/default/x" {
		t.Fatalf("got %s", got)
	}
}

func TestFileOptionsValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		dir, want string
	}{
		{"", "Dir is required"},
		{filepath.Join(t.TempDir(), "missing"), "create the directory"},
		{file, "not a directory"},
	} {
		if _, err := NewFileSource(NewMemory(MemoryOptions{}), FileOptions{Dir: tc.dir}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dir %q: err = %v, want %q", tc.dir, err, tc.want)
		}
	}
}

// BenchmarkFileSourceLoad measures the initial load of a directory of 1,000 ServiceEntry
// files: read, decode, validate, diff and write to the store.
func BenchmarkFileSourceLoad(b *testing.B) {
	const files = 1000
	dir := b.TempDir()
	for i := range files {
		y := fmt.Sprintf("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: svc-%d\n  namespace: ns-%d\n  labels: {app: svc-%d}\n"+
			"spec:\n  hosts: [svc-%d.ns-%d.svc.cluster.local]\n  location: MESH_INTERNAL\n  resolution: STATIC\n  ports:\n  - {number: 80, name: http, protocol: HTTP}\n"+
			"  - {number: 9090, name: grpc, protocol: GRPC}\n  endpoints:\n  - {address: 10.0.%d.1, labels: {version: v1}}\n  - {address: 10.0.%d.2, labels: {version: v2}}\n",
			i, i%10, i, i, i%10, i%250, i%250)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("svc-%04d.yaml", i)), []byte(y), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		st := NewMemory(MemoryOptions{})
		src, err := NewFileSource(st, FileOptions{Dir: dir, DisableWatch: true, RescanInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = src.Run(ctx) }()
		<-src.Synced()
		cancel()
		<-done
		if st.Len() != files {
			b.Fatalf("loaded %d objects", st.Len())
		}
	}
	b.ReportMetric(float64(files*b.N)/time.Since(start).Seconds(), "files/s")
}

// countCounter counts Inc calls.
type countCounter struct {
	mu sync.Mutex
	n  int
}

func (c *countCounter) Inc()     { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *countCounter) get() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// TestFileSourceSemanticRules: an object that breaks an Istio rule rejects its file like a
// parse error (counted, logged with file and line, previous objects kept); a document of
// another kind is skipped, logged and counted once however often the file is reloaded; a
// warning keeps the object.
func TestFileSourceSemanticRules(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {}\n"
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(docs(seYAML("x", "x1"), svc)), 0o644)
	skipped := &countCounter{}
	h := startSource(t, dir, FileOptions{Skipped: skipped})
	if got := h.next(1); got != "add ServiceEntry/default/x[x1]" {
		t.Fatalf("initial events: %s", got)
	}
	if skipped.get() != 1 {
		t.Errorf("skipped = %d after the first load, want 1", skipped.get())
	}

	// A ServiceEntry without hosts, as istiod rejects it: the file keeps x1.
	h.write("a.yaml", docs(seYAML("x", "x2"), svc, "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: nohosts\nspec:\n  ports: [{number: 80, name: http}]\n"))
	h.waitError()
	if got := hostsOf(t, h.store, "x"); got != "x1" {
		t.Errorf("after an invalid object x is %q, want the previous x1", got)
	}
	fs := h.file("a.yaml")
	want := filepath.Join(dir, "a.yaml") + ":17: ServiceEntry default/nohosts: spec.hosts: is required"
	if !strings.HasPrefix(fs.LastError, want) {
		t.Errorf("LastError = %q, want prefix %q", fs.LastError, want)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "line=17") {
		t.Errorf("log lacks the line:\n%s", logs)
	}
	if got := h.events(); got != "" {
		t.Errorf("an invalid object changed the store: %s", got)
	}

	// Fixed, with a warning: loaded; the Service is still skipped but not counted again.
	partial := seYAML("partial", "'*l.internal'")
	h.write("a.yaml", docs(seYAML("x", "x2"), svc, partial))
	if got, want := h.events(), "add ServiceEntry/default/partial[*l.internal]; update ServiceEntry/default/x[x2]"; got != want {
		t.Errorf("after the fix:\n got %s\nwant %s", got, want)
	}
	if skipped.get() != 1 {
		t.Errorf("skipped = %d after reloads of the same Service, want 1", skipped.get())
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "config document skipped"); n != 1 {
		t.Errorf("the skipped Service was logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "accepted with a warning") || !strings.Contains(logs, "partial wildcard") {
		t.Errorf("no warning logged:\n%s", logs)
	}
	if st := h.src.Status(); st.Errors != 1 {
		t.Errorf("errors = %d, want 1", st.Errors)
	}
}

// BenchmarkFileSourcePublish measures publishing the status after one file of 3,000 changed
// (what every change costs the source's goroutine; /debug/config reads it).
func BenchmarkFileSourcePublish(b *testing.B) {
	const files = 3000
	s := &FileSource{opts: FileOptions{Dir: "/mesh"}, files: map[string]*fileState{}, owner: map[istioconfig.Key]string{}}
	for i := range files {
		p := fmt.Sprintf("/mesh/svc-%04d.yaml", i)
		s.files[p] = &fileState{objs: []*istioconfig.Config{{Meta: istioconfig.Meta{Kind: "ServiceEntry", Name: fmt.Sprintf("svc-%d", i), Namespace: "ns-0"}}}}
	}
	s.publish()
	for b.Loop() {
		s.files["/mesh/svc-0042.yaml"].status = nil // the one file that changed
		s.publish()
	}
	if n := len(s.Status().Files); n != files {
		b.Fatalf("status lists %d files, want %d", n, files)
	}
}
