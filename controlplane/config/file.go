package config

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/xdslab/xdslab/controlplane/model"
)

// Counter counts events; a prometheus.Counter satisfies it.
type Counter interface{ Inc() }

// FileOptions configure a FileSource.
type FileOptions struct {
	// Dir is the directory to watch, with its subdirectories (required).
	Dir string
	// RescanInterval is how often the whole tree is re-read (by size and modification time) as
	// a safety net for events fsnotify misses. Default 1s; negative disables rescans.
	RescanInterval time.Duration
	// Debounce is how long a file must be quiet after an fs event before it is read, so that a
	// writer's burst (write, chmod, rename) costs one read. Default 20ms. A file written
	// continuously is read at least every 10×Debounce.
	Debounce time.Duration
	// DisableWatch turns fsnotify off: changes are seen by rescans only.
	DisableWatch bool
	// MaxFileBytes rejects larger files (an error for that file). Default 16 MiB.
	MaxFileBytes int64
	// Decoder decodes the files (its DefaultNamespace applies).
	Decoder Decoder
	// Logger receives load errors with file and line. Default: discard.
	Logger *slog.Logger
	// Errors is incremented once per rejected file load (a parse error, or an object already
	// defined by another file). Map it to xdslab_cp_config_file_errors_total; the per-file
	// detail is in Status. Optional.
	Errors Counter
	// Skipped is incremented once per skipped document (a kind or apiVersion the control plane
	// does not read, such as a Kubernetes Service) the first time a file shows it; the document
	// is logged once at the same time. Map it to xdslab_cp_config_objects_skipped_total.
	// Optional.
	Skipped Counter
	// Now is the clock for status times and debouncing. Default time.Now.
	Now func() time.Time
}

const (
	defaultRescan       = time.Second
	defaultDebounce     = 20 * time.Millisecond
	defaultMaxFileBytes = 16 << 20
)

func (o *FileOptions) setDefaults() {
	if o.RescanInterval == 0 {
		o.RescanInterval = defaultRescan
	}
	if o.Debounce == 0 {
		o.Debounce = defaultDebounce
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = defaultMaxFileBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate checks the options (after defaults).
func (o FileOptions) Validate() error {
	if o.Dir == "" {
		return errors.New("config file source: Dir is required: pass the directory of Istio YAML to watch")
	}
	fi, err := os.Stat(o.Dir)
	if err != nil {
		return fmt.Errorf("config file source: %w: create the directory or pass an existing one", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("config file source: %s is not a directory", o.Dir)
	}
	if o.Debounce < 0 {
		return fmt.Errorf("config file source: Debounce %v is negative", o.Debounce)
	}
	return nil
}

// FileStatus is what /debug/config shows for one file.
type FileStatus struct {
	Path string `json:"path"`
	// Objects are the keys this file defines (its last good parse), in file order.
	Objects []model.ConfigKey `json:"objects"`
	// LastError is the error of the last load, "" when it succeeded.
	LastError     string    `json:"lastError,omitempty"`
	LastErrorTime time.Time `json:"lastErrorTime,omitzero"`
	// LastLoad is when the file was last loaded successfully.
	LastLoad time.Time `json:"lastLoad,omitzero"`
	// Conflicts lists objects of this file that another file defined first; they are ignored.
	Conflicts []string `json:"conflicts,omitempty"`
}

// Status is a FileSource's state, for /debug/config.
type Status struct {
	Dir   string       `json:"dir"`
	Files []FileStatus `json:"files"` // sorted by path
	// Objects is the number of objects the source has written to the store.
	Objects int `json:"objects"`
	// Errors is the number of rejected file loads so far.
	Errors   uint64    `json:"errors"`
	LastScan time.Time `json:"lastScan,omitzero"`
	Synced   bool      `json:"synced"`
}

// FileSource keeps a Memory store in step with a directory tree of Istio YAML/JSON files
// (*.yaml, *.yml, *.json; names starting with '.' or '#' or ending in '~', and directories
// starting with '.', are ignored). See the package doc for the rules.
type FileSource struct {
	opts   FileOptions
	store  *Memory
	synced chan struct{}
	status atomic.Pointer[Status]

	// Owned by the Run goroutine.
	files    map[string]*fileState
	defs     map[model.ConfigKey]map[string]struct{} // which files define a key
	owner    map[model.ConfigKey]string              // the file whose object is in the store
	applied  map[model.ConfigKey]*model.Config       // what this source wrote to the store
	errors   uint64
	lastScan time.Time
	watched  map[string]bool
	isSynced bool
	started  atomic.Bool
}

type fileState struct {
	objs      []*model.Config // the last good parse
	size      int64
	mtime     time.Time
	lastErr   string
	errTime   time.Time
	lastLoad  time.Time
	conflicts map[model.ConfigKey]string // key → owning file
	// reported holds the skipped documents and warnings of the last good parse that were
	// logged already, so that a reload logs only new ones.
	reported map[string]bool
}

// NewFileSource returns a source that writes into store. Run starts it.
func NewFileSource(store *Memory, opts FileOptions) (*FileSource, error) {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, errors.New("config file source: store is nil")
	}
	s := &FileSource{
		opts:    opts,
		store:   store,
		synced:  make(chan struct{}),
		files:   make(map[string]*fileState),
		defs:    make(map[model.ConfigKey]map[string]struct{}),
		owner:   make(map[model.ConfigKey]string),
		applied: make(map[model.ConfigKey]*model.Config),
		watched: make(map[string]bool),
	}
	s.status.Store(&Status{Dir: opts.Dir, Files: []FileStatus{}})
	return s, nil
}

// Synced is closed once the first full scan has been written to the store.
func (s *FileSource) Synced() <-chan struct{} { return s.synced }

// Status returns the latest status. Safe to call from any goroutine.
func (s *FileSource) Status() Status { return *s.status.Load() }

// Run scans the directory, then follows changes until ctx is done. Call it once.
func (s *FileSource) Run(ctx context.Context) error {
	if s.started.Swap(true) {
		return errors.New("config file source: Run called twice")
	}
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
		w      *fsnotify.Watcher
	)
	if !s.opts.DisableWatch {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			return fmt.Errorf("config file source: watch %s: %w", s.opts.Dir, err)
		}
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	s.scan(w)
	s.isSynced = true
	s.publish()
	close(s.synced)

	var tick <-chan time.Time
	if s.opts.RescanInterval > 0 {
		t := time.NewTicker(s.opts.RescanInterval)
		defer t.Stop()
		tick = t.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// pending holds paths waiting for their burst to end; the "" entry asks for a full scan.
	pending := make(map[string]*debounced)
	arm := func() {
		if len(pending) == 0 {
			return
		}
		var due time.Time
		for _, d := range pending {
			if due.IsZero() || d.due.Before(due) {
				due = d.due
			}
		}
		timer.Reset(max(due.Sub(s.opts.Now()), 0))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if p, relevant := s.classify(ev); relevant {
				now := s.opts.Now()
				d := pending[p]
				if d == nil {
					d = &debounced{first: now}
					pending[p] = d
				}
				d.due = now.Add(s.opts.Debounce)
				if limit := d.first.Add(10 * s.opts.Debounce); d.due.After(limit) {
					d.due = limit
				}
				arm()
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			s.opts.Logger.Warn("config dir watch error; rescanning", "dir", s.opts.Dir, "err", err)
			pending[""] = &debounced{first: s.opts.Now(), due: s.opts.Now()}
			arm()
		case <-timer.C:
			now := s.opts.Now()
			var due []string
			full := false
			for p, d := range pending {
				if d.due.After(now) {
					continue
				}
				delete(pending, p)
				if p == "" {
					full = true
				} else {
					due = append(due, p)
				}
			}
			if full {
				s.scan(w, due...)
			} else if len(due) > 0 {
				s.load(due)
			}
			s.publish()
			arm()
		case <-tick:
			s.scan(w)
			s.publish()
		}
	}
}

type debounced struct{ first, due time.Time }

// classify maps an fs event to the path to reload ("" for a full scan) and whether it matters.
func (s *FileSource) classify(ev fsnotify.Event) (string, bool) {
	base := filepath.Base(ev.Name)
	switch {
	case strings.HasPrefix(base, ".."):
		// Kubernetes ConfigMap volumes swap a "..data" symlink: everything may have changed.
		return "", true
	case ignoredName(base):
		return "", false
	case isConfigFile(base):
		return ev.Name, true
	case s.watched[ev.Name]:
		return "", true // a watched directory went away or moved
	case ev.Has(fsnotify.Create):
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			return "", true // a new directory: watch it and read its files
		}
	}
	return "", false
}

func ignoredName(base string) bool {
	return strings.HasPrefix(base, ".") || strings.HasPrefix(base, "#") || strings.HasSuffix(base, "~")
}

func isConfigFile(base string) bool {
	if ignoredName(base) {
		return false
	}
	switch strings.ToLower(filepath.Ext(base)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// scan walks the tree, watches its directories, and loads every file that is new, changed
// (size or modification time) or gone, and the extra paths.
func (s *FileSource) scan(w *fsnotify.Watcher, extra ...string) {
	s.lastScan = s.opts.Now()
	seen := make(map[string]bool, len(s.files))
	changed := extra
	dirs := make(map[string]bool, len(s.watched))
	err := filepath.WalkDir(s.opts.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == s.opts.Dir {
				return err
			}
			s.opts.Logger.Warn("config dir: cannot read", "path", p, "err", err)
			return nil
		}
		if d.IsDir() {
			if p != s.opts.Dir && ignoredName(d.Name()) {
				return filepath.SkipDir
			}
			// Watch before reading the directory's files, so that no change falls between.
			if w != nil && !s.watched[p] {
				if err := w.Add(p); err != nil {
					s.opts.Logger.Warn("config dir: cannot watch; relying on rescans", "dir", p, "err", err)
					return nil
				}
			}
			dirs[p] = true
			return nil
		}
		if !isConfigFile(d.Name()) {
			return nil
		}
		fi, err := os.Stat(p) // follows symlinks
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		seen[p] = true
		if st := s.files[p]; st == nil || st.size != fi.Size() || !st.mtime.Equal(fi.ModTime()) {
			changed = append(changed, p)
		}
		return nil
	})
	if err != nil {
		// Keep what we have: a directory that vanished for a moment must not wipe the config.
		s.opts.Logger.Error("config dir unreadable; keeping the loaded config", "dir", s.opts.Dir, "err", err)
		return
	}
	s.watched = dirs
	for p := range s.files {
		if !seen[p] {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		s.load(changed)
	}
}

// load re-reads the paths and applies the net change to the store in one batch.
func (s *FileSource) load(paths []string) {
	slices.Sort(paths)
	paths = slices.Compact(paths)
	now := s.opts.Now()
	affected := make(map[model.ConfigKey]bool)
	var rejected []rejection
	for _, p := range paths {
		st := s.files[p]
		data, fi, err := s.read(p)
		if errors.Is(err, fs.ErrNotExist) {
			if st != nil {
				s.setObjects(p, st, nil, affected)
				delete(s.files, p)
				s.opts.Logger.Info("config file removed", "file", p, "objects", len(st.objs))
			}
			continue
		}
		if st == nil {
			st = &fileState{}
			s.files[p] = st
		}
		if fi != nil {
			st.size, st.mtime = fi.Size(), fi.ModTime()
		}
		var dec Decoded
		if err == nil {
			dec, err = s.opts.Decoder.DecodeAll(p, data)
		}
		if err == nil {
			err = duplicates(p, dec.Configs)
		}
		if err != nil {
			st.lastErr, st.errTime = err.Error(), now
			rejected = append(rejected, rejection{path: p, err: err, kept: len(st.objs)})
			continue
		}
		st.lastErr, st.errTime, st.lastLoad = "", time.Time{}, now
		s.report(p, st, dec)
		s.setObjects(p, st, dec.Configs, affected)
	}
	upserts, deletes, conflicts := s.reconcile(affected)
	s.errors += uint64(len(rejected) + len(conflicts))
	// Status first, then counters and logs, then the store: whoever sees an event or a count
	// finds a Status at least as new.
	s.publish()
	for _, r := range rejected {
		s.reject(r)
	}
	for _, p := range slices.Sorted(maps.Keys(conflicts)) {
		s.opts.Logger.Error("config file defines objects another file defined first; the first definition wins",
			"file", p, "conflicts", strings.Join(conflicts[p], "; "))
		if s.opts.Errors != nil {
			s.opts.Errors.Inc()
		}
	}
	if len(upserts) == 0 && len(deletes) == 0 {
		return
	}
	if err := s.store.Apply(upserts, deletes); err != nil {
		// Decode validated every object already, so this is a bug, not bad input.
		s.opts.Logger.Error("config file source: store rejected a batch", "err", err)
	}
}

type rejection struct {
	path string
	err  error
	kept int
}

func (s *FileSource) read(p string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() > s.opts.MaxFileBytes {
		return nil, fi, fmt.Errorf("%s: %d bytes is larger than the %d-byte limit: split the file", p, fi.Size(), s.opts.MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, s.opts.MaxFileBytes+1))
	return data, fi, err
}

func (s *FileSource) reject(r rejection) {
	line := 0
	var de *DecodeError
	if errors.As(r.err, &de) {
		line = de.Line
	}
	s.opts.Logger.Error("config file rejected; keeping its previous objects",
		"file", r.path, "line", line, "kept", r.kept, "err", r.err)
	if s.opts.Errors != nil {
		s.opts.Errors.Inc()
	}
}

// report logs the skipped documents and warnings of a good parse that the file's previous
// parse did not have, and counts the new skipped documents.
func (s *FileSource) report(p string, st *fileState, dec Decoded) {
	now := make(map[string]bool, len(dec.Skipped)+len(dec.Warnings))
	for _, sk := range dec.Skipped {
		key := "skip " + sk.APIVersion + " " + sk.Kind + " " + sk.Name
		now[key] = true
		if st.reported[key] {
			continue
		}
		s.opts.Logger.Warn("config document skipped: not a kind the control plane reads",
			"file", p, "line", sk.Line, "apiVersion", sk.APIVersion, "kind", sk.Kind, "name", sk.Name, "hint", sk.Hint)
		if s.opts.Skipped != nil {
			s.opts.Skipped.Inc()
		}
	}
	for _, w := range dec.Warnings {
		// The message without the line: moving an object within its file is not news.
		key := "warn " + w.Object + " " + w.Msg
		now[key] = true
		if !st.reported[key] {
			s.opts.Logger.Warn("config object accepted with a warning", "file", p, "line", w.Line, "object", w.Object, "warning", w.Msg)
		}
	}
	st.reported = now
}

// duplicates rejects a file that defines one object twice.
func duplicates(p string, objs []*model.Config) error {
	seen := make(map[model.ConfigKey]bool, len(objs))
	for _, c := range objs {
		if seen[c.Key()] {
			return fmt.Errorf("%s: %s %s/%s is defined twice in this file: remove one copy", p, c.Kind, c.Namespace, c.Name)
		}
		seen[c.Key()] = true
	}
	return nil
}

// setObjects replaces a file's objects in the definition index.
func (s *FileSource) setObjects(p string, st *fileState, objs []*model.Config, affected map[model.ConfigKey]bool) {
	for _, c := range st.objs {
		k := c.Key()
		affected[k] = true
		delete(st.conflicts, k)
		delete(s.defs[k], p)
		if len(s.defs[k]) == 0 {
			delete(s.defs, k)
		}
	}
	st.objs = objs
	for _, c := range objs {
		k := c.Key()
		affected[k] = true
		if s.defs[k] == nil {
			s.defs[k] = make(map[string]struct{}, 1)
		}
		s.defs[k][p] = struct{}{}
	}
}

// reconcile picks the owner of each affected key (the current owner while it still defines
// it, else the first path in lexical order), records conflicts, and writes the difference
// between what the store holds and what the owners define.
func (s *FileSource) reconcile(affected map[model.ConfigKey]bool) (upserts []*model.Config, deletes []model.ConfigKey, newConflicts map[string][]string) {
	keys := make([]model.ConfigKey, 0, len(affected))
	for k := range affected {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b model.ConfigKey) int { return strings.Compare(a.String(), b.String()) })
	newConflicts = make(map[string][]string)
	for _, k := range keys {
		definers := s.defs[k]
		owner := s.owner[k]
		if _, ok := definers[owner]; !ok {
			owner = ""
			for p := range definers {
				if owner == "" || p < owner {
					owner = p
				}
			}
		}
		for p := range definers {
			st := s.files[p]
			if p == owner {
				delete(st.conflicts, k)
				continue
			}
			if st.conflicts == nil {
				st.conflicts = make(map[model.ConfigKey]string)
			}
			if _, had := st.conflicts[k]; !had {
				newConflicts[p] = append(newConflicts[p], fmt.Sprintf("%s %s/%s is already defined in %s", k.Kind, k.Namespace, k.Name, owner))
			}
			st.conflicts[k] = owner
		}
		var want *model.Config
		if owner != "" {
			s.owner[k] = owner
			for _, c := range s.files[owner].objs {
				if c.Key() == k {
					want = c
					break
				}
			}
		} else {
			delete(s.owner, k)
		}
		have := s.applied[k]
		switch {
		case want == nil && have != nil:
			deletes = append(deletes, k)
			delete(s.applied, k)
		case want != nil && !Equal(have, want):
			upserts = append(upserts, want)
			s.applied[k] = want
		}
	}
	return upserts, deletes, newConflicts
}

// publish stores an immutable Status for readers on other goroutines.
func (s *FileSource) publish() {
	st := &Status{Dir: s.opts.Dir, Files: make([]FileStatus, 0, len(s.files)), Objects: len(s.applied),
		Errors: s.errors, LastScan: s.lastScan}
	st.Synced = s.isSynced
	for p, f := range s.files {
		fs := FileStatus{Path: p, LastError: f.lastErr, LastErrorTime: f.errTime, LastLoad: f.lastLoad,
			Objects: make([]model.ConfigKey, len(f.objs))}
		for i, c := range f.objs {
			fs.Objects[i] = c.Key()
		}
		for k, owner := range f.conflicts {
			fs.Conflicts = append(fs.Conflicts, fmt.Sprintf("%s %s/%s is already defined in %s: this copy is ignored", k.Kind, k.Namespace, k.Name, owner))
		}
		slices.Sort(fs.Conflicts)
		st.Files = append(st.Files, fs)
	}
	slices.SortFunc(st.Files, func(a, b FileStatus) int { return cmp.Compare(a.Path, b.Path) })
	s.status.Store(st)
}
