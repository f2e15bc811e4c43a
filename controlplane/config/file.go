package config

import (
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
	"github.com/xdslab/xdslab/istioconfig"
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
	// Debounce is how long a full scan (asked for by a file removed or renamed away, a
	// "..data" swap, a directory event) waits for the rest of its burst, so that files moved
	// out together are one change the delete guard sees whole. Default 20ms. Single files do
	// not wait for it: a file renamed into place is read at once, one written in place once it
	// settled (WriteSettle).
	Debounce time.Duration
	// WriteSettle is how long the size and modification time of a file written in place (an
	// fs write event, a create that was not the end of a rename, or a change a rescan found)
	// must hold still before the file is read, so that a slow writer's half-written file is
	// never parsed. A file renamed into place is read at once, without it. Default 100ms.
	WriteSettle time.Duration
	// DisableWatch turns fsnotify off: changes are seen by rescans only.
	DisableWatch bool
	// MaxFileBytes rejects larger files (an error for that file), checked before parsing.
	// Default 16 MiB.
	MaxFileBytes int64
	// DeleteGuard holds mass deletions (a directory emptied for a moment must not empty the
	// mesh); its zero value is the default guard.
	DeleteGuard DeleteGuard
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
	// Now is the clock for status times, debouncing and the delete guard. Default time.Now.
	Now func() time.Time
}

// DeleteGuard configures how a FileSource treats a change that would delete a large share of
// its objects at once: every file moved out of the directory and back, an rm -rf and restore,
// a non-atomic swap. Such a change is held for Settle, the directory is re-read, and what it
// then holds is applied (nothing is deleted if the files came back).
type DeleteGuard struct {
	// Off disables the guard: deletions apply at once.
	Off bool
	// Share is the share of the source's objects (0 < Share ≤ 1) above which the deletions of
	// one load, together with the deletions applied within the last Settle, are held.
	// Default 0.5.
	Share float64
	// Settle is how long a mass deletion is held before the directory is re-read. Default 5s.
	Settle time.Duration
	// Held is incremented once per held mass deletion. Map it to
	// xdslab_cp_config_mass_deletes_held_total. Optional.
	Held Counter
}

// Defaults of FileOptions.
const (
	defaultRescan       = time.Second
	defaultDebounce     = 20 * time.Millisecond
	defaultWriteSettle  = 100 * time.Millisecond
	defaultMaxFileBytes = 16 << 20
	// DefaultDeleteShare and DefaultDeleteSettle are the DeleteGuard defaults.
	DefaultDeleteShare  = 0.5
	DefaultDeleteSettle = 5 * time.Second
)

func (o *FileOptions) setDefaults() {
	if o.Dir != "" {
		o.Dir = filepath.Clean(o.Dir)
	}
	if o.RescanInterval == 0 {
		o.RescanInterval = defaultRescan
	}
	if o.Debounce == 0 {
		o.Debounce = defaultDebounce
	}
	if o.WriteSettle == 0 {
		o.WriteSettle = defaultWriteSettle
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = defaultMaxFileBytes
	}
	if o.DeleteGuard.Share == 0 {
		o.DeleteGuard.Share = DefaultDeleteShare
	}
	if o.DeleteGuard.Settle == 0 {
		o.DeleteGuard.Settle = DefaultDeleteSettle
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
	if o.WriteSettle < 0 {
		return fmt.Errorf("config file source: WriteSettle %v is negative", o.WriteSettle)
	}
	return o.DeleteGuard.Validate()
}

// Validate checks the guard (zero fields mean the defaults).
func (g DeleteGuard) Validate() error {
	if g.Share < 0 || g.Share > 1 {
		return fmt.Errorf("config delete guard: share %v is outside (0, 1]: use e.g. 0.5 to hold a change that deletes more than half of the objects", g.Share)
	}
	if g.Settle < 0 {
		return fmt.Errorf("config delete guard: settle %v is negative: use a duration such as 5s", g.Settle)
	}
	return nil
}

// FileStatus is what /debug/config shows for one file.
type FileStatus struct {
	Path string `json:"path"`
	// Objects are the keys this file defines (its last good parse), in file order.
	Objects []istioconfig.Key `json:"objects"`
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
	status atomic.Pointer[statusSnap]

	// Owned by the Run goroutine.
	w     *fsnotify.Watcher // nil with DisableWatch
	files map[string]*fileState
	// paths are the keys of files, sorted, for publish; nil when a file came or went since.
	paths []string
	defs  map[istioconfig.Key]map[string]struct{} // which files define a key
	// owner names the file whose object this source wrote to the store, by key: the keys are
	// the source's objects in the store (the objects themselves are the store's, not copied
	// here).
	owner    map[istioconfig.Key]string
	errors   uint64
	lastScan time.Time
	watched  map[string]os.FileInfo // directory → the directory the watch was added on
	parent   os.FileInfo            // Dir's parent, when its watch is armed
	lost     map[string]bool        // directories whose watch went with them, re-armed when they return
	// pending holds paths waiting to be read (at once, or once their size settled); the ""
	// entry asks for a full scan once its burst ended.
	pending map[string]*pendingPath
	// holdUntil is when a held mass deletion ends (zero: none held); held is its size.
	holdUntil time.Time
	held      int
	// deleted records the deletions applied within the last DeleteGuard.Settle.
	deleted  []deletion
	isSynced bool
	started  atomic.Bool
	// afterRename: the previous fs event was a Rename (see event).
	afterRename bool
}

type deletion struct {
	at time.Time
	n  int
}

// pendingPath is a path waiting to be read.
type pendingPath struct {
	first, due time.Time
	// written: the file was written in place (a write event, or a change a rescan found): it is
	// read once a stat statAt ago showed the same size and modification time as now.
	written bool
	statted bool
	size    int64
	mtime   time.Time
	statAt  time.Time
}

type fileState struct {
	objs      []*istioconfig.Config // the last good parse
	size      int64
	mtime     time.Time
	lastErr   string
	errTime   time.Time
	lastLoad  time.Time
	conflicts map[istioconfig.Key]string // key → owning file
	// reported holds the skipped documents and warnings of the last good parse that were
	// logged already, so that a reload logs only new ones.
	reported map[string]bool
	// status is the file's part of the published Status, nil when something above changed
	// since it was built: publish rebuilds only those, so that a change to one file of
	// thousands does not list every file's objects again.
	status *FileStatus
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
		defs:    make(map[istioconfig.Key]map[string]struct{}),
		owner:   make(map[istioconfig.Key]string),
		watched: make(map[string]os.FileInfo),
		lost:    make(map[string]bool),
		pending: make(map[string]*pendingPath),
	}
	s.status.Store(&statusSnap{st: Status{Dir: opts.Dir}})
	return s, nil
}

// Synced is closed once the first full scan has been written to the store.
func (s *FileSource) Synced() <-chan struct{} { return s.synced }

// Status returns the latest status. Safe to call from any goroutine.
func (s *FileSource) Status() Status {
	snap := s.status.Load()
	st := snap.st
	st.Files = make([]FileStatus, len(snap.files))
	for i, f := range snap.files {
		st.Files[i] = *f
	}
	return st
}

// statusSnap is a published Status: the files' entries are shared with the Run goroutine's
// cache (immutable once built), so that publishing after a change copies a pointer per file,
// not every file's status; Status copies them for its caller.
type statusSnap struct {
	st    Status // without Files
	files []*FileStatus
}

// Run scans the directory, then follows changes until ctx is done. Call it once.
func (s *FileSource) Run(ctx context.Context) error {
	if s.started.Swap(true) {
		return errors.New("config file source: Run called twice")
	}
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
	)
	if !s.opts.DisableWatch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("config file source: watch %s: %w", s.opts.Dir, err)
		}
		defer w.Close()
		s.w = w
		events, errs = w.Events, w.Errors
	}
	s.load(s.scan(false), false)
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
	arm := func() {
		timer.Stop()
		due := s.holdUntil
		if due.IsZero() {
			for _, d := range s.pending {
				if due.IsZero() || d.due.Before(due) {
					due = d.due
				}
			}
		}
		if !due.IsZero() {
			timer.Reset(max(due.Sub(s.opts.Now()), 0))
		}
	}
	arm() // files that changed while the first scan read them
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			s.event(ev)
			// The rest of a burst that is already queued joins this read.
			for more := true; more; {
				select {
				case ev, ok := <-events:
					if !ok {
						events, more = nil, false
						continue
					}
					s.event(ev)
				default:
					more = false
				}
			}
			if s.dueNow() {
				s.step()
				s.publish()
			}
			arm()
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			s.opts.Logger.Warn("config dir watch error; rescanning", "dir", s.opts.Dir, "err", err)
			s.pending[""] = &pendingPath{first: s.opts.Now(), due: s.opts.Now()}
			arm()
		case <-timer.C:
			s.step()
			s.publish()
			arm()
		case <-tick:
			if s.holdUntil.IsZero() {
				s.rescan()
				s.publish()
				arm()
			}
		}
	}
}

// event records one fs event. fsnotify reports a rename as the old name's Rename directly
// followed by the new name's Create; a Create of a non-empty file that follows a Rename is
// taken as the end of that rename (a file renamed into place is complete and is read at
// once), any other Create as a file being written in place, which must settle first: an
// editor that moves the old file away and creates the new one empty, then writes it, is read
// once it settled.
func (s *FileSource) event(ev fsnotify.Event) {
	renamed := s.afterRename && ev.Op == fsnotify.Create
	if renamed {
		fi, err := os.Stat(ev.Name)
		renamed = err == nil && fi.Size() > 0
	}
	s.afterRename = ev.Has(fsnotify.Rename)
	p, relevant := s.classify(ev)
	if !relevant {
		return
	}
	written := ev.Has(fsnotify.Write) || (ev.Has(fsnotify.Create) && !renamed)
	s.touch(p, written)
}

// touch records an fs event for p ("" for a full scan). A full scan waits Debounce for the
// rest of its burst; a path is due at once, and if written in place, settle (see settled)
// decides when it is read.
func (s *FileSource) touch(p string, written bool) {
	now := s.opts.Now()
	d := s.pending[p]
	if d == nil {
		d = &pendingPath{first: now, due: now}
		s.pending[p] = d
	}
	if p == "" {
		d.due = now.Add(s.opts.Debounce)
		if limit := d.first.Add(10 * s.opts.Debounce); d.due.After(limit) {
			d.due = limit
		}
		return
	}
	d.written = d.written || written
}

// dueNow reports whether step has something to do now (a renamed file, a written file's first
// stat), so that the Run loop handles it without a timer round trip.
func (s *FileSource) dueNow() bool {
	if !s.holdUntil.IsZero() {
		return false
	}
	now := s.opts.Now()
	for _, d := range s.pending {
		if !d.due.After(now) {
			return true
		}
	}
	return false
}

// step handles what is due: the end of a held mass deletion, then the pending paths.
func (s *FileSource) step() {
	now := s.opts.Now()
	if !s.holdUntil.IsZero() {
		if now.Before(s.holdUntil) {
			return
		}
		s.release()
		return
	}
	if d := s.pending[""]; d != nil && d.due.After(now) {
		// A full scan is gathering its burst (files moved away, or renamed within the tree):
		// the paths go with it, so that a rename within the tree is one change.
		return
	}
	var due []string
	full := false
	for p, d := range s.pending {
		if d.due.After(now) {
			continue
		}
		if p == "" {
			full = true
			delete(s.pending, p)
			continue
		}
		if d.written && !s.settled(p, d, now) {
			continue
		}
		delete(s.pending, p)
		due = append(due, p)
	}
	if full {
		// Files still pending (being written, or due later) are left to their own turn.
		due = append(due, s.scan(true)...)
	}
	if len(due) > 0 {
		s.load(due, false)
	}
}

// settled reports whether p, written in place, has kept its size and modification time for
// WriteSettle; if not it takes a new stat and moves d's due time.
func (s *FileSource) settled(p string, d *pendingPath, now time.Time) bool {
	fi, err := os.Stat(p)
	if err != nil {
		return true // gone or unreadable: load says which
	}
	if !d.statted || fi.Size() != d.size || !fi.ModTime().Equal(d.mtime) {
		d.statted, d.size, d.mtime, d.statAt = true, fi.Size(), fi.ModTime(), now
		d.due = now.Add(s.opts.WriteSettle)
		return false
	}
	if settle := d.statAt.Add(s.opts.WriteSettle); now.Before(settle) {
		d.due = settle
		return false
	}
	return true
}

// rescan is the periodic safety net: files gone are loaded at once (through the delete
// guard), files changed wait until they settle, as they may be being written.
func (s *FileSource) rescan() {
	now := s.opts.Now()
	var gone []string
	for _, p := range s.scan(true) {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			gone = append(gone, p)
			continue
		}
		if s.pending[p] == nil {
			s.pending[p] = &pendingPath{first: now, due: now, written: true}
		}
	}
	if len(gone) > 0 {
		s.load(gone, false)
	}
}

// release ends a held mass deletion: the directory is re-read and what it holds now is applied.
func (s *FileSource) release() {
	held := s.held
	s.holdUntil, s.held = time.Time{}, 0
	delete(s.pending, "")
	paths := s.scan(false)
	var written []string
	for _, p := range paths {
		if d := s.pending[p]; d != nil && d.written {
			written = append(written, p) // still being written: it settles first
		}
	}
	paths = slices.DeleteFunc(paths, func(p string) bool { return slices.Contains(written, p) })
	before := len(s.owner)
	s.load(paths, true)
	s.deleted = nil
	s.opts.Logger.Warn("config dir re-read after holding a mass deletion",
		"dir", s.opts.Dir, "held", held, "objectsBefore", before, "objectsNow", len(s.owner))
}

// classify maps an fs event to the path to reload ("" for a full scan) and whether it matters.
// A watched directory removed or moved away loses its watch (and those below it), so that the
// next scan watches it again even if a new directory took its name and inode number.
func (s *FileSource) classify(ev fsnotify.Event) (string, bool) {
	wasWatched := s.watched[ev.Name] != nil
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if ev.Name == filepath.Dir(s.opts.Dir) {
			s.parent = nil // watched again once it is back
		}
		for p := range s.watched {
			if p == ev.Name || strings.HasPrefix(p, ev.Name+string(filepath.Separator)) {
				delete(s.watched, p)
				s.lost[p] = true
			}
		}
	}
	base := filepath.Base(ev.Name)
	switch {
	case ev.Name == s.opts.Dir:
		return "", true // the directory itself went away, moved or came back
	case filepath.Dir(ev.Name) == filepath.Dir(s.opts.Dir) && !s.within(ev.Name):
		return "", false // a sibling in the parent directory
	case strings.HasPrefix(base, ".."):
		// Kubernetes ConfigMap volumes swap a "..data" symlink: everything may have changed,
		// and one full scan reads the new generation whole.
		return "", true
	case ignoredName(base):
		return "", false
	case isConfigFile(base):
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			// A removal is read with the whole tree, so that files moved out together are one
			// change the delete guard sees whole, not one per debounce window.
			return "", true
		}
		return ev.Name, true
	case wasWatched:
		return "", true // a watched directory went away or moved
	case ev.Has(fsnotify.Create):
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			return "", true // a new directory: watch it and read its files
		}
	}
	return "", false
}

// within reports whether p is Dir or below it.
func (s *FileSource) within(p string) bool {
	return p == s.opts.Dir || strings.HasPrefix(p, s.opts.Dir+string(filepath.Separator))
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

// scan walks the tree, watches its directories (again, when one was removed and came back),
// and returns every file that is new, changed (size or modification time) or gone, except
// (with skipPending) those already pending. When the directory cannot be read it returns
// nothing: a directory that vanished for a moment must not wipe the config.
func (s *FileSource) scan(skipPending bool) []string {
	s.lastScan = s.opts.Now()
	seen := make(map[string]bool, len(s.files))
	var changed []string
	dirs := make(map[string]os.FileInfo, len(s.watched))
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
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			s.watch(p, fi)
			dirs[p] = fi
			return nil
		}
		if !isConfigFile(d.Name()) {
			return nil
		}
		fi, err := os.Stat(p) // follows symlinks
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Unreadable (a symlink loop, a permission): the link itself stands for the file,
			// so that the error is logged once, until the link changes.
			if fi, err = os.Lstat(p); err != nil {
				return nil
			}
		} else if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		seen[p] = true
		if st := s.files[p]; st == nil || st.size != fi.Size() || !st.mtime.Equal(fi.ModTime()) {
			changed = append(changed, p)
		}
		return nil
	})
	if err != nil {
		if !s.lost[s.opts.Dir] {
			s.opts.Logger.Error("config dir unreadable; keeping the loaded config", "dir", s.opts.Dir, "err", err)
		}
		// Its watches went with it: each is armed again when the directory comes back.
		for p := range s.watched {
			s.lost[p] = true
		}
		s.watched = make(map[string]os.FileInfo)
		return nil
	}
	for p := range s.watched {
		if dirs[p] == nil {
			s.lost[p] = true
		}
	}
	s.watched = dirs
	s.watchParent()
	for p := range s.files {
		if !seen[p] {
			changed = append(changed, p)
		}
	}
	if skipPending {
		changed = slices.DeleteFunc(changed, func(p string) bool { return s.pending[p] != nil })
	}
	return changed
}

// watchParent watches Dir's parent (again, when it was removed and came back), so that Dir
// itself coming back (after an rm -rf, or a rename into place) is seen at once, not at the
// next rescan.
func (s *FileSource) watchParent() {
	parent := filepath.Dir(s.opts.Dir)
	if s.w == nil || parent == s.opts.Dir {
		return
	}
	fi, err := os.Stat(parent)
	if err != nil || (s.parent != nil && os.SameFile(s.parent, fi)) {
		return
	}
	if s.parent != nil {
		_ = s.w.Remove(parent)
	}
	if err := s.w.Add(parent); err != nil {
		s.opts.Logger.Warn("config dir: cannot watch its parent; a recreated directory is seen by rescans only", "dir", parent, "err", err)
		return
	}
	s.parent = fi
}

// watch adds an fsnotify watch on the directory p unless the same directory is watched
// already; a directory that was removed (or replaced) and came back is watched again.
func (s *FileSource) watch(p string, fi os.FileInfo) {
	if s.w == nil {
		return
	}
	if old := s.watched[p]; old != nil && os.SameFile(old, fi) {
		return
	} else if old != nil {
		_ = s.w.Remove(p) // replaced under the same name: the old watch follows the old directory
	}
	if err := s.w.Add(p); err != nil {
		s.opts.Logger.Warn("config dir: cannot watch; relying on rescans", "dir", p, "err", err)
		return
	}
	if s.lost[p] || s.watched[p] != nil {
		s.opts.Logger.Info("config dir: directory is back; watching it again", "dir", p)
	}
	delete(s.lost, p)
}

// readResult is one path's read and decode, before anything is applied.
type readResult struct {
	path string
	gone bool
	fi   os.FileInfo // nil when the file could not be opened
	dec  Decoded
	err  error
}

// load re-reads the paths and applies the net change to the store in one batch. Unless force
// is set, a batch that would delete more than the guard's share of the objects is held (see
// DeleteGuard) and nothing of it is applied.
func (s *FileSource) load(paths []string, force bool) {
	if len(paths) == 0 {
		return
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	now := s.opts.Now()
	results := make([]readResult, 0, len(paths))
	for _, p := range paths {
		r := readResult{path: p}
		data, fi, err := s.read(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.gone = true
		case errors.Is(err, errChanging):
			// Written while we read it: read it once it settled.
			if s.pending[p] == nil {
				s.pending[p] = &pendingPath{first: now, due: now, written: true}
			}
			continue
		case err != nil:
			r.fi, r.err = fi, err
			if fi == nil {
				r.fi, _ = os.Lstat(p)
			}
		default:
			r.fi = fi
			r.dec, r.err = s.opts.Decoder.DecodeAll(p, data)
		}
		results = append(results, r)
	}
	if !force && !s.opts.DeleteGuard.Off {
		if n := s.deletions(results); n > 0 && s.massive(n, now) {
			s.hold(n, now)
			return
		}
	}
	s.apply(results, now)
}

// deletions counts the objects in the store that results would delete.
func (s *FileSource) deletions(results []readResult) int {
	batch := make(map[string]bool, len(results))
	defined := make(map[istioconfig.Key]bool)
	for _, r := range results {
		batch[r.path] = true
		objs := r.dec.Configs
		if r.err != nil && s.files[r.path] != nil {
			objs = s.files[r.path].objs // a rejected file keeps its objects
		}
		if r.gone {
			objs = nil
		}
		for _, c := range objs {
			defined[c.Key()] = true
		}
	}
	n := 0
	for _, r := range results {
		st := s.files[r.path]
		if st == nil {
			continue
		}
	objects:
		for _, c := range st.objs {
			k := c.Key()
			if defined[k] || s.owner[k] != r.path {
				continue
			}
			for q := range s.defs[k] {
				if !batch[q] {
					continue objects // another file takes over
				}
			}
			defined[k] = true // counted once
			n++
		}
	}
	return n
}

// massive reports whether n deletions now, with those applied within the last Settle, exceed
// the guard's share of the objects held before them.
func (s *FileSource) massive(n int, now time.Time) bool {
	cut := now.Add(-s.opts.DeleteGuard.Settle)
	s.deleted = slices.DeleteFunc(s.deleted, func(d deletion) bool { return d.at.Before(cut) })
	recent := 0
	for _, d := range s.deleted {
		recent += d.n
	}
	base := len(s.owner) + recent
	return float64(recent+n) > s.opts.DeleteGuard.Share*float64(base)
}

// hold starts holding a mass deletion: nothing is read or applied until Settle has passed,
// then release re-reads the directory.
func (s *FileSource) hold(n int, now time.Time) {
	s.holdUntil, s.held = now.Add(s.opts.DeleteGuard.Settle), n
	s.opts.Logger.Warn("config dir: a change would delete a large share of the objects; holding it, then re-reading the directory",
		"dir", s.opts.Dir, "deletes", n, "objects", len(s.owner), "share", s.opts.DeleteGuard.Share,
		"settle", s.opts.DeleteGuard.Settle, "hint", "replace config atomically (rename into place, or a ..data symlink swap); --config-delete-guard=false turns this off")
	if s.opts.DeleteGuard.Held != nil {
		s.opts.DeleteGuard.Held.Inc()
	}
}

// apply records the results and writes the net change to the store in one Apply.
func (s *FileSource) apply(results []readResult, now time.Time) {
	affected := make(map[istioconfig.Key]bool)
	var rejected []rejection
	for _, r := range results {
		p, st := r.path, s.files[r.path]
		if r.gone {
			if st != nil {
				n := len(st.objs) // before setObjects forgets them
				s.setObjects(p, st, nil, affected)
				delete(s.files, p)
				s.paths = nil
				s.opts.Logger.Info("config file removed", "file", p, "objects", n)
			}
			continue
		}
		if st == nil {
			st = &fileState{}
			s.files[p] = st
			s.paths = nil
		}
		if r.fi != nil {
			st.size, st.mtime = r.fi.Size(), r.fi.ModTime()
		}
		if r.err != nil {
			if st.lastErr == r.err.Error() && r.fi != nil && isReadError(r.err) {
				continue // the same unreadable file again: logged and counted once
			}
			st.lastErr, st.errTime, st.status = r.err.Error(), now, nil
			rejected = append(rejected, rejection{path: p, err: r.err, kept: len(st.objs)})
			continue
		}
		st.lastErr, st.errTime, st.lastLoad, st.status = "", time.Time{}, now, nil
		s.report(p, st, r.dec)
		s.setObjects(p, st, r.dec.Configs, affected)
	}
	upserts, deletes, conflicts := s.reconcile(affected)
	if len(deletes) > 0 {
		s.deleted = append(s.deleted, deletion{at: now, n: len(deletes)})
	}
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

// errChanging says a file changed while it was read.
var errChanging = errors.New("file changed while it was read")

// isReadError reports whether err is an error opening or reading a file (not a parse error).
func isReadError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
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
	data, err := readLimited(p, f, fi.Size(), s.opts.MaxFileBytes)
	if err != nil {
		return nil, fi, err
	}
	if after, err := f.Stat(); err != nil || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		return nil, fi, errChanging
	}
	return data, fi, nil
}

// readLimited reads a file of the given size (from its stat) of at most max bytes: the limit
// is checked on the stat before anything is read, at most max+1 bytes are read, and a read
// that does not match the stat's size (a file still being written) is errChanging, never
// parsed.
func readLimited(p string, r io.Reader, size, max int64) ([]byte, error) {
	tooLarge := func(n int64) error {
		return fmt.Errorf("%s: %d bytes is larger than the %d-byte limit: split the file", p, n, max)
	}
	if size > max {
		return nil, tooLarge(size)
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != size {
		return nil, errChanging // it grew or shrank: read it again once it settled
	}
	return data, nil
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

// setObjects replaces a file's objects in the definition index.
func (s *FileSource) setObjects(p string, st *fileState, objs []*istioconfig.Config, affected map[istioconfig.Key]bool) {
	for _, c := range st.objs {
		k := c.Key()
		affected[k] = true
		delete(st.conflicts, k)
		delete(s.defs[k], p)
		if len(s.defs[k]) == 0 {
			delete(s.defs, k)
		}
	}
	st.objs, st.status = objs, nil
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
func (s *FileSource) reconcile(affected map[istioconfig.Key]bool) (upserts []*istioconfig.Config, deletes []istioconfig.Key, newConflicts map[string][]string) {
	keys := make([]istioconfig.Key, 0, len(affected))
	for k := range affected {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b istioconfig.Key) int { return strings.Compare(a.String(), b.String()) })
	newConflicts = make(map[string][]string)
	for _, k := range keys {
		definers := s.defs[k]
		owner := s.owner[k]
		var have *istioconfig.Config // what this source wrote to the store for k, if anything
		if owner != "" {
			have, _ = s.store.Get(k)
		}
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
			if old, had := st.conflicts[k]; had != (p != owner) || had && old != owner {
				st.status = nil // its conflicts change
			}
			if p == owner {
				delete(st.conflicts, k)
				continue
			}
			if st.conflicts == nil {
				st.conflicts = make(map[istioconfig.Key]string)
			}
			if _, had := st.conflicts[k]; !had {
				newConflicts[p] = append(newConflicts[p], fmt.Sprintf("%s %s/%s is already defined in %s", k.Kind, k.Namespace, k.Name, owner))
			}
			st.conflicts[k] = owner
		}
		var want *istioconfig.Config
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
		switch {
		case want == nil && have != nil:
			deletes = append(deletes, k)
		case want != nil && !Equal(have, want):
			upserts = append(upserts, want)
		}
	}
	return upserts, deletes, newConflicts
}

// publish stores an immutable Status for readers on other goroutines.
func (s *FileSource) publish() {
	snap := &statusSnap{st: Status{Dir: s.opts.Dir, Objects: len(s.owner), Errors: s.errors, LastScan: s.lastScan},
		files: make([]*FileStatus, 0, len(s.files))}
	snap.st.Synced = s.isSynced
	if s.paths == nil {
		s.paths = slices.Sorted(maps.Keys(s.files))
	}
	for _, p := range s.paths {
		f := s.files[p]
		if f.status == nil {
			fs := FileStatus{Path: p, LastError: f.lastErr, LastErrorTime: f.errTime, LastLoad: f.lastLoad,
				Objects: make([]istioconfig.Key, len(f.objs))}
			for i, c := range f.objs {
				fs.Objects[i] = c.Key()
			}
			for k, owner := range f.conflicts {
				fs.Conflicts = append(fs.Conflicts, fmt.Sprintf("%s %s/%s is already defined in %s: this copy is ignored", k.Kind, k.Namespace, k.Name, owner))
			}
			slices.Sort(fs.Conflicts)
			f.status = &fs
		}
		snap.files = append(snap.files, f.status)
	}
	s.status.Store(snap)
}
