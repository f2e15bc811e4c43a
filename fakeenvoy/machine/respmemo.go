package machine

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/xdslab/xdslab/probe"
)

// A SotW response's resources are the same bytes for every client the push reaches (the
// control plane encodes a resource once and sends it to all; only the response's version and
// nonce differ), and the codec reads them into the same items for each: the same names, hashes
// and shared decoded resources. respMemo keeps, per run of resource bytes (the response's
// resources field, contiguous as every control plane writes it), the items the codec read from
// them, so that the next client that receives those bytes hashes and compares them once instead
// of reading every resource: for a full config of 2,000 resources, one pass over its bytes in
// place of 2,000 hashes, table lookups and comparisons. Every such client applies the run's own
// items, which nothing changes (what applying them led to is each client's itemState).
//
// Only runs whose every resource is shared (decoded once, in the Interner) are kept, so the
// memo holds nothing the Interner does not. A run the reading client had to decode some of is
// new to the fleet: it is kept on trial, in a short list of its own, and proven (moved among
// the others) when a second client reads it. The trial list bounds what runs only one client
// receives (a sidecar's own listeners on its address) can push out: they leave the trial list,
// never the proven runs. Keeping a new run at once, not only once a second client had read it
// whole, matters when a fleet connects together: its clients read the same full config at
// about the same time, and every one that finished reading before the second did read the MB
// resource by resource (345–381 of the 1,000 clients of some push-1k runs, at connect; see
// also readRunPieces).
//
// A hit is only a hit when the bytes are equal (the memo keeps a copy), so a hash collision,
// or runs that share a sampled key (runHash), cost a read, never wrong items. The memo is
// bounded (the respMemoMaxRuns newest proven runs, at most respMemoMaxBytes of
// their bytes, and respMemoTrialRuns and respMemoTrialBytes on trial, oldest first out): a run
// is worth keeping while a push reaches the fleet, not after, and it keeps the resources it
// points to alive until it leaves.
type respMemo struct {
	mu sync.Mutex
	// m holds the runs by key. A key is a sample of a run's bytes (runHash), so runs of the
	// same length can share one: each slice is replaced, never changed, so that get reads it
	// outside the lock.
	m map[respKey][]*respEntry
	// proven and trial hold the kept runs, oldest first: those a second client has read, and
	// those only one has.
	proven, trial runQueue
	// reading holds, by key, the runs a client is reading resource by resource now because
	// the memo had none (lead): each is closed once that read ends.
	reading map[respKey]chan struct{}
}

// respKey finds a run: the hash of a sample of its bytes (runHash), their length and the
// client's validation mode (part of what a shared resource is).
type respKey struct {
	hash uint64
	n    int
	mode checkMode
}

type respEntry struct {
	memo   *respMemo // the memo that keeps it (copies go back there)
	key    respKey
	region []byte
	items  []item
	// onTrial: kept on trial (respMemo.trial), not yet read by a second client. Set under
	// memo.mu; read without it by findFunc, which then takes the lock to prove the run.
	onTrial atomic.Bool
	// distinct: no two items share a name (found once, so that a client need not check it
	// again with a map of its own; see Resources.distinct).
	distinct bool
	// covered and within cache covers' and namesIn's answers for the last set asked about.
	covered, within answerCache
	// fresh is what applying the run to an empty state leads to (Machine.apply).
	fresh freshApply
	// clusters are the bootstrap clusters the items' secrets name (decoded.secretClusters of
	// every item, unique), found once.
	clustersOnce sync.Once
	clusters     []string
	// touched is the touched list the last client that applied the run to a state it held
	// reported (see shareTouched).
	touched atomic.Pointer[[]probe.Touched]
}

// shareTouched returns a list equal to touched (a client's scratch) for the client to report:
// the run's when equal, else a copy, which the run keeps. A push reaches clients that hold the
// same shared copies of what it changes, so each would report an equal list (the same names,
// the same previous messages); the hooks only read it (probe.ResponseInfo.Touched). The list
// kept holds the previous copies alive while the run is in the memo.
func (e *respEntry) shareTouched(touched []probe.Touched) []probe.Touched {
	if p := e.touched.Load(); p != nil && sameTouched(*p, touched) {
		return *p
	}
	l := slices.Clone(touched)
	e.touched.Store(&l)
	return l
}

// sameTouched reports whether a and b name the same resources with the same previous copies
// (the same messages, not equal ones), in the same order.
func sameTouched(a, b []probe.Touched) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Prev != b[i].Prev {
			return false
		}
	}
	return true
}

// freshApply is the result of applying a run, every resource accepted, to a client's empty
// state of its type: the shared set it leads to (follows: the set derives its references, as
// a type with a dependent one does) and the response's touched list (every resource, none held
// before). It is the same for every client that does so, and a fleet's clients all do when
// they connect: each would build the same edits of thousands of entries, hash and compare them
// to find the set another built, and write the same list. The set is held weakly: the clients
// keep it alive, the memo does not.
type freshApply struct {
	mu      sync.Mutex
	set     weak.Pointer[resSet]
	follows bool
	touched []probe.Touched
}

// freshApplied returns the set and touched list a client applying e to an empty state ends
// with, when one did before (ok false: none, or its set is gone).
func (e *respEntry) freshApplied(follows bool) (set *resSet, touched []probe.Touched, ok bool) {
	f := &e.fresh
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.touched == nil || f.follows != follows {
		return nil, nil, false
	}
	if set = f.set.Value(); set == nil {
		return nil, nil, false
	}
	return set, f.touched, true
}

// keepFreshApplied records what applying e to an empty state led to: set and touched, which
// the client's response reports and must not change from now on (hooks only read it).
func (e *respEntry) keepFreshApplied(follows bool, set *resSet, touched []probe.Touched) {
	if len(touched) == 0 {
		return
	}
	f := &e.fresh
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set, f.follows, f.touched = weak.Make(set), follows, touched
}

// secretClusters returns the bootstrap clusters, other than the control plane's, that the
// run's resources name as secret sources.
func (e *respEntry) secretClusters() []string {
	e.clustersOnce.Do(func() {
		for i := range e.items {
			for _, c := range e.items[i].hit.secretClusters { // a kept run's items are all shared
				if !slices.Contains(e.clusters, c) {
					e.clusters = append(e.clusters, c)
				}
			}
		}
	})
	return e.clusters
}

// covers reports whether the run names every reference of set (a shared set whose
// references were derived: resSet.refs), found once per run and set for the clients that hold
// both: an EDS response that names every assignment the clusters reference warms every
// warming cluster.
func (e *respEntry) covers(set *resSet) bool {
	if set == nil || !set.hasRefs {
		return false
	}
	return e.covered.answer(set.id, func() bool {
		named := make(map[string]struct{}, len(e.items))
		for i := range e.items {
			named[e.items[i].name] = struct{}{}
		}
		for _, r := range set.refs {
			if _, in := named[r]; !in {
				return false
			}
		}
		return true
	})
}

// namesIn reports whether every name of the run is one of set's references (sorted), found
// once per run and set: a client whose subscription is those references (resSet.refs, as
// followUp subscribes) then need not look up each resource's name in it.
func (e *respEntry) namesIn(set *resSet) bool {
	if set == nil || !set.hasRefs {
		return false
	}
	return e.within.answer(set.id, func() bool {
		for i := range e.items {
			if _, ok := slices.BinarySearch(set.refs, e.items[i].name); !ok {
				return false
			}
		}
		return true
	})
}

// answerCache keeps one answer about a shared set (by id; 0: none) for the clients that ask
// the same question about the same set.
type answerCache struct {
	mu sync.Mutex
	id uint64
	ok bool
}

func (c *answerCache) answer(id uint64, compute func() bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != id {
		c.id, c.ok = id, compute()
	}
	return c.ok
}

const (
	respMemoMaxRuns    = 256
	respMemoMaxBytes   = 32 << 20
	respMemoTrialRuns  = 16
	respMemoTrialBytes = 8 << 20
)

// lead makes the caller the client that reads runs of key k resource by resource, when none
// does; it then returns done, to call once its read has ended (the run kept, or found not
// worth keeping). When another client reads one, lead waits for that read to end and returns
// nil: the caller then looks for the run in the memo again.
//
// A fleet that connects together receives the same full config in many clients at once, and
// its first reader takes a while (decoding every resource, the first time: about 0.1 s per
// MB here). Every client that received it meanwhile would read it resource by resource too,
// and decode what the first had not reached yet alongside it: 119 of the 1,000 large responses
// of BenchmarkFleetHeapPerClient were read so. Waiting costs them nothing they would not have
// spent, and the first reader has the cores.
// A run of the same key but other bytes (a sampled hash shared) is read after the wait.
func (r *respMemo) lead(k respKey) (done func()) {
	r.mu.Lock()
	if ch, ok := r.reading[k]; ok {
		r.mu.Unlock()
		<-ch
		return nil
	}
	if r.reading == nil {
		r.reading = make(map[respKey]chan struct{})
	}
	ch := make(chan struct{})
	r.reading[k] = ch
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.reading, k)
		r.mu.Unlock()
		close(ch)
	}
}

// get returns the items read from region and the run that holds them, nil when none are
// kept. The items are the run's own, shared by every client that gets them: read-only.
func (r *respMemo) get(k respKey, region []byte) (items []item, e *respEntry) {
	if e = r.find(k, region); e == nil {
		return nil, nil
	}
	return e.items, e
}

// put keeps the items read from region when every one of them is shared: on trial when the
// read that gave them decoded some of them (fresh), proven otherwise.
func (r *respMemo) put(k respKey, region []byte, items []item, fresh bool) {
	r.putFunc(k, func(kept []byte) bool { return bytes.Equal(kept, region) }, func() []byte { return bytes.Clone(region) }, items, fresh)
}

// putFunc is put for a run of k.n bytes that same tells apart and clone returns a copy of (its
// own, for the memo to keep): a run in pieces is copied once, and only when it is kept.
func (r *respMemo) putFunc(k respKey, same func(kept []byte) bool, clone func() []byte, items []item, fresh bool) {
	if k.n > respMemoMaxBytes/4 || (fresh && k.n > respMemoTrialBytes/2) {
		return // a run that large waits for a second client before it is kept
	}
	for i := range items {
		if items[i].hit == nil {
			return
		}
	}
	// Clients that read the same run before any of them kept it all get here: only the
	// first copies it (a MB for a full config, once per client otherwise). One that finds it
	// on trial proves it (findFunc).
	if r.findFunc(k, same) != nil {
		return
	}
	e := &respEntry{memo: r, key: k, region: clone(), items: slices.Clone(items), distinct: distinctNames(items)}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.m[k]
	for _, o := range kept {
		if same(o.region) {
			r.proveLocked(o) // kept meanwhile by another client: this is a second read
			return
		}
	}
	if r.m == nil {
		r.m = make(map[respKey][]*respEntry)
	}
	r.m[k] = append(slices.Clip(kept), e)
	if fresh {
		e.onTrial.Store(true)
		r.trial.push(e, respMemoTrialRuns, respMemoTrialBytes, r.forgetLocked)
		return
	}
	r.proven.push(e, respMemoMaxRuns, respMemoMaxBytes, r.forgetLocked)
}

// proveLocked moves e, if still on trial, among the proven runs; r.mu is held.
func (r *respMemo) proveLocked(e *respEntry) {
	if !e.onTrial.Load() || !r.trial.remove(e) {
		return // proven already, or left the trial list and the memo
	}
	e.onTrial.Store(false)
	r.proven.push(e, respMemoMaxRuns, respMemoMaxBytes, r.forgetLocked)
}

// runQueue is a list of kept runs, oldest first, and their bytes.
type runQueue struct {
	runs  []*respEntry
	bytes int
}

// push appends e, then lets the oldest runs go (gone) while there are more than maxRuns or
// more than maxBytes of them.
func (q *runQueue) push(e *respEntry, maxRuns, maxBytes int, gone func(*respEntry)) {
	q.runs = append(q.runs, e)
	q.bytes += len(e.region)
	for (q.bytes > maxBytes || len(q.runs) > maxRuns) && len(q.runs) > 0 {
		old := q.runs[0]
		q.runs[0] = nil
		q.runs = q.runs[1:]
		q.bytes -= len(old.region)
		gone(old)
	}
}

// remove takes e out of the list, and reports whether it was there.
func (q *runQueue) remove(e *respEntry) bool {
	i := slices.Index(q.runs, e)
	if i < 0 {
		return false
	}
	q.runs = slices.Delete(q.runs, i, i+1)
	q.bytes -= len(e.region)
	return true
}

// forgetLocked takes old out of r.m; r.mu is held. The slice under its key is replaced, not
// changed (findFunc reads it outside the lock).
func (r *respMemo) forgetLocked(old *respEntry) {
	rest := slices.DeleteFunc(slices.Clone(r.m[old.key]), func(o *respEntry) bool { return o == old })
	if len(rest) == 0 {
		delete(r.m, old.key)
	} else {
		r.m[old.key] = rest
	}
}

// find returns the kept run whose bytes are region's, nil when none is. Runs that share a key
// are told apart by their bytes; the comparison is made outside the lock.
func (r *respMemo) find(k respKey, region []byte) *respEntry {
	return r.findFunc(k, func(kept []byte) bool { return bytes.Equal(kept, region) })
}

// findFunc returns the run kept under k whose bytes same says are the ones looked for; a run on
// trial that is found is proven (a second client read it).
func (r *respMemo) findFunc(k respKey, same func(kept []byte) bool) *respEntry {
	r.mu.Lock()
	es := r.m[k]
	r.mu.Unlock()
	for _, e := range es {
		if same(e.region) {
			if e.onTrial.Load() {
				r.mu.Lock()
				r.proveLocked(e)
				r.mu.Unlock()
			}
			return e
		}
	}
	return nil
}

// Runs longer than runWhole are hashed by sample for the memo's key: their first and last
// runEnds bytes and runWindow bytes every runStride between them. A run is a push's resources,
// the same bytes for every client it reaches, and get compares the bytes anyway: hashing all
// of a MB costs each client several times that comparison, while runs that a change leaves the
// same length and the same in every sampled byte only share a key.
const (
	runWhole  = 16 << 10
	runEnds   = 1 << 10
	runWindow = 64
	runStride = 4 << 10
)

// runHash is the memo's hash of a run's bytes (hashSeed): of all of them up to runWhole, else
// of a sample.
func runHash(region []byte) uint64 {
	if len(region) <= runWhole {
		return maphash.Bytes(hashSeed, region)
	}
	var h maphash.Hash
	h.SetSeed(hashSeed)
	sampleRun(len(region), func(from, to int) { h.Write(region[from:to]) })
	return h.Sum64()
}

// sampleRun calls write with the ranges of a run of n (> runWhole) bytes that its hash reads.
func sampleRun(n int, write func(from, to int)) {
	write(0, runEnds)
	tail := n - runEnds
	for off := runEnds; off+runWindow <= tail; off += runStride {
		write(off, off+runWindow)
	}
	write(tail, n)
}

// distinctNames reports whether no two items share a name.
func distinctNames(items []item) bool {
	seen := make(map[string]struct{}, len(items))
	for i := range items {
		if _, dup := seen[items[i].name]; dup {
			return false
		}
		seen[items[i].name] = struct{}{}
	}
	return true
}
